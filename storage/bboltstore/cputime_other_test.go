//go:build !unix

package bboltstore

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
