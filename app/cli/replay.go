package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

func runReplay(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := configFlags(fs)
	all := fs.Bool("all", false, "replay every dead delivery")
	ids, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	return replay(opts, *all, ids, stdout, stderr)
}

// replay asks the running server to replay dead deliveries.
func replay(opts *configOptions, all bool, ids []string, stdout, stderr io.Writer) int {
	if all == (len(ids) > 0) {
		fmt.Fprintln(stderr, "hookbox replay: give -all or delivery ids, not both or neither")
		return 2
	}
	paths := []string{"/dead-letters/replay"}
	if !all {
		paths = paths[:0]
		for _, id := range ids {
			if _, err := strconv.ParseUint(id, 10, 64); err != nil {
				fmt.Fprintf(stderr, "hookbox replay: %q is not a delivery id\n", id)
				return 2
			}
			paths = append(paths, "/deliveries/"+id+"/replay")
		}
	}
	api, err := newAdminAPI("replay", opts, 30*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	code := 0
	for _, p := range paths {
		resp, err := api.do(http.MethodPost, p)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintln(stdout, readAnswer(resp.Body))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			code = 1
		}
	}
	return code
}
