package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"hookbox/app"
	"hookbox/app/fields"
	"hookbox/app/provider"
)

const routeHelp = "Runs the body in FILE (or stdin for -) through the routes of the config as hookbox\n" +
	"would for an event of -source with -topic and the -header lines (repeat it; 'Name: value'),\n" +
	"and prints per route whether it takes the event (source, topic globs, then the filter's\n" +
	"value or its error), its destinations, the debounce and order keys, and the body its\n" +
	"destinations would receive (the transform's, or its error). Nothing is stored or sent;\n" +
	"no signature is needed. Exit 0 whatever the routes say; a bad config exits 1 as check does."

// headerFlags is a repeatable -header 'Name: value'.
type headerFlags []app.HeaderField

func (h *headerFlags) String() string { return fmt.Sprint(len(*h), " headers") }

func (h *headerFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("%q is not 'Name: value'", s)
	}
	*h = append(*h, app.HeaderField{Name: name, Value: strings.TrimSpace(value)})
	return nil
}

func runRoute(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "test" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			c.usage(c.flags(), stdout)
			return 0
		}
		fmt.Fprintln(stderr, "hookbox route: the one subcommand is test\nRun 'hookbox route -h' for usage.")
		return 2
	}
	fs := c.flags()
	opts := configFlags(fs)
	sourceName := fs.String("source", "", "the [[source]] the event comes from (required)")
	topic := fs.String("topic", "", "the event's topic (default: where the provider reads it, e.g. the X-Shopify-Topic header or Stripe's body.type; a topic template of the source applies after)")
	id := fs.String("id", "test-event", "the event id the expressions see as id")
	var headers headerFlags
	fs.Var(&headers, "header", "a request header, 'Name: value' (repeat it)")
	operands, code := c.parse(fs, args[1:], stdout, stderr)
	if code >= 0 {
		return code
	}
	if *sourceName == "" || len(operands) != 1 {
		fmt.Fprintln(stderr, "hookbox route test: give -source NAME and one body file (or - for stdin)\nRun 'hookbox route -h' for usage.")
		return 2
	}
	cfg, src, body, code := sourceBody("route test", opts, *sourceName, operands[0], stdin, stderr)
	if code >= 0 {
		return code
	}
	routeTest(stdout, cfg, src, &app.Inbound{Body: body, Header: headers}, *topic, *id)
	return 0
}

// routeTest prints what each route of src does with the event, in config
// order, with the same matching the receiver uses: source, topic globs,
// then the filter.
func routeTest(w io.Writer, cfg *app.Config, src *app.Source, in *app.Inbound, topic, id string) {
	h := provider.Headers(src.Provider, in)
	if topic == "" {
		topic = providerTopic(src.Provider, in, h)
	}
	if src.Topic != nil {
		topic, _ = src.Topic.Render(fields.Input{Body: in.Body, Header: h, Source: src.Name, Topic: topic})
	}
	fmt.Fprintf(w, "event of source %s, topic %q, id %q, %d bytes\n", src.Name, topic, id, len(in.Body))
	ri := &app.RuleInput{Source: src.Name, Topic: topic, ID: id, Header: in.Header, Body: in.Body}
	fin := fields.Input{Body: in.Body, Header: h, Source: src.Name, Topic: topic}
	sent := map[string]string{} // destination → the first route that takes it
	n := 0
	for _, r := range cfg.Routes {
		if r.Source != src.Name {
			continue
		}
		n++
		fmt.Fprintf(w, "\nroute %s\n", r.Name)
		if !r.Matches(src.Name, topic) {
			fmt.Fprintf(w, "  not taken: topic %q matches none of %s\n", topic, strings.Join(r.Topics, ", "))
			continue
		}
		if r.Filter != nil {
			ok, err := r.Filter.Match(ri)
			switch {
			case err != nil:
				fmt.Fprintf(w, "  not taken: the filter failed (hookbox counts it in filter_errors): %v\n", err)
				continue
			case !ok:
				fmt.Fprintln(w, "  not taken: the filter is false")
				continue
			}
			fmt.Fprintln(w, "  taken: the filter is true")
		} else {
			fmt.Fprintln(w, "  taken")
		}
		var to []string
		fresh := 0
		for _, d := range r.To {
			if first, ok := sent[d]; ok && r.Key == nil {
				to = append(to, fmt.Sprintf("%s (already sent by route %s: once per event)", d, first))
				continue
			}
			if r.Key == nil {
				sent[d] = r.Name
			}
			to = append(to, d)
			fresh++
		}
		fmt.Fprintf(w, "  to: %s\n", strings.Join(to, ", "))
		fmt.Fprintf(w, "  debounce key: %s\n", renderKey(r.Key, fin, "none (delivered at once)", "so delivered at once"))
		fmt.Fprintf(w, "  order key: %s\n", renderKey(r.OrderKey, fin, "none (no order kept)", "so in no order group"))
		if fresh == 0 {
			fmt.Fprintln(w, "  body: that of the earlier routes, which each destination goes with")
			continue
		}
		if r.Transform == nil {
			fmt.Fprintf(w, "  body: as received (%d bytes)\n", len(in.Body))
			continue
		}
		out, ctype, err := r.Transform.Apply(ri, cfg.Server.MaxBodyBytes)
		if err != nil {
			fmt.Fprintf(w, "  body: none, the delivery would go dead: %v\n", err)
			continue
		}
		fmt.Fprintf(w, "  body (%s, %d bytes):\n    %s\n", ctype, len(out), strings.ReplaceAll(string(out), "\n", "\n    "))
	}
	if n == 0 {
		fmt.Fprintf(w, "\nno [[route]] has source %s: the event would be stored unrouted\n", src.Name)
	}
}

// renderKey is a template's value for the event, or why there is none.
func renderKey(t *fields.Template, in fields.Input, none, fallback string) string {
	if t == nil {
		return none
	}
	k, err := t.Render(in)
	if err != nil {
		return fmt.Sprintf("cannot be built from %s (%v), %s", t.String(), err, fallback)
	}
	return fmt.Sprintf("%q", k)
}

// topicHeaders names the header each provider that reads its topic from
// a header reads it from (the body providers are in bodyFields).
var topicHeaders = map[string]string{
	"shopify": "X-Shopify-Topic", "github": "X-GitHub-Event", "woocommerce": "X-WC-Webhook-Topic", "token": "X-Event-Type",
}

// providerTopic is the topic the provider would find in the request
// without -topic: a header, or a field of the body.
func providerTopic(prov string, in *app.Inbound, h provider.Header) string {
	if name, ok := topicHeaders[prov]; ok {
		return h.Get(name)
	}
	if f := bodyFields[prov][1]; f != "" {
		if t, err := fields.Parse("{body." + f + "}"); err == nil {
			topic, _ := t.Render(fields.Input{Body: in.Body, Header: h})
			return topic
		}
	}
	return ""
}
