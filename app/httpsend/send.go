// Package httpsend sends deliveries over HTTP: Go's transport, the
// connections it dials (cut at shutdown), the request hookbox builds and
// what it keeps of the answer. It is the dispatcher's app.Sender for
// destinations with a URL.
package httpsend

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hookbox/app"
)

var _ app.Sender = (*Sender)(nil)

// Sender sends deliveries over HTTP with Go's own transport, which ends
// an answer where HTTP says it ends (its length, its last chunk, the close
// of a close-delimited or HTTP/1.0 answer).
// It sends only to the configured URL: no proxy from the environment, no
// redirect followed (RoundTrip never follows one; a 3xx is a failed
// attempt), HTTP/1.1 with keep-alive, no Accept-Encoding (the answer is
// read as sent, never inflated). Its connections are dialled by connSet,
// so that shutdown can cut them.
type Sender struct {
	// out builds the headers for the config in force (Apply).
	out     atomic.Pointer[app.Outbound]
	version string
	conns   *connSet // its connections, cut at shutdown
	reuse   *http.Transport
	// fresh makes the one resend of a request that a reused connection
	// dropped before any byte of an answer: always on a new connection.
	fresh *http.Transport
}

// New builds the HTTP sender for cfg's destinations; version goes into
// the User-Agent.
func New(cfg *app.Config, version string) *Sender {
	dests := cfg.Destinations
	conns := newConnSet(dests)
	idle := 1
	for _, d := range dests { // destinations may share a host
		idle += d.Concurrency
	}
	transport := func(keepAlive bool) *http.Transport {
		return &http.Transport{
			Proxy:                  nil,
			DialContext:            conns.dial,
			DisableCompression:     true,
			DisableKeepAlives:      !keepAlive,
			MaxIdleConns:           idle,
			MaxIdleConnsPerHost:    idle,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: app.MaxAnswerHeader,
			// HTTP/1.1 only: an empty map turns HTTP/2 off over TLS.
			TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
			WriteBufferSize: 16 << 10,
			ReadBufferSize:  4 << 10,
		}
	}
	s := &Sender{version: version, conns: conns, reuse: transport(true), fresh: transport(false)}
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

// attemptTrace is what the transport tells of one request: whether its
// last connection had carried a request before, and whether any byte of
// an answer came.
type attemptTrace struct {
	reused, answered atomic.Bool
}

func (t *attemptTrace) gotConn(info httptrace.GotConnInfo) { t.reused.Store(info.Reused) }
func (t *attemptTrace) gotFirstByte()                      { t.answered.Store(true) }

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
func (s *Sender) Close() { s.conns.closeAll() }

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
	// The deadline covers connect, write, the answer's header and as much
	// of its body as is read below.
	ctx, cancel := context.WithTimeout(ctx, dest.Timeout)
	defer cancel()
	var tr attemptTrace
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: tr.gotConn, GotFirstResponseByte: tr.gotFirstByte})
	req, err := newPost(ctx, dest.URL, header, body)
	if err != nil {
		return app.Answer{Err: errors.New("the destination URL is not valid")}
	}
	resp, err := s.reuse.RoundTrip(req)
	if err != nil && tr.reused.Load() && !tr.answered.Load() && ctx.Err() == nil {
		// A connection that had carried a request before was closed
		// before any of the answer came (the destination's keep-alive ran
		// out as this send began, or it restarted): the destination did
		// not act on it, or it dedupes by webhook-id. Once more, on a
		// fresh connection; only what that gives is the attempt. Go's
		// transport does this itself for most such cases, not for a
		// write cut short on a large body.
		if req, err = newPost(ctx, dest.URL, header, body); err == nil {
			resp, err = s.fresh.RoundTrip(req)
		}
	}
	if err != nil {
		return app.Answer{Err: app.SendError(ctx, err, dest.Timeout)}
	}
	res := app.Answer{Status: resp.StatusCode, RetryAfter: app.RetryAfter(resp.Header.Get("Retry-After"), now)}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		res.Err = redirectError(resp.Header.Get("Location"))
	}
	res.Snippet, res.Note = readAnswer(ctx, resp.Body, resp.ContentLength, dest.Timeout)
	res.Snippet = inflateSnippet(resp.Header.Get("Content-Encoding"), res.Snippet)
	return res
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

// newPost is a POST of body to target with header, under ctx. The body
// can be sent again (GetBody), and an Idempotency-Key in header tells the
// transport that it may be.
func newPost(ctx context.Context, target string, header http.Header, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header
	return req, nil
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

// maxDrain is how much of an answer past the kept snippet is read, and
// thrown away, so that its connection can carry the next delivery; a
// longer answer is not read: its connection is closed instead.
const maxDrain = 64 << 10

// snippetBufs hold the start of an answer while it is read (and one byte
// more, to see whether the answer goes on past the drain).
var snippetBufs = sync.Pool{New: func() any { return new([app.MaxResponseSnippet + 1]byte) }}

// answerTooLong notes an attempt whose answer was cut because it was longer
// than hookbox reads.
const answerTooLong = "answer longer than hookbox reads: the rest was not read, the connection closed"

// readAnswer keeps the first app.MaxResponseSnippet bytes of body, reads at
// most maxDrain more (none when its declared length is more than that),
// and closes it: the transport keeps the connection
// for the next delivery when the answer ended within that (its length,
// its last chunk), and closes it otherwise, whatever Content-Length said.
// The note says why an answer was cut ("" when it was read whole). ctx's
// deadline (timeout) bounds the time.
func readAnswer(ctx context.Context, body io.ReadCloser, length int64, timeout time.Duration) (snippet []byte, note string) {
	defer body.Close() // before its end: the transport closes the connection
	buf := snippetBufs.Get().(*[app.MaxResponseSnippet + 1]byte)
	defer snippetBufs.Put(buf)
	n, err := io.ReadFull(body, buf[:app.MaxResponseSnippet])
	if n > 0 {
		snippet = bytes.Clone(buf[:n])
	}
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return snippet, ""
	case err == nil && length > app.MaxResponseSnippet+maxDrain:
		return snippet, answerTooLong // declared longer than is read: not read on
	case err == nil:
		var drained int64
		drained, err = io.Copy(io.Discard, io.LimitReader(body, maxDrain))
		if err == nil && drained == maxDrain {
			if n, _ := body.Read(buf[app.MaxResponseSnippet:]); n > 0 {
				return snippet, answerTooLong
			}
		}
		if err == nil {
			return snippet, ""
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return snippet, fmt.Sprintf("answer cut at the %v timeout", timeout)
	}
	return snippet, "answer cut: " + app.SendError(ctx, err, timeout).Error()
}
