// Package ui is hookbox's status page: server-rendered HTML from embedded
// templates and static files, with no build step and nothing from a CDN.
// Every page works with JavaScript off; a small script only refreshes the
// overview in place. Authentication and CSRF checks are the caller's: the
// handlers expect a logged-in session and read its CSRF token from
// c.Locals("csrf").
package ui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Static returns the static files (CSS, the refresh script) to serve under
// /static/.
func Static() fs.FS { sub, _ := fs.Sub(staticFS, "static"); return sub }

// Deps are what the pages are built from.
type Deps struct {
	// Running is the config in force, read per page (nil: Config, always).
	Running *app.Running
	Config  *app.Config
	Store   app.ReadModel
	Stats   *app.Stats
	Wake    func()
	Now     func() time.Time
	Logger  *slog.Logger
	// LastBackup gives the newest scheduled backup's time and size and the
	// error of the latest run (nil: no backup line on the overview).
	LastBackup func() (time.Time, int64, error)
	// Pauser, when set, backs the Pause and Resume buttons of the
	// overview's destination rows.
	Pauser *app.Pauser
	// May reports whether the request's identity may use the route method
	// path (the server's table of roles); a page shows only the buttons it
	// may use (nil: every button).
	May func(c *fiber.Ctx, method, path string) bool
	// Access backs the admin's Audit and Team pages (nil: empty).
	Access *app.Access
	// Who is the audit actor of a request (the Team page's changes).
	Who func(c *fiber.Ctx) app.Who
	// Searches bounds the body searches that run at once (nil: a gate of
	// app.NewSearchGate's defaults, this UI's own).
	Searches *app.SearchGate
}

// UI renders the status pages.
type UI struct {
	d    Deps
	tmpl map[string]*template.Template
}

var funcs = template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return human(roundAgo(time.Since(t))) + " ago"
	},
	"dur":           human,
	"sub":           func(a, b int) int { return a - b },
	"plural":        plural,
	"word":          app.DeliveryWord,
	"outcome":       outcome,
	"attemptStatus": attemptStatus,
	"when":          when,
	"clock": func(t time.Time) template.HTML {
		u := t.UTC()
		return template.HTML(`<time datetime="` + u.Format(time.RFC3339) + `" data-clock title="` + u.Format("15:04 UTC") + `">` + u.Format("15:04") + ` UTC</time>`)
	},
	"pct": func(f float64) string {
		if f < 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", 100*f)
	},
	"in": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		if d := time.Until(t); d > 0 {
			return "in " + human(roundAgo(d))
		}
		return "now"
	},
	"ms": func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) },
	"size": func(n int64) string {
		switch {
		case n >= 1<<30:
			return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
		case n >= 1<<20:
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		case n >= 1<<10:
			return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
		}
		return fmt.Sprintf("%d bytes", n)
	},
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
}

// when writes t as a <time> element: its text in UTC, which the page's
// script rewrites in the browser's time zone, keeping UTC on hover (the
// title); "—" for the zero time.
func when(t time.Time) template.HTML {
	if t.IsZero() {
		return "—"
	}
	u := t.UTC()
	utc := u.Format("2006-01-02 15:04:05 UTC")
	return template.HTML(`<time datetime="` + u.Format(time.RFC3339) + `" title="` + utc + `">` + utc + `</time>`)
}

// New parses the templates; it panics on a template error, which is a bug
// caught by any test that builds the UI.
func New(d Deps) *UI {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Wake == nil {
		d.Wake = func() {}
	}
	if d.Logger == nil {
		d.Logger = slog.With("component", "ui")
	}
	if d.Running == nil {
		d.Running = app.NewRunning(d.Config, d.Now())
	}
	if d.Searches == nil {
		d.Searches = app.NewSearchGate(0, 0)
	}
	u := &UI{d: d, tmpl: map[string]*template.Template{}}
	for _, page := range []string{"overview", "events", "event", "dead", "confirm", "replay", "config", "login", "audit", "team"} {
		u.tmpl[page] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html"))
	}
	return u
}

// config returns the config in force.
func (u *UI) cfg() *app.Config { return u.d.Running.Config() }

// Mount registers the pages through add, which must put them behind a
// login and a CSRF check.
func (u *UI) Mount(add func(method, path string, h fiber.Handler)) {
	add(fiber.MethodGet, "/", u.overview)
	add(fiber.MethodGet, "/events", u.events)
	add(fiber.MethodGet, "/events/:seq", u.event)
	add(fiber.MethodGet, "/dead-letters", u.dead)
	add(fiber.MethodPost, "/dead-letters/replay", u.replayAll)
	add(fiber.MethodPost, "/deliveries/:id/replay", u.replayOne)
	// Retry now (issue 28): retry.go.
	add(fiber.MethodPost, "/deliveries/:id/retry", u.retryOne)
	add(fiber.MethodPost, "/destinations/:name/retry", u.retryDestination)
	add(fiber.MethodPost, "/replay", u.replayQuery) // replay by query (replay.go)
	add(fiber.MethodPost, "/destinations/:name/pause", u.pause)
	add(fiber.MethodPost, "/destinations/:name/resume", u.resume)
	add(fiber.MethodGet, "/config", u.config)
	// Team access (admins): audit_page.go, team.go.
	add(fiber.MethodGet, "/audit", u.audit)
	add(fiber.MethodGet, "/team", u.team)
	add(fiber.MethodPost, "/team/users", u.teamAddUser)
	add(fiber.MethodPost, "/team/users/:name/role", u.teamSetRole)
	add(fiber.MethodPost, "/team/users/:name/remove", u.teamRemoveUser)
	add(fiber.MethodPost, "/team/tokens", u.teamCreateToken)
	add(fiber.MethodPost, "/team/tokens/:name/revoke", u.teamRevokeToken)
}

// page is what every template gets.
type page struct {
	Title string
	CSRF  string
	Nav   string
	Dead  int
	// Storage is the episode of failing commits in progress, or nil, and
	// StorageFix what to do about it.
	Storage    *app.StorageEpisode
	StorageFix string
	// Loaded is the config in force; Refused, the last config a reload
	// refused (nil once a later one applied).
	Loaded  *app.Loaded
	Refused *app.Refusal
	// User and Role are who is logged in.
	User, Role string
	// Can says which buttons the user may use.
	Can  Can
	Data any
}

// Can is what the logged-in user may do, for the pages' buttons; the
// server checks it again on each request.
type Can struct {
	Replay, ReplayAll, ReplayQuery, Retry, Pause, Resume, Backup, Admin bool
}

// can reads what c's identity may do.
func (u *UI) can(c *fiber.Ctx) Can {
	may := u.d.May
	if may == nil {
		may = func(*fiber.Ctx, string, string) bool { return true }
	}
	post := func(path string) bool { return may(c, fiber.MethodPost, path) }
	return Can{Replay: post("/deliveries/:id/replay"), ReplayAll: post("/dead-letters/replay"), ReplayQuery: post("/replay"),
		Retry: post("/deliveries/:id/retry"), Pause: post("/destinations/:name/pause"), Resume: post("/destinations/:name/resume"),
		Backup: may(c, fiber.MethodGet, "/api/v1/backup")}
}

func (u *UI) render(c *fiber.Ctx, status int, name, title string, data any) error {
	ctx := c.UserContext()
	csrf, _ := c.Locals("csrf").(string)
	dead, _ := u.d.Store.CountDead(ctx)
	p := page{Title: title, CSRF: csrf, Nav: name, Dead: dead, Data: data,
		Loaded: u.d.Running.Loaded(), Refused: u.d.Running.Refused()}
	if id, ok := c.Locals("identity").(app.Identity); ok {
		p.User, p.Role, p.Can = id.Name, id.Role.String(), u.can(c)
		p.Can.Admin = id.Role.Allows(app.RoleAdmin) && !id.Token
	}
	if u.d.Stats != nil {
		if cur, failing, _ := u.d.Stats.Storage.State(); failing {
			p.Storage, p.StorageFix = &cur, u.d.Stats.Storage.Fix
		}
	}
	var buf bytes.Buffer
	if err := u.tmpl[name].Execute(&buf, p); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	c.Type("html", "utf-8")
	return c.Status(status).Send(buf.Bytes())
}

// Login renders the login form with an optional message; after the login
// the browser goes to next (see request.SafeNext).
func (u *UI) Login(c *fiber.Ctx, status int, msg, next string) error {
	return u.render(c, status, "login", "Log in", map[string]string{"Error": msg, "Next": request.SafeNext(next)})
}

func (u *UI) events(c *fiber.Ctx) error {
	ctx := c.UserContext()
	q := app.EventQuery{Source: c.Query("source"), Topic: c.Query("topic"), Status: c.Query("status"),
		ID: strings.TrimSpace(c.Query("id")), Q: strings.TrimSpace(c.Query("q")), Limit: 50}
	q.Before, _ = strconv.ParseUint(c.Query("before"), 10, 64)
	var bad string
	if q.Q != "" {
		bad = checkSearch(q.Q)
	}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v := c.Query(f.name); v != "" {
			t, err := parseWhen(v)
			if err != nil {
				bad = fmt.Sprintf("%s: %q is not a time (use 2006-01-02 or 2006-01-02T15:04)", f.name, v)
				continue
			}
			*f.to = t
		}
	}
	var res app.EventSearch
	var err error
	status := fiber.StatusOK
	if err := app.CheckEventStatus(q.Status); err != nil {
		bad, status = app.ErrorMessage(err), fiber.StatusBadRequest
	}
	if q.Q != "" && bad == "" {
		// The search and the count of its replay stop when the browser
		// leaves, and take a place in the node's gate (issue 42).
		sctx, done, berr := request.Search(c, u.d.Searches)
		if berr != nil {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(app.SearchRetryAfter))
			bad, status = "search: "+app.ErrorMessage(berr), fiber.StatusTooManyRequests
		} else {
			defer done()
			ctx = sctx
		}
	}
	switch {
	case status == fiber.StatusBadRequest, q.Q != "" && bad != "": // refused: nothing to list
	case q.Q != "":
		res, err = u.d.Store.SearchEvents(ctx, q)
	default:
		res.Rows, res.Next, err = u.d.Store.ListEvents(ctx, q)
	}
	if errors.Is(err, context.Canceled) { // the browser left mid-search: no one reads the page
		return fiber.NewError(fiber.StatusRequestTimeout)
	}
	if err != nil {
		return err
	}
	if res.Stopped && res.SearchedUntil.IsZero() {
		bad = fmt.Sprintf("search: stopped at its budget of %v before it had looked at every event; narrow it by source, since or until", app.DefaultSearchBudget.Time)
	}
	rows, err := u.eventRows(ctx, res.Rows)
	if err != nil {
		return err
	}
	nextURL := ""
	if res.Next > 0 {
		v := url.Values{}
		for _, k := range []string{"source", "topic", "status", "since", "until"} {
			if c.Query(k) != "" {
				v.Set(k, c.Query(k))
			}
		}
		if q.Q != "" {
			v.Set("q", q.Q)
		}
		v.Set("before", strconv.FormatUint(res.Next, 10))
		nextURL = "/events?" + v.Encode()
	}
	window := newSearchWindow(res, u.d.Now(), nextURL, q.Before > 0)
	var sources []string
	for _, s := range u.cfg().Sources {
		sources = append(sources, s.Name)
	}
	var offer *replayOffer
	switch {
	case bad != "":
	case q.Q != "" && res.Next != 0:
		// A search with more to look at (a bbolt search that stopped at
		// its budget, or more than a page): counting its replay could
		// read every body; the confirm page counts when asked.
		offer = u.offerUncounted(c, q)
	default:
		if offer, err = u.offerReplay(ctx, c, q); err != nil {
			return err
		}
	}
	return u.render(c, status, "events", "Events", map[string]any{"Rows": rows, "Next": nextURL, "Q": q, "Window": window,
		"Since": c.Query("since"), "Until": c.Query("until"), "Sources": sources, "Error": bad,
		"Replay": offer, "Replayed": c.Query("replayed"),
		"Statuses": app.EventStates})
}

// eventRow is a row of the events list: the event (its status is one of
// app.EventStates, as the store filters by it), the destinations of its
// deliveries, and for a merged one the event that carries it.
type eventRow struct {
	app.EventSummary
	Destinations []string
	// CarriedBy is, for a merged event, the event whose delivery carries
	// it (0: not known), named by CarrierID.
	CarriedBy uint64
	CarrierID string
}

// eventRows reads the deliveries of each listed event (one read each, a
// page at a time) for the destination column, and for a merged one the
// event that carries it.
func (u *UI) eventRows(ctx context.Context, list []app.EventSummary) ([]eventRow, error) {
	out := make([]eventRow, 0, len(list))
	for _, e := range list {
		row := eventRow{EventSummary: e}
		if e.Status == app.StateMerged {
			by, err := u.d.Store.CarriedBy(ctx, e.Seq)
			if err != nil {
				return nil, err
			}
			if by != 0 {
				names, err := u.d.Store.EventNames(ctx, []uint64{by})
				if err != nil {
					return nil, err
				}
				row.CarriedBy, row.CarrierID = by, names[by].ID
			}
		}
		if e.Status != app.StateUnrouted && e.Status != app.StateMerged && e.Status != app.StateWaiting && e.Status != app.StateUnreadable {
			ds, err := u.d.Store.EventDeliveries(ctx, e.Seq)
			if err != nil {
				return nil, err
			}
			for _, d := range ds {
				if !slices.Contains(row.Destinations, d.Destination) {
					row.Destinations = append(row.Destinations, d.Destination)
				}
			}
		}
		out = append(out, row)
	}
	return out, nil
}

func parseWhen(v string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02", time.RFC3339} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("bad time")
}

type deliveryRow struct {
	*app.Delivery
	History []*app.Attempt
	// Hidden counts the earlier attempts the page leaves out.
	Hidden int
	// Sent is the body its route's transform makes (nil: it goes out
	// with the event's body).
	Sent *sentBody
	// AfterDead is the delivery before this one in its order group when
	// that one is dead (0: none, or not dead).
	AfterDead uint64
	// Waiting says it waits for a retry (pending, due later): the page
	// offers Retry now; Retried that the page comes back from one.
	Waiting, Retried bool
	// Unconfigured says the config in force has no such destination: the
	// delivery is kept, and goes out once a reload names it again.
	Unconfigured bool
}

// sentBody is what a route's transform, as configured now, makes of an
// event: the body its deliveries go out with (or why none can be made).
// An attempt made before the config changed may have sent another.
type sentBody struct {
	Route       string
	ContentType string
	Body        bodyView
	Error       string
}

// sentBodies makes, once per route, the bodies the routes of ds with a
// transform make of e, for the event page; one RuleInput serves them all,
// so the engine parses e's body once. Values of e's secret-looking
// headers a transform copied are masked, as in the header table.
func (u *UI) sentBodies(e *app.Event, ds []*app.Delivery) map[string]*sentBody {
	var in *app.RuleInput
	var out map[string]*sentBody
	for _, d := range ds {
		t := u.cfg().RouteTransform(d.Route)
		if t == nil || out[d.Route] != nil {
			continue
		}
		if in == nil {
			in, out = e.RuleInput(), map[string]*sentBody{}
		}
		sb := &sentBody{Route: d.Route}
		if tr, err := app.ApplyTransform(t, in, u.cfg().Server.MaxBodyBytes); err != nil {
			sb.Error = err.Error()
		} else {
			sb.ContentType = tr.ContentType
			sb.Body = viewBody([]byte(app.MaskSecretValues(string(tr.Body), e.Header)))
		}
		out[d.Route] = sb
	}
	return out
}

func (u *UI) event(c *fiber.Ctx) error {
	ctx := c.UserContext()
	seq, err := strconv.ParseUint(c.Params("seq"), 10, 64)
	if err != nil {
		return fiber.ErrNotFound
	}
	e, err := u.d.Store.Event(ctx, seq)
	if err != nil {
		return err
	}
	if e == nil {
		return fiber.ErrNotFound
	}
	ds, err := u.d.Store.EventDeliveries(ctx, seq)
	if err != nil {
		return err
	}
	sent := u.sentBodies(e, ds)
	cfg := u.cfg()
	var rows []deliveryRow
	for _, d := range ds {
		_, hist, err := u.d.Store.Delivery(ctx, d.ID)
		if err != nil {
			return err
		}
		row := deliveryRow{Delivery: d, History: hist, Sent: sent[d.Route],
			Waiting: d.State == app.Pending && d.Due.After(u.d.Now()), Retried: d.ID == retriedID(c),
			Unconfigured: cfg.DestinationByName(d.Destination) == nil}
		if d.OrderKey != "" { // one more read, for ordered deliveries only
			prev, err := u.d.Store.PreviousInGroup(ctx, d)
			if err != nil {
				return err
			}
			if prev != nil && prev.State == app.Dead {
				row.AfterDead = prev.ID
			}
		}
		if len(hist) > maxAttemptsShown { // the latest ones; replays add attempts without end
			row.History, row.Hidden = hist[len(hist)-maxAttemptsShown:], len(hist)-maxAttemptsShown
		}
		rows = append(rows, row)
	}
	merged, err := u.d.Store.MergedInto(ctx, seq)
	if err != nil {
		return err
	}
	var carrier map[string]any
	if len(ds) == 0 {
		by, err := u.d.Store.CarriedBy(ctx, seq)
		if err != nil {
			return err
		}
		if by != 0 {
			names, err := u.d.Store.EventNames(ctx, []uint64{by})
			if err != nil {
				return err
			}
			n, ok := names[by]
			carrier = map[string]any{"Seq": by, "Name": n.ID, "Gone": !ok, "Topic": n.Topic}
		}
	}
	mergedTotal := len(merged)
	if len(merged) > maxMergedShown { // a long debounce window can fold in thousands
		merged = merged[:maxMergedShown]
	}
	return u.render(c, 200, "event", "Event "+e.ID, map[string]any{"E": e, "Headers": app.MaskHeaders(e.Header, u.cfg().SourceByName(e.Source)),
		"Body": viewBody(e.Body), "Download": "/api/v1/events/" + strconv.FormatUint(seq, 10) + "/body",
		"Deliveries": rows, "Transformed": len(sent) > 0, "Merged": merged, "CarriedBy": carrier, "MergedTotal": mergedTotal, "MergedMore": mergedTotal - len(merged)})
}

// Bounds of the event page's lists, beside those of the body (indent.go).
const (
	maxAttemptsShown = 50
	maxMergedShown   = 200
)

func (u *UI) dead(c *fiber.Ctx) error {
	ctx := c.UserContext()
	after, _ := strconv.ParseUint(c.Query("after"), 10, 64)
	list, total, err := u.d.Store.DeadLetters(ctx, after, 100)
	if err != nil {
		return err
	}
	next := ""
	if len(list) == 100 {
		next = "/dead-letters?after=" + strconv.FormatUint(list[len(list)-1].ID, 10)
	}
	seqs := make([]uint64, 0, len(list))
	for _, d := range list {
		seqs = append(seqs, d.EventSeq)
	}
	names, err := u.d.Store.EventNames(ctx, seqs)
	if err != nil {
		return err
	}
	rows := make([]deadRow, 0, len(list))
	cfg := u.cfg()
	for _, d := range list {
		rows = append(rows, deadRow{Delivery: d, Event: names[d.EventSeq], Unconfigured: cfg.DestinationByName(d.Destination) == nil})
	}
	return u.render(c, 200, "dead", "Dead letters", map[string]any{"List": rows, "Total": total, "Next": next,
		"Done": c.Query("replayed")})
}

// replayAll asks for confirmation first (a form that works without
// JavaScript), then replays every dead delivery.
func (u *UI) replayAll(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if request.PostValue(c, "confirm") != "yes" {
		skipAudit(c)
		n, _ := u.d.Store.CountDead(ctx)
		return u.render(c, 200, "confirm", "Replay all?", map[string]any{"Action": "/dead-letters/replay",
			"Question": fmt.Sprintf("Send all %d dead deliveries again?", n)})
	}
	n, err := u.d.Store.ReplayDead(ctx, u.d.Now())
	if err != nil {
		return err
	}
	c.Locals(AuditDetail, fmt.Sprintf("replayed %d", n))
	u.d.Wake()
	return c.Redirect("/dead-letters?replayed="+strconv.Itoa(n), fiber.StatusSeeOther)
}

func (u *UI) replayOne(c *fiber.Ctx) error {
	ctx := c.UserContext()
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return fiber.ErrNotFound
	}
	if request.PostValue(c, "confirm") != "yes" {
		skipAudit(c)
		d, _, err := u.d.Store.Delivery(ctx, id)
		if errors.Is(err, app.ErrNotFound) {
			return fiber.ErrNotFound
		}
		if err != nil {
			return err
		}
		names, err := u.d.Store.EventNames(ctx, []uint64{d.EventSeq})
		if err != nil {
			return err
		}
		question := fmt.Sprintf("Send delivery %s again?", app.DeliveryName(id, d.Destination, names[d.EventSeq]))
		if d.State == app.Delivered { // the receiver took it once: say so before it gets it twice
			question += fmt.Sprintf(" It was delivered at %s: %s has it already.", d.Updated.UTC().Format("2006-01-02 15:04:05 UTC"), d.Destination)
		}
		return u.render(c, 200, "confirm", "Replay?", map[string]any{"Action": "/deliveries/" + strconv.FormatUint(id, 10) + "/replay",
			"Question": question, "Back": request.SafeNext(request.PostValue(c, "back"))})
	}
	if err := u.d.Store.Replay(ctx, id, u.d.Now()); err != nil {
		if errors.Is(err, app.ErrNotFound) {
			return fiber.ErrNotFound
		}
		return err
	}
	u.d.Wake()
	back := request.SafeNext(request.PostValue(c, "back"))
	if back == "/" {
		back = "/dead-letters?replayed=1"
	}
	return c.Redirect(back, fiber.StatusSeeOther)
}

// destView is a destination as the config page shows it: no secret, no
// header values, no query string (it may carry a token); of a command,
// its program and how many arguments it has, not what they are (one may
// be a token), and the names env gives it, not their values.
type destView struct {
	Name, URL   string
	Program     string
	Args        int
	EnvNames    []string
	Timeout     time.Duration
	Retry       []time.Duration
	Concurrency int
	HasSecret   bool
	HeaderNames []string
}

func (u *UI) config(c *fiber.Ctx) error {
	var dests []destView
	for _, d := range u.cfg().Destinations {
		v := destView{Name: d.Name, Timeout: d.Timeout, Retry: d.Retry, Concurrency: d.Concurrency, HasSecret: d.Secret != nil}
		if d.URL != "" {
			v.URL = app.ShownURL(d.URL) // as check shows it: the query, where a token often rides, is "…"
		}
		if len(d.Command) > 0 {
			v.Program, v.Args = d.Command[0], len(d.Command)-1
			for _, e := range d.Env {
				name, _, _ := strings.Cut(e, "=")
				v.EnvNames = append(v.EnvNames, name)
			}
		}
		for k := range d.Headers {
			v.HeaderNames = append(v.HeaderNames, k)
		}
		sort.Strings(v.HeaderNames)
		dests = append(dests, v)
	}
	type sourceView struct {
		Name, Provider, URL string
		Public              bool
	}
	var sources []sourceView
	cfg := u.cfg()
	for _, s := range cfg.Sources {
		paste, public := cfg.PasteURL(s)
		sources = append(sources, sourceView{Name: s.Name, Provider: s.Provider, URL: paste, Public: public})
	}
	return u.render(c, 200, "config", "Configuration", map[string]any{"C": cfg, "Sources": sources, "Destinations": dests})
}
