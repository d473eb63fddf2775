package apptest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MappedRSS is the resident size of the maps of the file at path that the
// smaps file names (/proc/self/smaps, or /proc/PID/smaps of another
// process): how much of a data file a memory test finds in RAM. Linux
// only; an error when smaps cannot be read.
func MappedRSS(smaps, path string) (int64, error) {
	raw, err := os.ReadFile(smaps)
	if err != nil {
		return 0, err
	}
	var n int64
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"): // a map's header line
			in = len(f) == 6 && f[5] == path
		case in && len(f) == 3 && f[0] == "Rss:":
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", smaps, err)
			}
			n += kb << 10
		}
	}
	return n, nil
}
