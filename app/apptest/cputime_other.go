//go:build !unix

package apptest

import "time"

// CPUTime is not measured here: 0, and the benchmarks report ns/op only.
func CPUTime() time.Duration { return 0 }
