//go:build !unix

package rules_test

import "time"

// cpuTime is not measured here: the benchmarks report ns/op only.
func cpuTime() time.Duration { return 0 }
