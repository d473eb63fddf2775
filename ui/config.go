package ui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

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
		// Upstream says what the last upstream check found ("": no
		// [source.upstream]); Checked is when it ran (zero: none yet).
		Upstream string
		Checked  time.Time
		Failed   bool
	}
	var sources []sourceView
	cfg := u.cfg()
	for _, s := range cfg.Sources {
		paste, public := cfg.PasteURL(s)
		v := sourceView{Name: s.Name, Provider: s.Provider, URL: paste, Public: public}
		if s.Upstream != nil && u.d.Upstream != nil {
			v.Upstream = "not checked yet"
			if last, err := u.d.Upstream.LastCheck(c.UserContext(), s.Name); err != nil {
				v.Upstream = "the last check cannot be read"
			} else if last != nil {
				v.Upstream, v.Checked, v.Failed = upstreamWords(last), last.Finished, !last.OK()
			}
		}
		sources = append(sources, v)
	}
	return u.render(c, 200, "config", "Configuration", map[string]any{"C": cfg, "Sources": sources, "Destinations": dests})
}

// upstreamWords says in a few words what an upstream check found and
// did; a failure's reason is the operators' (the API, hookbox upstream
// check), not the page's.
func upstreamWords(c *app.UpstreamCheck) string {
	var parts []string
	switch {
	case c.Repaired:
		parts = append(parts, "was disabled, turned on again")
	case c.Subscription != "":
		parts = append(parts, "subscription "+c.Subscription)
	}
	if c.Fetched > 0 {
		parts = append(parts, fmt.Sprintf("%d fetched", c.Fetched))
	}
	if c.Redelivered > 0 {
		parts = append(parts, fmt.Sprintf("%d asked again", c.Redelivered))
	}
	if !c.OK() {
		parts = append(parts, "failed: see hookbox upstream check "+c.Source)
	}
	if len(parts) == 0 {
		return "checked"
	}
	return strings.Join(parts, "; ")
}
