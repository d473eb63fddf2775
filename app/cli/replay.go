package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
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
	opts := configFlags(fs)
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
	fs.BoolVar(&f.dryRun, "dry-run", false, "count and name what would be replayed, change nothing")
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
	if f.dryRun && !query {
		fmt.Fprintln(stderr, "hookbox replay: -dry-run goes with a query (-since, -source, …); to see what -all would send, run hookbox replay -status dead -dry-run")
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
		return r.event(source, eventID)
	}
	for i := range ids {
		ids[i] = strings.TrimPrefix(ids[i], "#")
	}
	return r.ids(ids)
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
	if status == http.StatusNotFound {
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

// ids replays each delivery named; it goes on after one that fails and
// exits 1 if any did.
func (r *replayer) ids(ids []string) int {
	var done []string
	code := 0
	for _, id := range ids {
		status, body, ok := r.call(http.MethodPost, "/deliveries/"+id+"/replay", map[string]bool{"force": r.force})
		if !ok {
			return 1
		}
		if status != http.StatusOK {
			code = r.fail(status, body)
			continue
		}
		var a struct {
			Name string `json:"name"`
		}
		if !r.decode(body, &a) {
			code = 1
			continue
		}
		done = append(done, a.Name)
	}
	if !r.asJSON && len(done) > 0 {
		fmt.Fprintf(r.stdout, "replayed %s: %s\n", count(len(done), "delivery", "deliveries"), strings.Join(done, ", "))
	}
	return code
}

// event replays the finished deliveries of the event source/id: dead
// ones, and delivered ones with -force; pending ones are on their way.
func (r *replayer) event(source, id string) int {
	asJSON := r.asJSON
	r.asJSON = false // the look-ups are not the answer
	var list struct {
		Items []struct {
			Seq uint64 `json:"seq"`
		} `json:"items"`
	}
	if code := r.send(http.MethodGet, "/events?"+url.Values{"source": {source}, "id": {id}}.Encode(), nil, &list); code >= 0 {
		return code
	}
	if len(list.Items) == 0 {
		fmt.Fprintf(r.stderr, "hookbox replay: no event %s/%s is stored (is the source right, and was it received within the retention?); the events page lists what is\n", source, id)
		return 1
	}
	var ev struct {
		Deliveries []struct {
			ID          uint64 `json:"id"`
			Destination string `json:"destination"`
			State       string `json:"state"`
		} `json:"deliveries"`
	}
	if code := r.send(http.MethodGet, "/events/"+strconv.FormatUint(list.Items[0].Seq, 10), nil, &ev); code >= 0 {
		return code
	}
	var ids []string
	var delivered, pending []string
	for _, d := range ev.Deliveries {
		switch {
		case d.State == "pending":
			pending = append(pending, fmt.Sprintf("#%d %s", d.ID, d.Destination))
			continue
		case d.State == "delivered" && !r.force:
			delivered = append(delivered, fmt.Sprintf("#%d %s", d.ID, d.Destination))
			continue
		}
		ids = append(ids, strconv.FormatUint(d.ID, 10))
	}
	r.asJSON = asJSON
	if len(pending) > 0 && !asJSON {
		fmt.Fprintf(r.stdout, "left alone (pending, on their way already): %s\n", strings.Join(pending, ", "))
	}
	if len(delivered) > 0 {
		if !asJSON {
			fmt.Fprintf(r.stderr, "hookbox replay: %s/%s was delivered to %s already; add -force to send it again\n", source, id, strings.Join(delivered, ", "))
		}
		if len(ids) == 0 {
			return 1
		}
	}
	if len(ids) == 0 {
		if !asJSON {
			fmt.Fprintf(r.stdout, "nothing to replay: event %s/%s has no dead or delivered deliveries\n", source, id)
		}
		return 0
	}
	code := r.ids(ids)
	if len(delivered) > 0 {
		code = 1
	}
	return code
}

// query replays (or with -dry-run counts) what the query flags select.
func (r *replayer) query(f replayFlags) int {
	body := map[string]any{"source": f.source, "topic": f.topic, "destination": f.dest, "status": f.stat,
		"since": f.since, "until": f.until, "q": f.q, "dry_run": f.dryRun, "force": f.force}
	var a struct {
		Matched  int    `json:"matched"`
		Selected int    `json:"selected"`
		Refusal  string `json:"refusal"`
		Replayed int    `json:"replayed"`
		More     bool   `json:"more"`
		First    []struct {
			Name string `json:"name"`
		} `json:"first"`
	}
	if code := r.send(http.MethodPost, "/replay", body, &a); code >= 0 {
		return code
	}
	if r.asJSON {
		return 0
	}
	if a.Matched == 0 {
		fmt.Fprintln(r.stdout, "nothing matched: no dead or delivered deliveries of events that fit the query")
		return 0
	}
	names := make([]string, 0, len(a.First))
	for _, it := range a.First {
		names = append(names, it.Name)
	}
	list := strings.Join(names, ", ")
	if rest := a.Matched - len(names); rest > 0 {
		list += fmt.Sprintf(", and %d more", rest)
	}
	if f.dryRun && a.Refusal != "" {
		// The dry run says what the run does: the server's selection
		// refuses it (delivered ones without -force).
		fmt.Fprintf(r.stdout, "would replay nothing: %s\nmatched %s: %s\n", cliWords(a.Refusal), count(a.Matched, "delivery", "deliveries"), list)
		return 0
	}
	n, verb := a.Replayed, "replayed"
	if f.dryRun {
		n, verb = a.Selected, "would replay"
	}
	fmt.Fprintf(r.stdout, "%s %s: %s\n", verb, count(n, "delivery", "deliveries"), list)
	if !f.dryRun && a.Replayed < a.Selected {
		fmt.Fprintf(r.stdout, "%d of the %d matched changed state meanwhile (replayed or swept) and were left alone\n", a.Selected-a.Replayed, a.Selected)
	}
	if a.More {
		fmt.Fprintf(r.stdout, "more than %d matched, the most one call replays: narrow the query with -since and -until to replay the rest\n", a.Matched)
	}
	return 0
}

// cliWords puts the CLI's way to act on an API sentence in place of the
// API's.
func cliWords(msg string) string {
	return strings.NewReplacer(`send {"force": true} to send it again`, "add -force to send it again",
		`add "force": true to send them again`, "add -force to send them again",
		`or "status": "dead" to`, "or -status dead to",
		`(use "status": "any" to mean it)`, "(use -status any to mean it)").Replace(msg)
}

// count is n with the singular or plural noun.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
