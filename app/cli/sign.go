package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"hookbox/app"
	"hookbox/app/fields"
	"hookbox/app/provider"
	"hookbox/app/web"
)

// bodyFields names where providers that read the event id and topic from
// the body find them.
var bodyFields = map[string][2]string{
	"stripe":      {"id", "type"},
	"paddle":      {"event_id", "event_type"},
	"square":      {"event_id", "type"},
	"bigcommerce": {"hash", "scope"},
	"standard":    {"", "type"},
}

func runSign(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := configFlags(fs)
	sourceName := fs.String("source", "", "the [[source]] to sign for (required)")
	topic := fs.String("topic", "", "the event topic, for providers that read it from a header (default: a common one of the provider's, such as push for github; test.event for others)")
	id := fs.String("id", "", "the event id, for providers that read it from a header (default: random)")
	send := fs.Bool("send", false, "post the request to the running server and print its answer")
	shopifyHeaders := fs.String("shopify-headers", provider.ShopifyLegacy, "for a shopify source, the form of Shopify's headers: "+
		"legacy (X-Shopify-*), new (lowercase shopify-*, Shopify's newer form) or both (as Shopify sends today)")
	operands, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if *sourceName == "" || len(operands) != 1 {
		fmt.Fprintln(stderr, "hookbox sign: give -source NAME and one body file (or - for stdin)\nRun 'hookbox sign -h' for usage.")
		return 2
	}
	if err := provider.CheckShopifyHeaders(*shopifyHeaders); err != nil {
		fmt.Fprintf(stderr, "hookbox sign: -shopify-headers: %v\n", err)
		return 2
	}
	cfg, src, body, code := sourceBody("sign", opts, *sourceName, operands[0], stdin, stderr)
	if code >= 0 {
		return code
	}
	if src.Provider != "shopify" && *shopifyHeaders != provider.ShopifyLegacy {
		fmt.Fprintf(stderr, "hookbox sign: -shopify-headers: source %q is %s, not shopify\n", src.Name, src.Provider)
		return 2
	}
	req, err := signRequest(src, body, *id, *topic, time.Now(), provider.SignOptions{ShopifyHeaders: *shopifyHeaders})
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: %v\n", err)
		return 1
	}
	if *send {
		return sendSigned(cfg, src, body, req, stdout, stderr)
	}
	url := src.URL
	if cfg.Server.PublicURL == "" {
		url = cfg.Server.LocalBase() + src.URL
	}
	cmd, err := curlCommand(url, req, body, operands[0])
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, cmd)
	switch src.Provider {
	case "stripe", "paddle", "standard", "bigcommerce":
		fmt.Fprintf(stderr, "hookbox sign: the signature is timestamped: run the command within %v\n", src.Settings.Tolerance)
	}
	return 0
}

// signRequest returns the headers that make body a genuine request for
// src, with id and topic where the provider (or the source's id and topic
// templates) reads them from headers. It then checks the request the way
// the server will, so a body without its event id fails here, clearly.
func signRequest(src *app.Source, body []byte, id, topic string, now time.Time, o provider.SignOptions) (http.Header, error) {
	idHeaders := src.ID.Headers()
	topicHeaders := src.Topic.Headers()
	bodyField, bodyRules := bodyFields[src.Provider]
	idInBody := src.ID == nil && bodyRules && bodyField[0] != ""
	if src.ID != nil {
		idInBody = len(idHeaders) == 0
	}
	if src.Provider == "woocommerce" && src.ID == nil {
		idInBody = true // the id is the body's SHA-256
	}
	if id != "" && idInBody {
		return nil, fmt.Errorf("-id: source %q (%s) takes the event id from the body%s; put it there", src.Name, src.Provider, fieldNote(src.ID, bodyField[0]))
	}
	topicInBody := src.Topic == nil && bodyRules
	if src.Topic != nil {
		topicInBody = len(topicHeaders) == 0
	}
	if topic != "" && topicInBody {
		return nil, fmt.Errorf("-topic: source %q (%s) takes the topic from the body%s; put it there", src.Name, src.Provider, fieldNote(src.Topic, bodyField[1]))
	}
	if id == "" && !idInBody {
		id = randomEventID()
	}
	// Without a topic a route with a topic filter would never match the
	// test event, silently: send the provider's usual one instead.
	if topic == "" && !topicInBody {
		topic = cmp.Or(provider.TestTopic(src.Provider), "test.event")
	}
	signID := id
	if src.ID != nil {
		signID = "" // the id goes into the template's headers instead
	}
	h, err := provider.SignWith(src.Provider, src.Settings, body, src.URL, signID, topic, now, o)
	if err != nil {
		return nil, fmt.Errorf("source %q (%s): %w", src.Name, src.Provider, err)
	}
	// A template may name either form of a Shopify header: fill the one it
	// names only when neither came.
	view := provider.Headers(src.Provider, h)
	for _, name := range idHeaders {
		if view.Get(name) == "" {
			h.Set(name, id)
		}
	}
	for _, name := range topicHeaders {
		if view.Get(name) == "" && topic != "" {
			h.Set(name, topic)
		}
	}
	// What the server does with it: verify, then find the event id.
	v, err := src.Verify(provider.Request{Body: body, Header: h, URL: src.URL}, now)
	if err != nil {
		return nil, fmt.Errorf("source %q (%s): the signed request does not verify: %w", src.Name, src.Provider, err)
	}
	gotTopic := v.Topic
	if src.Topic != nil {
		gotTopic, _ = src.Topic.Render(fields.Input{Body: body, Header: view, Source: src.Name, Topic: v.Topic})
	}
	gotID := v.ID
	if src.ID != nil {
		if gotID, err = src.ID.Render(fields.Input{Body: body, Header: view, Source: src.Name, Topic: gotTopic}); err != nil {
			return nil, fmt.Errorf("source %q: the server would answer 400: no event id: %w (id = %q)", src.Name, err, src.ID.String())
		}
	}
	if gotID == "" {
		return nil, fmt.Errorf("source %q (%s): the server would answer 400: the body has no event id%s", src.Name, src.Provider, fieldNote(nil, bodyField[0]))
	}
	return h, nil
}

// fieldNote names the body field an id or topic comes from, for errors.
func fieldNote(t *fields.Template, field string) string {
	switch {
	case t != nil:
		return fmt.Sprintf(" (template %q)", t.String())
	case field != "":
		return fmt.Sprintf(" (field %q)", field)
	}
	return ""
}

// randomEventID returns a fresh id for a test event.
func randomEventID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead).
	return "test-" + hex.EncodeToString(b[:])
}

// sendSigned posts the signed request to the running server on its listen
// address and prints the status and the answer.
func sendSigned(cfg *app.Config, src *app.Source, body []byte, h http.Header, stdout, stderr io.Writer) int {
	base, client := web.LocalClient(cfg.Server, 30*time.Second)
	url := base + "/in/" + src.Name
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: %v\n", err)
		return 1
	}
	req.Header = h
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox sign: is hookbox running on %s (server.listen in %s)? %v\n", cfg.Server.Listen, cfg.Path, errors.Unwrap(err))
		return 1
	}
	defer resp.Body.Close()
	answer := readAnswer(resp.Body)
	fmt.Fprintf(stdout, "%d %s\n", resp.StatusCode, answer)
	if resp.StatusCode == http.StatusNotFound && unknownSource(answer) {
		fmt.Fprintf(stderr, "hookbox sign: %s\n", unknownSourceHint(cfg, src.Name))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 1
	}
	return 0
}

// unknownSource reports whether answer is hookbox's own 404 to a source
// it does not know (not a proxy's, nor another program's on the port).
func unknownSource(answer string) bool {
	var a struct {
		Error string `json:"error"`
	}
	return json.Unmarshal([]byte(answer), &a) == nil && a.Error == "unknown source"
}

// unknownSourceHint says why the running server answered 404 to source
// name, which is in the config file the command read (cfg; a source not
// in it is refused before anything is sent, naming the file's sources):
// the server has not loaded it, and a reload would.
func unknownSourceHint(cfg *app.Config, name string) string {
	return fmt.Sprintf("the running server does not know source %q: it is in %s but not loaded (added since the server started or last reloaded, or the server runs another file); hookbox reload applies the file", name, cfg.Path)
}

// curlCommand prints the request as a curl command line for a POSIX shell:
// the body from file, or inline through printf when it came from stdin.
func curlCommand(url string, h http.Header, body []byte, file string) (string, error) {
	var b strings.Builder
	if file == "-" {
		if bytes.IndexByte(body, 0) >= 0 {
			return "", errors.New("the body contains NUL bytes, which a shell command cannot carry: save it to a file and pass the file")
		}
		b.WriteString("printf '%s' " + shellQuote(string(body)) + " | ")
	}
	b.WriteString("curl -sS -w '\\n' -X POST " + shellQuote(url))
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range h[name] {
			b.WriteString(" \\\n  -H " + shellQuote(name+": "+v))
		}
	}
	if file == "-" {
		b.WriteString(" \\\n  --data-binary @-")
	} else {
		b.WriteString(" \\\n  --data-binary @" + shellQuote(file))
	}
	return b.String(), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
