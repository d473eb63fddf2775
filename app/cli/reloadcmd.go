package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"hookbox/app"
)

// The reload command: the running server reads its config file again,
// through its admin API, and says what changed or why it refused.

const reloadHelp = "Asks the running server to read its config file again and put it in force, as\n" +
	"SIGHUP (systemctl reload hookbox, kill -HUP) does, and prints what changed: the\n" +
	"sources, destinations and routes added, removed and changed, and the keys that wait\n" +
	"for a restart. A file with mistakes is refused and the running config stays: each\n" +
	"mistake is printed as hookbox check prints it, and the exit status is 1. The server\n" +
	"reads the file it was started with; -config here only says how to reach it. On a\n" +
	"cluster, only the node reached reloads."

func runReload(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := adminFlags(fs)
	opts.reach = true // a file with mistakes still reaches the server, which names them
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	api, err := newAdminAPI("reload", opts, 30*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	resp, err := api.do(http.MethodPost, "/reload")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var answer struct {
		Path    string         `json:"path"`
		Changes app.ConfigDiff `json:"changes"`
		Error   string         `json:"error"`
		Errors  []string       `json:"errors"`
	}
	decoded := json.Unmarshal(raw, &answer) == nil
	switch {
	case resp.StatusCode == http.StatusOK && decoded:
		fmt.Fprintf(stdout, "reloaded %s\n", answer.Path)
		for _, l := range answer.Changes.Lines() {
			fmt.Fprintf(stdout, "  %s\n", l)
		}
		return 0
	case resp.StatusCode == http.StatusUnprocessableEntity && decoded:
		fmt.Fprintf(stderr, "hookbox reload: %s: %s\n", answer.Path, answer.Error)
		for _, e := range answer.Errors {
			fmt.Fprintln(stderr, e)
		}
		return 1
	}
	fmt.Fprintf(stderr, "hookbox reload: the server answered %d: %s\n", resp.StatusCode, string(raw))
	return 1
}
