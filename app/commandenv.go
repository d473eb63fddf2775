// The environment a command destination's program runs in, and what its
// exit status means. Pure rules over domain types; the command sender
// (app/cmdsend) runs the program.

package app

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// DefaultCommandPath is a command's PATH when hookbox has none of its own.
const DefaultCommandPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// The exit statuses of a command that hookbox reads (sysexits.h); any
// other non-zero one is a failed attempt, retried as EX_TEMPFAIL is.
const (
	// ExitDataErr (EX_DATAERR) refuses the delivery for good: it is dead
	// at once, as an HTTP destination's 410.
	ExitDataErr = 65
	// ExitTempFail (EX_TEMPFAIL) asks for the next retry.
	ExitTempFail = 75
)

// CommandEnv is the environment of attempt number attempt of w to dest's
// command: PATH (path, else DefaultCommandPath), then what dest.Env names
// (its PATH, if any, in place of that one), the delivery's metadata as
// HOOKBOX_* variables, and each header of header (what hookbox would send
// over HTTP: Outbound.Header) as HOOKBOX_HEADER_<NAME>, upper-cased, with
// every byte but a letter or digit made '_' (X-Shopify-Topic is
// HOOKBOX_HEADER_X_SHOPIFY_TOPIC); several values of a header are joined
// with ", ". Nothing else of hookbox's own environment goes.
func CommandEnv(path string, dest *Destination, w Work, attempt int, header http.Header) []string {
	if path == "" {
		path = DefaultCommandPath
	}
	env := make([]string, 0, 1+len(dest.Env)+6+len(header))
	hasPath := slices.ContainsFunc(dest.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=") })
	if !hasPath {
		env = append(env, "PATH="+path)
	}
	env = append(env, dest.Env...)
	e := w.Event
	env = append(env,
		"HOOKBOX_EVENT_ID="+e.ID,
		"HOOKBOX_SOURCE="+e.Source,
		"HOOKBOX_TOPIC="+e.Topic,
		"HOOKBOX_DELIVERY_ID="+strconv.FormatUint(w.Delivery.ID, 10),
		"HOOKBOX_ATTEMPT="+strconv.Itoa(attempt),
		"HOOKBOX_WEBHOOK_ID="+MessageID(e.Source, e.ID, dest.Name),
	)
	if e.Origin != "" {
		env = append(env, "HOOKBOX_ORIGIN="+e.Origin) // fetched from the provider's API
	}
	names := make([]string, 0, len(header))
	for name := range header {
		names = append(names, name)
	}
	slices.Sort(names)
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		v := HeaderEnvName(name)
		if seen[v] { // X-A and X_A: Outbound withholds a sender's that stands in for hookbox's
			continue
		}
		seen[v] = true
		env = append(env, v+"="+strings.Join(header[name], ", "))
	}
	return env
}

// HeaderEnvName is the variable a command reads header name from:
// HOOKBOX_HEADER_ and the name upper-cased, every byte but an ASCII
// letter or digit made '_'.
func HeaderEnvName(name string) string {
	b := make([]byte, 0, len("HOOKBOX_HEADER_")+len(name))
	b = append(b, "HOOKBOX_HEADER_"...)
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		default:
			c = '_'
		}
		b = append(b, c)
	}
	return string(b)
}
