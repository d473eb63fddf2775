// Package httpsend sends deliveries over HTTP: its own HTTP/1.1 client, the
// connections it dials (cut at shutdown), the request hookbox builds and
// what it keeps of the answer. It is the dispatcher's app.Sender for
// destinations with a URL.
package httpsend

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hookbox/app"
)

var _ app.Sender = (*Sender)(nil)

// Sender sends deliveries over HTTP/1.1 with a client of its own, in the
// caller's goroutine: one write for the request, one buffered reader for
// the answer, which ends where HTTP says it ends (its length, its last
// chunk, the close of a close-delimited or HTTP/1.0 answer), read as Go's
// transport reads it.
// It sends only to the configured URL: no proxy, no redirect followed (a
// 3xx is a failed attempt), keep-alive, no Accept-Encoding (the answer is
// read as sent, never inflated). Its connections are dialled by connSet,
// so that shutdown can cut them.
type Sender struct {
	// out builds the headers for the config in force (Apply).
	out     atomic.Pointer[app.Outbound]
	version string
	conns   *connSet // its connections, cut at shutdown
	idle    *pool
	targets sync.Map // a destination URL → its *target, parsed once
	// roots are the certificate authorities https destinations are
	// checked against: nil for the system's (a test's own otherwise).
	roots *x509.CertPool
}

// New builds the HTTP sender for cfg's destinations; version goes into
// the User-Agent.
func New(cfg *app.Config, version string) *Sender {
	dests := cfg.Destinations
	idle := 1
	for _, d := range dests { // destinations may share a host
		idle += d.Concurrency
	}
	s := &Sender{version: version, conns: newConnSet(dests), idle: newPool(idle)}
	s.out.Store(app.NewOutbound(cfg, version))
	return s
}

// Apply puts cfg's sources and destinations in force for the sends that
// start from now on. The pool of idle connections keeps the size it was
// given at start.
func (s *Sender) Apply(cfg *app.Config) {
	s.out.Store(app.NewOutbound(cfg, s.version))
	s.conns.setTimeouts(cfg.Destinations)
}

// Send posts req's event to its destination once (twice when a reused
// connection dropped it before any answer came) and keeps the start of
// the answer. The body is the one req's transform made, when it has one.
func (s *Sender) Send(ctx context.Context, req app.SendRequest) app.Answer {
	res := s.post(ctx, req.Dest, req.Work.Event, req.Transformed, req.Attempt, req.Now)
	res.Answered = res.Status != 0
	res.Delivered = res.Err == nil && res.Status >= 200 && res.Status < 300
	return res
}

// Stop cuts the dials in progress and refuses new ones.
func (s *Sender) Stop() { s.conns.stopDials() }

// Close closes every open connection and every later one.
func (s *Sender) Close() { s.idle.close(); s.conns.closeAll() }

// target is dest's URL, parsed.
func (s *Sender) target(url string) (*target, error) {
	if t, ok := s.targets.Load(url); ok {
		return t.(*target), nil
	}
	t, err := parseTarget(url)
	if err != nil {
		return nil, err
	}
	if t.tls != nil {
		t.tls.RootCAs = s.roots
	}
	s.targets.Store(url, t)
	return t, nil
}

func (s *Sender) post(ctx context.Context, dest *app.Destination, e *app.Event, t *app.Transformed, attempt int, now time.Time) app.Answer {
	if ctx.Err() != nil { // shutting down
		return app.Answer{Err: context.Cause(ctx)}
	}
	header, err := s.out.Load().Header(dest, e, t, attempt, now)
	if err != nil {
		return app.Answer{Err: err}
	}
	body := e.Body
	if t != nil {
		body = t.Body
	}
	to, err := s.target(dest.URL)
	if err != nil {
		return app.Answer{Err: err}
	}
	bp := writeBufs.Get().(*[]byte)
	req, err := appendRequest((*bp)[:0], to, header, len(body))
	defer func() {
		if cap(req) <= maxPooledWrite {
			*bp = req[:0]
			writeBufs.Put(bp)
		}
	}()
	if err != nil {
		return app.Answer{Err: err}
	}
	if len(body) <= inlineBody { // one write for both
		req, body = append(req, body...), nil
	}
	// The deadline covers connect, write, the answer's header and as much
	// of its body as is read.
	deadline := time.Now().Add(dest.Timeout)
	x, err := s.exchange(ctx, to, req, body, deadline, dest.Timeout)
	if ctx.Err() != nil && x.head.status == 0 {
		return app.Answer{Err: context.Cause(ctx)}
	}
	if err != nil {
		return app.Answer{Err: app.SendError(ctx, err, dest.Timeout)}
	}
	res := app.Answer{Status: x.head.status, Note: x.note, Refused: x.head.status == http.StatusGone}
	if st := x.head.status; st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable {
		res.RetryAfter = app.RetryAfter(x.head.retryAfter, now)
	}
	if x.head.status >= 300 && x.head.status < 400 {
		res.Err = redirectError(x.head.location)
	}
	res.Snippet = inflateSnippet(x.head.encoding, x.snippet)
	return res
}

// exchange sends req and body to t on an idle connection, or a fresh one.
// A connection that had carried a request before and failed before any
// byte of an answer came (the destination's keep-alive ran out as this
// send began, or it restarted) did not get the request acted on, or the
// destination dedupes by webhook-id: the request goes once more on a
// fresh connection, and only what that gives is the attempt. A fresh
// connection's failure is the attempt's.
func (s *Sender) exchange(ctx context.Context, t *target, req, body []byte, deadline time.Time, timeout time.Duration) (exchange, error) {
	c := s.idle.get(t.addr)
	if c != nil {
		x, err := c.roundTrip(ctx, s.idle, req, body, deadline, timeout)
		if err == nil || x.answered || ctx.Err() != nil || !time.Now().Before(deadline) {
			return x, err
		}
	}
	c, err := s.dial(ctx, t, deadline)
	if err != nil {
		return exchange{}, err
	}
	return c.roundTrip(ctx, s.idle, req, body, deadline, timeout)
}

// inflateSnippet returns the start of a gzip-compressed answer as text,
// when a destination's headers asked for compression (hookbox sends no
// Accept-Encoding of its own): at most app.MaxResponseSnippet bytes of it,
// made from the compressed bytes that were kept, so the work is bounded
// whatever they claim to expand to. Anything else, or bytes that do not
// inflate, is kept as received.
func inflateSnippet(encoding string, snippet []byte) []byte {
	if len(snippet) == 0 || !strings.EqualFold(strings.TrimSpace(encoding), "gzip") {
		return snippet
	}
	zr, err := gzip.NewReader(bytes.NewReader(snippet))
	if err != nil {
		return snippet
	}
	buf := make([]byte, app.MaxResponseSnippet)
	n, err := io.ReadFull(zr, buf)
	if n == 0 || err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return snippet
	}
	return buf[:n]
}

// maxLocation bounds how much of a redirect's Location an attempt records.
const maxLocation = 256

// redirectError is the error of an attempt answered with a redirect:
// never followed, so a destination cannot point hookbox at another host.
func redirectError(location string) error {
	if location == "" {
		return errors.New("redirects are not followed (no Location)")
	}
	if len(location) > maxLocation {
		location = strings.ToValidUTF8(location[:maxLocation], "") + "…"
	}
	return fmt.Errorf("redirects are not followed (Location: %s)", location)
}
