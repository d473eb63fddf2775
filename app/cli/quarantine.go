package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"hookbox/app"
)

// The quarantine command: list, recheck or clear a source's quarantine
// (the requests it refused for their signature) through the running
// server's admin API.

const quarantineHelp = "A source keeps the requests it refused for a bad or stale signature, bounded by\n" +
	"[quarantine] (1,000 requests and 16 MiB a source, 7 days; one address at most a\n" +
	"tenth; 60 new a minute a source and 10 an address). None is ever forwarded.\n" +
	"list shows them (signatures masked, bodies cut short; -json the API's answer);\n" +
	"recheck verifies them again with the secrets in force, each at the time it\n" +
	"arrived, and takes in those that pass (dedup, routes, debounce) with that time:\n" +
	"serve does it at start and after a reload that changes the source's secrets;\n" +
	"clear deletes them."

func runQuarantine(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := adminFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON answer")
	rest, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(rest) != 2 || (rest[0] != "list" && rest[0] != "recheck" && rest[0] != "clear") {
		fmt.Fprintln(stderr, "hookbox quarantine: give list, recheck or clear, and a source's name")
		return 2
	}
	verb, source := rest[0], rest[1]
	api, err := newAdminAPI("quarantine "+verb, opts, 2*time.Minute)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	path, method := "/sources/"+url.PathEscape(source)+"/quarantine", http.MethodGet
	switch verb {
	case "recheck":
		path, method = path+"/recheck", http.MethodPost
	case "clear":
		method = http.MethodDelete
	}
	resp := api.call(method, path, nil, stderr)
	if resp == nil {
		return 1
	}
	defer resp.Body.Close()
	answer := readAnswer(resp.Body)
	if *asJSON {
		fmt.Fprintln(stdout, answer)
		return 0
	}
	switch verb {
	case "list":
		return printQuarantine(answer, stdout, stderr)
	case "recheck":
		var r app.QuarantineRecheck
		if err := json.Unmarshal([]byte(answer), &r); err != nil {
			fmt.Fprintf(stderr, "hookbox quarantine recheck: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: checked %d, taken in %d (%d held already), still refused %d\n", source, r.Checked, r.Recovered, r.Duplicate, r.Remaining)
	case "clear":
		var r struct {
			Cleared int `json:"cleared"`
		}
		_ = json.Unmarshal([]byte(answer), &r)
		fmt.Fprintf(stdout, "%s: cleared %d\n", source, r.Cleared)
	}
	return 0
}

// printQuarantine prints a list's answer, one request a line.
func printQuarantine(answer string, stdout, stderr io.Writer) int {
	var l struct {
		Source   string `json:"source"`
		Requests int    `json:"requests"`
		Bytes    int64  `json:"bytes"`
		Entries  []struct {
			ID        uint64    `json:"id"`
			At        time.Time `json:"at"`
			Client    string    `json:"client"`
			Reason    string    `json:"reason"`
			BodyBytes int       `json:"body_bytes"`
			Body      string    `json:"body"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(answer), &l); err != nil {
		fmt.Fprintf(stderr, "hookbox quarantine list: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d refused requests kept (%d bytes)\n", l.Source, l.Requests, l.Bytes)
	for _, e := range l.Entries {
		body := strings.Join(strings.Fields(e.Body), " ")
		if len(body) > 60 {
			body = body[:60] + "…"
		}
		fmt.Fprintf(stdout, "%d  %s  %s  %s  %d bytes  %s\n", e.ID, e.At.Local().Format(time.RFC3339), e.Client, e.Reason, e.BodyBytes, body)
	}
	return 0
}
