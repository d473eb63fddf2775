package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"hookbox/app"
	"hookbox/app/alert"
	"hookbox/app/metrics"
	"hookbox/app/receive"
	"hookbox/app/upstream"
)

// The providers' side (issue 45): serve's upstream checker, each source's
// check scheduled by its [source.upstream] check spec (again at a reload
// that changes it), and hookbox upstream check, which asks the running
// server for a check now.

// wireUpstream builds the checker of cfg's upstream tables, schedules the
// checks on sched (on one node of a cluster: n.onLeader; the store's lock
// keeps a check asked of another node from running beside it) and returns
// it with the applier that puts a new config in force in both.
func wireUpstream(ctx context.Context, cfg *app.Config, n *node, receiver *receive.Receiver, alerter *alert.Alerter,
	prom *metrics.Prometheus, sched *cron.Cron, logger *slog.Logger) (*upstream.Checker, app.Applier, error) {
	checker := upstream.New(cfg, n.store, receiver)
	checker.Logger = logger.With("component", "upstream")
	checker.Alert = alerter.Upstream
	checker.Metrics = prom
	crons := &upstreamCrons{sched: sched, logger: checker.Logger, ids: map[string]cron.EntryID{}, specs: map[string]string{},
		run: func(source string) func() {
			return n.onLeader(func() { checker.Scheduled(ctx, source) })
		}}
	if err := crons.apply(cfg); err != nil {
		return nil, app.Applier{}, err
	}
	return checker, app.Applier{Name: "upstream", Apply: func(next *app.Config) {
		checker.Apply(next)
		if err := crons.apply(next); err != nil { // the config's validation parsed every spec
			checker.Logger.Error("reschedule the upstream checks", slog.Any("error", err))
		}
	}}, nil
}

// upstreamCrons are the scheduled checks, one per source with an upstream.
type upstreamCrons struct {
	sched  *cron.Cron
	logger *slog.Logger
	run    func(source string) func()

	mu    sync.Mutex
	ids   map[string]cron.EntryID // by source
	specs map[string]string
}

// apply schedules cfg's checks: a source whose spec changed is scheduled
// again, one gone (or without upstream now) is taken off.
func (u *upstreamCrons) apply(cfg *app.Config) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	want := map[string]string{}
	for _, s := range cfg.Sources {
		if s.Upstream != nil {
			want[s.Name] = s.Upstream.Check
		}
	}
	for name, id := range u.ids {
		if spec, ok := want[name]; !ok || spec != u.specs[name] {
			u.sched.Remove(id)
			delete(u.ids, name)
			delete(u.specs, name)
		}
	}
	for name, spec := range want {
		if _, ok := u.ids[name]; ok {
			continue
		}
		id, err := u.sched.AddFunc(spec, u.run(name))
		if err != nil {
			return fmt.Errorf("%s: source %s: upstream.check: %w", cfg.Path, name, err)
		}
		u.ids[name], u.specs[name] = id, spec
	}
	return nil
}

const upstreamHelp = "Runs the upstream checks now through the running server's admin API: for\n" +
	"SOURCE, or for every source with a [source.upstream] table. Each reads the\n" +
	"provider's API with the source's key: whether the webhook endpoint (Stripe) or\n" +
	"hook (GitHub) is on (repair = true turns it on again), and what never arrived:\n" +
	"Stripe's events hookbox does not hold are taken in as fetched events; GitHub's\n" +
	"failed deliveries are sent again by GitHub. It prints what each check found and\n" +
	"did (-json: the API's answer). Exit status 1 when a check failed."

func runUpstream(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := adminFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's answer as JSON")
	names, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(names) == 0 || names[0] != "check" {
		fmt.Fprintln(stderr, "hookbox upstream: say what to do: hookbox upstream check [SOURCE]")
		return 2
	}
	names = names[1:]
	if len(names) > 1 {
		fmt.Fprintln(stderr, "hookbox upstream check: give at most one source name")
		return 2
	}
	api, err := newAdminAPI("upstream check", opts, 10*time.Minute) // a check pages through a provider's lists
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	path := "/upstream/check"
	if len(names) == 1 {
		path = "/sources/" + url.PathEscape(names[0]) + "/upstream/check"
	}
	resp := api.call(http.MethodPost, path, nil, stderr)
	if resp == nil {
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	var out struct {
		Checks []app.UpstreamCheck `json:"checks"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		fmt.Fprintf(stderr, "hookbox upstream check: the server's answer is not what this hookbox reads: %v\n", err)
		return 1
	}
	if *asJSON {
		stdout.Write(body)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			fmt.Fprintln(stdout)
		}
	} else if len(out.Checks) == 0 {
		fmt.Fprintln(stdout, "no source has a [source.upstream] table: nothing to check")
	}
	failed := false
	for _, ch := range out.Checks {
		failed = failed || !ch.OK()
		if !*asJSON {
			fmt.Fprint(stdout, describeCheck(ch))
		}
	}
	if failed {
		return 1
	}
	return 0
}

// describeCheck says in words what a check found and did.
func describeCheck(c app.UpstreamCheck) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s %s):", c.Source, c.Provider, c.Endpoint)
	switch {
	case c.Repaired:
		b.WriteString(" was disabled, turned on again;")
	case c.Subscription == "disabled":
		b.WriteString(" DISABLED: the provider sends it nothing (repair = true turns it on);")
	case c.Subscription != "":
		fmt.Fprintf(&b, " %s;", c.Subscription)
	}
	switch c.Provider {
	case "woocommerce":
		b.WriteString(" (WooCommerce keeps no list of missed events: nothing to fetch)")
	case "shopify":
		fmt.Fprintf(&b, " %d of the app's subscriptions looked at (Shopify keeps no list of missed events: nothing to fetch)", c.Seen)
	case "github":
		fmt.Fprintf(&b, " %d deliveries looked at, %d failed ones held already, %d asked again", c.Seen, c.Held, c.Redelivered)
	default:
		fmt.Fprintf(&b, " %d events looked at, %d held already, %d fetched", c.Seen, c.Held, c.Fetched)
		if c.Young > 0 {
			fmt.Fprintf(&b, ", %d left to their webhook (under 5 minutes old)", c.Young)
		}
	}
	b.WriteString("\n")
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if c.Error != "" {
		fmt.Fprintf(&b, "  failed: %s\n", c.Error)
		if c.RetryAfter != nil {
			fmt.Fprintf(&b, "  the provider asked to wait until %s\n", c.RetryAfter.Local().Format(time.RFC3339))
		}
	}
	return b.String()
}
