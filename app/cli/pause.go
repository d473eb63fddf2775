package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// The pause and resume commands: hold a destination's sends, and let them
// go again, through the running server's admin API.

const pauseHelp = "Pauses the destination NAME through the running server's admin API: nothing is\n" +
	"sent to it until hookbox resume NAME; deliveries keep arriving and wait, retries\n" +
	"that fall due wait too, nothing goes dead. The\n" +
	"pause is stored: it survives a restart and holds on every node of a cluster.\n" +
	"-reason says why, on the page and in GET /api/v1/destinations."

const resumeHelp = "Resumes the paused destination NAME through the running server's admin API:\n" +
	"its waiting deliveries go out in the order they were accepted, paced by its\n" +
	"concurrency and rate."

func runPause(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := adminFlags(fs)
	reason := fs.String("reason", "", "why it is paused, shown on the page")
	names, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	body, _ := json.Marshal(map[string]string{"reason": *reason})
	return control("pause", opts, names, body, stdout, stderr)
}

func runResume(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := adminFlags(fs)
	names, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	return control("resume", opts, names, nil, stdout, stderr)
}

// control posts a pause or resume of one destination to the server.
func control(cmd string, opts *configOptions, names []string, body []byte, stdout, stderr io.Writer) int {
	if len(names) != 1 {
		fmt.Fprintf(stderr, "hookbox %s: give one destination name (a [[destination]] name of the config)\n", cmd)
		return 2
	}
	api, err := newAdminAPI(cmd, opts, 30*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	resp := api.call(http.MethodPost, "/destinations/"+url.PathEscape(names[0])+"/"+cmd, body, stderr)
	if resp == nil {
		return 1
	}
	resp.Body.Close()
	past := map[string]string{"pause": "paused", "resume": "resumed"}[cmd]
	fmt.Fprintf(stdout, "%s %s\n", past, names[0])
	return 0
}
