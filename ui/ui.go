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
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/request"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Static returns the static files (CSS, the refresh script) to serve under
// /static/.
func Static() fs.FS { sub, _ := fs.Sub(staticFS, "static"); return sub }

// Store is what the pages read of a store, and the replays and retries
// their buttons start.
type Store interface {
	app.ReadModel
	app.FigureStore
	app.ReplayStore
	app.ReplayQueryStore
}

// Deps are what the pages are built from.
type Deps struct {
	// Running is the config in force, read per page (nil: Config, always).
	Running *app.Running
	Config  *app.Config
	Store   Store
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
	// Access backs the admin's Audit and Team pages (nil: empty).
	Access *access.Service
	// Who is the audit actor of a request (the Team page's changes).
	Who func(c *fiber.Ctx) app.Who
	// Quarantine backs the Quarantine page (nil: 404).
	Quarantine app.QuarantineStore
	// Recheck checks a source's quarantine again with the secrets in
	// force, the page's Recheck now (nil: that button answers 404).
	Recheck func(ctx context.Context, source string) (app.QuarantineRecheck, error)
	// Searches bounds the body searches that run at once (nil: a gate of
	// app.NewSearchGate's defaults, this UI's own).
	Searches *app.SearchGate
	// Upstream, when set, gives each source's last upstream check for the
	// configuration page.
	Upstream app.Upstreams
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
	for _, page := range []string{"overview", "destinations", "events", "event", "dead", "confirm", "replay", "config", "login", "audit", "team", "quarantine"} {
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
	add(fiber.MethodGet, "/destinations", u.destinations) // destinations.go
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
	add(fiber.MethodGet, "/quarantine", u.quarantine) // quarantine.go
	add(fiber.MethodPost, "/sources/:name/quarantine/recheck", u.recheckQuarantine)
	add(fiber.MethodPost, "/sources/:name/quarantine/clear", u.clearQuarantine)
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
	// Can says which buttons and links the user may use (canOf).
	Can  map[string]bool
	Data any
}

// CanActions names, for the pages' templates, the action of app's table
// of roles behind each button and link that not everyone may use: a
// template shows one under {{if .Can.NAME}}, and the server checks the
// same action again on each request.
var CanActions = map[string]app.Action{
	"Replay":           app.ActReplay,
	"ReplayAll":        app.ActReplayDead,
	"ReplayQuery":      app.ActReplayQuery,
	"Retry":            app.ActRetry,
	"RetryDestination": app.ActRetryDestination,
	"Pause":            app.ActPause,
	"Resume":           app.ActResume,
	"Backup":           app.ActDownloadBackup,
	"Audit":            app.ActReadAudit,
	"Team":             app.ActManageTeam,
	"Quarantine":       app.ActReadQuarantine,
	"Recheck":          app.ActRecheck,
	"ClearQuarantine":  app.ActClearQuarantine,
}

// canOf reads what id may do from app's table: CanActions' names, each
// true when id may do its action.
func canOf(id app.Identity) map[string]bool {
	can := make(map[string]bool, len(CanActions))
	for name, a := range CanActions {
		can[name] = app.Permits(id.Role, id.Token, a)
	}
	return can
}

func (u *UI) render(c *fiber.Ctx, status int, name, title string, data any) error {
	ctx := c.UserContext()
	csrf, _ := c.Locals("csrf").(string)
	dead, _ := u.d.Store.CountDead(ctx)
	p := page{Title: title, CSRF: csrf, Nav: name, Dead: dead, Data: data,
		Loaded: u.d.Running.Loaded(), Refused: u.d.Running.Refused()}
	if id, ok := c.Locals("identity").(app.Identity); ok {
		p.User, p.Role, p.Can = id.Name, id.Role.String(), canOf(id)
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
