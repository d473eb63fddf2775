package ui

import (
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
	}
	var sources []sourceView
	cfg := u.cfg()
	for _, s := range cfg.Sources {
		paste, public := cfg.PasteURL(s)
		sources = append(sources, sourceView{Name: s.Name, Provider: s.Provider, URL: paste, Public: public})
	}
	return u.render(c, 200, "config", "Configuration", map[string]any{"C": cfg, "Sources": sources, "Destinations": dests})
}
