package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"hookbox/app"
)

// replayFlags are the flags of hookbox replay besides -config.
type replayFlags struct {
	all, force, dryRun, asJSON              bool
	event                                   string
	since, until, source, topic, dest, stat string
	q                                       string
}

func runReplay(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := adminFlags(fs)
	var f replayFlags
	fs.BoolVar(&f.all, "all", false, "replay every dead delivery")
	fs.StringVar(&f.event, "event", "", "replay the deliveries of the event `SOURCE/ID` (as the platform named it)")
	fs.StringVar(&f.since, "since", "", "replay deliveries of events received since `T`: a local time (2026-12-06 14:00), one with Z or an offset, or a duration ago (2h, 30m, 3d)")
	fs.StringVar(&f.until, "until", "", "… and received until `T` (a time or a duration ago, as -since)")
	fs.StringVar(&f.source, "source", "", "… of events from this source")
	fs.StringVar(&f.topic, "topic", "", "… of events whose topic matches this glob (orders/*)")
	fs.StringVar(&f.dest, "destination", "", "… to this destination")
	fs.StringVar(&f.stat, "status", "", "… that are dead, delivered or any (default any; pending ones are never replayed)")
	fs.StringVar(&f.q, "q", "", "… of events whose body contains `TEXT` (at least 3 characters; ASCII letters in either case)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "say what would be sent and what skipped (the split the run prints), change nothing")
	fs.BoolVar(&f.force, "force", false, "send delivered deliveries again too (they were taken once already)")
	fs.BoolVar(&f.asJSON, "json", false, "print the server's JSON answers, for scripts")
	ids, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	return replay(opts, fs, f, ids, stdout, stderr)
}

// replay asks the running server to replay deliveries: every dead one,
// the ones with the given ids, those of one event, or those a query
// selects. Exactly one of these is given.
func replay(opts *configOptions, fs *flag.FlagSet, f replayFlags, ids []string, stdout, stderr io.Writer) int {
	query := f.since != "" || f.until != "" || f.source != "" || f.topic != "" || f.dest != "" || f.stat != "" || f.q != ""
	modes := 0
	for _, on := range []bool{f.all, len(ids) > 0, f.event != "", query} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		fmt.Fprintln(stderr, "hookbox replay: give one of -all, delivery ids, -event SOURCE/ID, or a query (-since, -until, -source, -topic, -destination, -status, -q); run hookbox replay -h for examples")
		return 2
	}
	if f.dryRun && f.all {
		fmt.Fprintln(stderr, "hookbox replay: -dry-run does not go with -all; to see what -all would send, run hookbox replay -status dead -dry-run")
		return 2
	}
	for _, id := range ids {
		if _, err := strconv.ParseUint(strings.TrimPrefix(id, "#"), 10, 64); err != nil {
			fmt.Fprintf(stderr, "hookbox replay: %q is not a delivery id (a number, as in #7 on the dead letters page); for an event use -event SOURCE/ID\n", id)
			return 2
		}
	}
	for _, t := range []struct {
		name string
		v    *string
	}{{"since", &f.since}, {"until", &f.until}} {
		var err error
		if *t.v, err = timeArg(t.name, *t.v, time.Local); err != nil {
			fmt.Fprintf(stderr, "hookbox replay: %v\n", err)
			return 2
		}
	}
	var source, eventID string
	if f.event != "" {
		var ok bool
		if source, eventID, ok = strings.Cut(f.event, "/"); !ok || source == "" || eventID == "" {
			fmt.Fprintf(stderr, "hookbox replay: -event %q: give the source and the event's id as SOURCE/ID (shop/wh-1004)\n", f.event)
			return 2
		}
	}
	api, err := newAdminAPI("replay", opts, 60*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	r := replayer{api: api, force: f.force, asJSON: f.asJSON, stdout: stdout, stderr: stderr}
	switch {
	case f.all:
		return r.all()
	case query:
		return r.query(f)
	case f.event != "":
		return r.each(map[string]any{"source": source, "event_id": eventID}, f.dryRun)
	}
	nums := make([]uint64, len(ids))
	for i, id := range ids {
		nums[i], _ = strconv.ParseUint(strings.TrimPrefix(id, "#"), 10, 64)
	}
	return r.each(map[string]any{"ids": nums}, f.dryRun)
}

// replayer runs one hookbox replay against the admin API.
type replayer struct {
	api            *adminAPI
	force, asJSON  bool
	stdout, stderr io.Writer
}

// call sends a request and returns the answer's status and body; a
// failure to reach the server is printed and reported as ok false.
func (r *replayer) call(method, path string, body any) (int, []byte, bool) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	resp, err := r.api.doJSON(method, path, raw)
	if err != nil {
		fmt.Fprintln(r.stderr, err)
		return 0, nil, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if r.asJSON {
		fmt.Fprintln(r.stdout, strings.TrimSpace(string(b)))
	}
	return resp.StatusCode, b, true
}

// send calls the API and decodes a 200 answer into out; anything else
// (the server unreachable, an error answer, an answer this version
// cannot read) is printed, and send returns its exit code. -1: go on.
func (r *replayer) send(method, path string, body, out any) int {
	status, answer, ok := r.call(method, path, body)
	if !ok {
		return 1
	}
	if status != http.StatusOK {
		return r.fail(status, answer)
	}
	if !r.decode(answer, out) {
		return 1
	}
	return -1
}

// decode reads the server's answer into out, printing why it cannot.
func (r *replayer) decode(answer []byte, out any) bool {
	if err := json.Unmarshal(answer, out); err != nil {
		fmt.Fprintf(r.stderr, "hookbox replay: the server's answer is not what this version reads (%v): %.200s\n", err, answer)
		return false
	}
	return true
}

// fail prints the server's error sentence, with the CLI's way to act on
// it in place of the API's, and returns exit code 1.
func (r *replayer) fail(status int, body []byte) int {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	msg = cliWords(msg)
	if status == http.StatusNotFound && strings.HasPrefix(msg, "no such delivery") {
		msg += " (check the id on the dead letters page or with -event SOURCE/ID)"
	}
	if !r.asJSON {
		fmt.Fprintf(r.stderr, "hookbox replay: %s\n", msg)
	}
	return 1
}

func (r *replayer) all() int {
	var a struct {
		Replayed int `json:"replayed"`
	}
	if code := r.send(http.MethodPost, "/dead-letters/replay", nil, &a); code >= 0 {
		return code
	}
	if !r.asJSON {
		fmt.Fprintf(r.stdout, "replayed %s\n", count(a.Replayed, "dead delivery", "dead deliveries"))
	}
	return 0
}

// cliForce is what sends delivered ones too, in the CLI's sentences.
const cliForce = "-force"

// countsJSON is the API's split of a replay by outcome (app.ReplayCounts).
type countsJSON struct {
	DeadSent         int `json:"dead_sent"`
	DeliveredSent    int `json:"delivered_sent"`
	DeliveredSkipped int `json:"delivered_skipped"`
	PendingLeft      int `json:"pending_left"`
	NotFound         int `json:"not_found"`
	Changed          int `json:"changed"`
}

// say is the split as the CLI prints it: app's one sentence, in the dry
// run's tense or the run's.
func (c countsJSON) say(done bool) string {
	return app.ReplayCounts{DeadSent: c.DeadSent, DeliveredSent: c.DeliveredSent, DeliveredSkipped: c.DeliveredSkipped,
		PendingLeft: c.PendingLeft, NotFound: c.NotFound, Changed: c.Changed}.Say(done, cliForce)
}

// each replays deliveries named one by one: the ids given, or those of the
// event source/id. The server decides what it does with each and answers
// for each; each prints that answer: the split, then each delivery with
// its outcome. It exits 1 when a delivery asked for was not found or
// skipped (delivered, without -force), or the event is not stored.
func (r *replayer) each(body map[string]any, dryRun bool) int {
	body["force"], body["dry_run"] = r.force, dryRun
	var a struct {
		Counts countsJSON `json:"counts"`
		Items  []struct {
			Name    string    `json:"name"`
			Outcome string    `json:"outcome"`
			Updated time.Time `json:"updated"`
		} `json:"items"`
	}
	if code := r.send(http.MethodPost, "/deliveries/replay", body, &a); code >= 0 {
		return code
	}
	code := 0
	if a.Counts.NotFound > 0 || a.Counts.DeliveredSkipped > 0 {
		code = 1
	}
	if r.asJSON {
		return code
	}
	if len(a.Items) == 0 {
		fmt.Fprintf(r.stdout, "nothing to replay: event %s/%s has no deliveries (merged into another, waiting for its debounce, or routed nowhere)\n", body["source"], body["event_id"])
		return 0
	}
	fmt.Fprintln(r.stdout, a.Counts.say(!dryRun))
	for _, it := range a.Items {
		word := map[string]string{"sent": "sent", "skipped": "skipped", "left": "left", "not_found": "not found", "changed": "changed"}[it.Outcome]
		if dryRun && it.Outcome == "sent" {
			word = "will send"
		}
		line := fmt.Sprintf("  %-9s %s", word, it.Name)
		switch it.Outcome {
		case "skipped":
			line += " (delivered " + it.Updated.Local().Format("2006-01-02 15:04:05 MST") + ")"
		case "left":
			line += " (pending, on its way already)"
		case "not_found":
			line += " (check the id on the dead letters page or with -event SOURCE/ID)"
		case "changed":
			line += " (changed state meanwhile: replayed or swept)"
		}
		fmt.Fprintln(r.stdout, line)
	}
	return code
}

// query replays what the query flags select, or with -dry-run says what
// it would do: the same split either way, in its tense.
func (r *replayer) query(f replayFlags) int {
	body := map[string]any{"source": f.source, "topic": f.topic, "destination": f.dest, "status": f.stat,
		"since": f.since, "until": f.until, "q": f.q, "dry_run": f.dryRun, "force": f.force}
	var a struct {
		Matched int        `json:"matched"`
		Counts  countsJSON `json:"counts"`
		More    bool       `json:"more"`
		First   []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"first"`
	}
	if code := r.send(http.MethodPost, "/replay", body, &a); code >= 0 {
		return code
	}
	if r.asJSON {
		return 0
	}
	if a.Matched == 0 && a.Counts.PendingLeft == 0 {
		fmt.Fprintln(r.stdout, "nothing matched: no deliveries of events that fit the query")
		return 0
	}
	// The dry run and the run print the same split, each in its tense,
	// then the first ones matched.
	fmt.Fprintln(r.stdout, a.Counts.say(!f.dryRun))
	if a.Matched > 0 {
		names := make([]string, 0, len(a.First))
		for _, it := range a.First {
			names = append(names, it.Name+" ("+it.State+")")
		}
		list := strings.Join(names, ", ")
		if rest := a.Matched - len(names); rest > 0 {
			list += fmt.Sprintf(", and %d more", rest)
		}
		fmt.Fprintf(r.stdout, "  %s\n", list)
	}
	if a.More {
		fmt.Fprintf(r.stdout, "more than %d matched, the most one call replays: narrow the query with -since and -until to replay the rest\n", a.Matched)
	}
	return 0
}

// cliWords puts the CLI's way to act on an API sentence in place of the
// API's.
func cliWords(msg string) string {
	return strings.NewReplacer(`(use "status": "any" to mean it)`, "(use -status any to mean it)").Replace(msg)
}

// count is n with the singular or plural noun.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
