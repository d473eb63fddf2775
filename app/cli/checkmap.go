// What `hookbox check` prints after "ok": what goes where. Each source
// with the URL to paste at the platform, each destination with how it is
// reached (a URL without its query, or a program and how many arguments,
// never the arguments: either may hold a secret), each route from its
// source and topics to its destinations, and what is wired to nothing.

package cli

import (
	"fmt"
	"io"
	"strings"

	"hookbox/app"
)

// printWhatGoesWhere writes the sources, destinations and routes of cfg
// to w, and the warnings about them to warn. It returns whether some
// source URL is the listen address rather than public_url.
func printWhatGoesWhere(w, warn io.Writer, cfg *app.Config) (local bool) {
	if len(cfg.Sources) == 0 { // a fresh install's config: not a mistake, the next step
		fmt.Fprintln(w, "no source yet: every webhook gets 404 until a [[source]] names it (the config's comments show one per provider)")
	}
	for _, s := range cfg.Sources {
		url, public := cfg.PasteURL(s)
		local = local || !public
		fmt.Fprintf(w, "source %-16s %-12s POST %s\n", s.Name, s.Provider, url)
	}
	for _, d := range cfg.Destinations {
		fmt.Fprintf(w, "destination %-11s %s\n", d.Name, destinationReach(d))
		fmt.Fprintf(w, "    %s\n", strings.Join(destinationLimits(d), ", "))
	}
	for _, r := range cfg.Routes {
		topics := "every topic"
		if len(r.Topics) > 0 {
			topics = "topics " + strings.Join(r.Topics, ", ")
		}
		fmt.Fprintf(w, "route %-17s from %s (%s) to %s\n", r.Name, r.Source, topics, strings.Join(r.To, ", "))
		for _, line := range routeRules(r) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	for _, s := range cfg.Sources {
		if !takenByRoute(cfg, s.Name) {
			fmt.Fprintf(warn, "warning: source %q is taken by no route: its events are stored and go nowhere (add a [[route]] with source = %q)\n", s.Name, s.Name)
		}
	}
	for _, d := range cfg.Destinations {
		if !namedByRoute(cfg, d.Name) {
			fmt.Fprintf(warn, "warning: destination %q is named by no route: nothing is sent to it (add it to a route's to)\n", d.Name)
		}
	}
	return local
}

// destinationReach says how d is reached: POST and its URL (query
// masked), or the program it runs and how many arguments.
func destinationReach(d *app.Destination) string {
	if len(d.Command) > 0 {
		n := len(d.Command) - 1
		args := fmt.Sprintf("%d arguments", n)
		if n == 1 {
			args = "1 argument"
		}
		return fmt.Sprintf("runs %s with %s", d.Command[0], args)
	}
	reach := "POST " + app.ShownURL(d.URL)
	if d.Secret != nil {
		reach += " (signed)"
	}
	return reach
}

// destinationLimits lists d's retry schedule, rate, concurrency and
// timeout.
func destinationLimits(d *app.Destination) []string {
	retry := "no retry"
	if len(d.Retry) > 0 {
		steps := make([]string, len(d.Retry))
		for i, r := range d.Retry {
			steps[i] = app.ShortDuration(r)
		}
		retry = "retry " + strings.Join(steps, " ")
	}
	rate := "rate unlimited"
	if !d.Rate.IsZero() {
		rate = "rate " + d.Rate.String()
	}
	return []string{retry, rate, fmt.Sprintf("concurrency %d", d.Concurrency), "timeout " + app.ShortDuration(d.Timeout)}
}

// routeRules lists what r sets beyond source, topics and destinations:
// filter, transform, key with its debounce and rate limit, order key.
func routeRules(r *app.Route) []string {
	var out []string
	if r.Filter != nil {
		out = append(out, "filter "+oneLine(r.Filter.String()))
	}
	if r.Transform != nil {
		out = append(out, "transform "+oneLine(r.Transform.String()))
	}
	if r.Key != nil {
		k := "key " + r.Key.String()
		if r.Debounce > 0 {
			k += ", debounce " + app.ShortDuration(r.Debounce)
		}
		if r.RateLimit.N > 0 {
			k += fmt.Sprintf(", rate_limit %d/%s", r.RateLimit.N, app.ShortDuration(r.RateLimit.Window))
		}
		out = append(out, k)
	}
	if r.OrderKey != nil {
		out = append(out, "order_key "+r.OrderKey.String())
	}
	return out
}

// oneLine is an expression written over several lines on one.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func takenByRoute(cfg *app.Config, source string) bool {
	for _, r := range cfg.Routes {
		if r.Source == source {
			return true
		}
	}
	return false
}

func namedByRoute(cfg *app.Config, dest string) bool {
	for _, r := range cfg.Routes {
		for _, to := range r.To {
			if to == dest {
				return true
			}
		}
	}
	return false
}
