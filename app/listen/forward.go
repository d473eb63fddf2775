package listen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"
	"unicode"

	"hookbox/app"
	"hookbox/app/provider"
)

// hopHeaders mean something for one connection only, or are the
// client's to set: never forwarded.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Upgrade": true, "Host": true, "Content-Length": true,
}

// forwardHeader is the header the local app gets for an event's headers
// before it is signed: all of them as the stream sent them (as received,
// but no signature or credential) but the hop-by-hop ones, Host and
// Content-Length (and what Connection names).
func forwardHeader(fields [][2]string) http.Header {
	drop := map[string]bool{}
	for _, f := range fields {
		if textproto.CanonicalMIMEHeaderKey(f[0]) == "Connection" {
			for _, n := range strings.Split(f[1], ",") {
				drop[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(n))] = true
			}
		}
	}
	h := http.Header{}
	for _, f := range fields {
		k := textproto.CanonicalMIMEHeaderKey(f[0])
		if hopHeaders[k] || drop[k] || !validHeader(f[0], f[1]) {
			continue
		}
		h[k] = append(h[k], f[1])
	}
	if _, ok := h["User-Agent"]; !ok {
		// Go's own User-Agent is not the platform's: send none.
		h["User-Agent"] = []string{""}
	}
	if _, ok := h["Idempotency-Key"]; !ok {
		// Present and empty: not sent, but it lets the transport send the
		// POST again on a fresh connection when a kept-alive one was closed
		// before any of the answer came.
		h["Idempotency-Key"] = nil
	}
	return h
}

// validHeader reports whether a header field can be written on the wire
// as it is (the remote is a peer: a name or value it sends could break the
// request, which Go would refuse anyway, as a whole).
func validHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || c == ':' {
			return false
		}
	}
	return !strings.ContainsAny(value, "\r\n\x00")
}

// forwardEvent POSTs ev to the local URL and prints its line: the local
// time, source, topic, event id, the local answer (or error) and the time
// it took. A failed forward is printed and not tried again.
//
// A request it cannot sign (the source is no longer configured on the
// remote, or has a provider this hookbox does not know) goes unsigned, and
// its line says so.
func (l *Listener) forwardEvent(ctx context.Context, ev *app.StreamEvent) {
	start := time.Now()
	h, unsigned := l.sign(ev)
	answer := l.post(ctx, ev, h)
	took := time.Since(start)
	topic := ev.Topic
	if topic == "" {
		topic = "-"
	}
	l.printf("%s  %s  %s  %s  → %s  %d ms%s", l.clock(), printable(ev.Source), printable(topic), printable(ev.ID), answer, took.Milliseconds(), unsigned)
}

// sign returns the headers of ev's forward, signed with the listen secret
// in the scheme of ev's provider (provider.Resign), or unsigned with the
// reason, as the end of its line.
func (l *Listener) sign(ev *app.StreamEvent) (http.Header, string) {
	h := forwardHeader(ev.Header)
	if ev.Provider == "" {
		return h, "  (unsigned: the remote named no provider for this source)"
	}
	s := provider.Settings{Secrets: [][]byte{[]byte(l.Secret)}}
	if sig := ev.Signature; sig != nil {
		s.SignatureHeader, s.SignatureEncoding, s.SignaturePrefix = sig.Header, sig.Encoding, sig.Prefix
	}
	signed, err := provider.Resign(ev.Provider, s, ev.Body, l.Forward, ev.ID, ev.Topic, h, l.Now())
	if err != nil {
		// The error names the provider or a setting, never the secret.
		return h, "  (unsigned: " + printable(err.Error()) + ")"
	}
	return signed, ""
}

// post sends ev with the header h and returns the answer as printed:
// "200 OK", or "error: …".
func (l *Listener) post(ctx context.Context, ev *app.StreamEvent, h http.Header) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.Forward, bytes.NewReader(ev.Body))
	if err != nil {
		return "error: " + err.Error()
	}
	req.Header = h
	resp, err := l.forward.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "error: " + err.Error()
	}
	// Read a little of the answer (so the connection can be kept), never
	// all of what a local app may send.
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, answerMax))
	resp.Body.Close()
	status := printable(resp.Status)
	if err != nil {
		return fmt.Sprintf("%s (the answer's body failed: %v)", status, err)
	}
	return status
}

// printable is s with the runes that could drive a terminal replaced:
// what the remote sends is a peer's.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
}
