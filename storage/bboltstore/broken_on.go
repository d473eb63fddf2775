//go:build broken_nosync || broken_earlyack

package bboltstore

import (
	"fmt"
	"os"
)

// refuseBrokenBuild stops a deliberately broken build (broken_off.go)
// unless the test that built it asked for it by name.
func refuseBrokenBuild(tag string) {
	if os.Getenv("HOOKBOX_BROKEN_BUILD") != tag {
		fmt.Fprintf(os.Stderr, "hookbox: this is a deliberately broken test build (-tags %s) that loses data on a power cut; refusing to run\n", tag)
		os.Exit(70)
	}
	fmt.Fprintf(os.Stderr, "hookbox: running the deliberately broken test build %s\n", tag)
}
