// One attempt of a delivery over HTTP: the client, its connections, the
// request hookbox builds and what it keeps of the answer.

package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"hookbox/app/provider"
)

// result is what one HTTP attempt produced.
type result struct {
	status     int
	snippet    []byte
	retryAfter time.Duration
	err        error
	// note says why the answer was not read to its end, when it was not;
	// the status stands.
	note string
}

// hopHeaders are not forwarded: they describe the inbound connection, or
// hookbox sets them itself.
var hopHeaders = map[string]bool{
	"content-length": true, "host": true, "connection": true, "transfer-encoding": true,
	"user-agent": true, "accept-encoding": true, "webhook-id": true, "webhook-timestamp": true,
	"webhook-signature": true,
}

// MessageID is the webhook-id of the delivery of event (source, id) to
// dest: stable across retries and replays, so the receiver can dedupe.
func MessageID(source, id, dest string) string {
	h := sha256.Sum256([]byte(source + "\x00" + id + "\x00" + dest))
	return "msg_" + hex.EncodeToString(h[:16])
}

// newSendClient is the HTTP client deliveries go out with. It sends only
// to the configured URL: no proxy from the environment, no redirect
// followed (a 3xx is a failed attempt), HTTP/1.1 with keep-alive. It does
// the request in the calling goroutine, which costs about half of what
// net/http's client costs per delivery (BENCHMARKS.md). It opens its
// connections with dial.
func newSendClient(dests []*Destination, dial fasthttp.DialFunc) *fasthttp.Client {
	conns := 1
	for _, d := range dests { // destinations may share a host
		conns += d.Concurrency
	}
	return &fasthttp.Client{
		Dial:                     dial,
		NoDefaultUserAgentHeader: true,
		MaxConnsPerHost:          conns,
		MaxIdleConnDuration:      90 * time.Second,
		ReadBufferSize:           16 << 10, // the longest response header accepted
		WriteBufferSize:          16 << 10,
		// Without a limit the client reads a whole answer of any declared
		// Content-Length into memory before post sees it (4 GiB for a
		// hostile destination). With it, a longer answer is streamed to
		// post, which reads it bounded (readAnswer).
		MaxResponseBodySize: MaxResponseSnippet,
		StreamResponseBody:  true, // status first; the body is read by post, bounded
		// A POST is not retried on another connection by the client: the
		// dispatcher's schedule decides when to try again.
		RetryIf: func(*fasthttp.Request) bool { return false },
	}
}

// connSet keeps the send client's open connections, so that shutdown can
// cut the sends in flight; after stopDials it cuts the dials in progress
// and refuses new ones.
type connSet struct {
	// timeouts is each destination address's connect timeout: its
	// destination's timeout, as fasthttp's client gives when it dials
	// itself (the longest where destinations share an address).
	timeouts map[string]time.Duration
	// dialCtx ends when the stop begins (stopDials); stopped says so
	// without a lock, for every send.
	dialCtx    context.Context
	cancelDial context.CancelFunc
	stopped    atomic.Bool
	mu         sync.Mutex
	open       map[*trackedConn]struct{}
	closed     bool
}

func newConnSet(dests []*Destination) *connSet {
	s := &connSet{timeouts: map[string]time.Duration{}, open: map[*trackedConn]struct{}{}}
	s.dialCtx, s.cancelDial = context.WithCancel(context.Background())
	for _, d := range dests {
		u, err := url.Parse(d.URL)
		if err != nil {
			continue // the config refuses such URLs
		}
		addr := fasthttp.AddMissingPort(strings.ToLower(u.Host), u.Scheme == "https")
		s.timeouts[addr] = max(s.timeouts[addr], d.Timeout)
	}
	return s
}

// errStopping is the error of a dial cut or refused by the stop.
var errStopping = errors.New("shutting down")

// dial connects over IPv4 as fasthttp's own dial does, tracked, and cut
// when the stop begins.
func (s *connSet) dial(addr string) (net.Conn, error) {
	timeout := s.timeouts[addr]
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c, err := (&net.Dialer{Timeout: timeout}).DialContext(s.dialCtx, "tcp4", addr)
	if err != nil {
		if s.stopping() {
			return nil, errStopping
		}
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.stopping() {
		c.Close()
		return nil, errStopping
	}
	tc := &trackedConn{Conn: c, set: s}
	s.open[tc] = struct{}{}
	return tc, nil
}

// stopDials cuts the dials in progress and refuses new ones.
func (s *connSet) stopDials() {
	s.stopped.Store(true)
	s.cancelDial()
}

// stopping reports whether the stop began: no dial is made any more.
func (s *connSet) stopping() bool { return s.stopped.Load() }

// closeAll closes every open connection and every later one.
func (s *connSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	open := s.open
	s.open = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range open {
		c.Conn.Close()
	}
}

// trackedConn is a send connection that leaves its set when closed.
type trackedConn struct {
	net.Conn
	set *connSet
}

func (c *trackedConn) Close() error {
	c.set.mu.Lock()
	delete(c.set.open, c)
	c.set.mu.Unlock()
	return c.Conn.Close()
}

func (d *Dispatcher) post(ctx context.Context, dest *Destination, w Work, attempt int) result {
	if ctx.Err() != nil { // shutting down
		return result{err: context.Cause(ctx)}
	}
	e := w.Event
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(dest.URL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetNoDefaultContentType(true) // the sender's Content-Type, or none
	for _, h := range e.Header {
		if !hopHeaders[strings.ToLower(h.Name)] {
			req.Header.Add(h.Name, h.Value)
		}
	}
	for k, v := range dest.Headers {
		req.Header.Set(k, v)
	}
	now := d.Now()
	msgID := MessageID(e.Source, e.ID, dest.Name)
	req.Header.Set("User-Agent", "hookbox/"+d.Version)
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	if dest.Secret != nil {
		sig, err := provider.Sign("standard", provider.Settings{Secrets: [][]byte{dest.Secret}}, e.Body, "", msgID, "", now)
		if err != nil {
			return result{err: errors.New("cannot sign with the destination secret")}
		}
		req.Header.Set("webhook-signature", sig.Get("webhook-signature"))
	}
	req.Header.Set("X-Hookbox-Source", e.Source)
	req.Header.Set("X-Hookbox-Event-Id", e.ID)
	req.Header.Set("X-Hookbox-Topic", e.Topic)
	req.Header.Set("X-Hookbox-Attempt", strconv.Itoa(attempt))
	req.SetBodyRaw(e.Body)

	// The client's deadline (dest.Timeout from here) stays on the
	// connection while the body is read below: connect, write, headers and
	// body all end by then.
	err := d.client.DoTimeout(req, resp, dest.Timeout)
	if err != nil && !errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return result{err: sendError(err, dest.Timeout)}
	}
	res := result{status: resp.StatusCode(), retryAfter: retryAfter(string(resp.Header.Peek("Retry-After")), now)}
	if err != nil {
		// The headers came, then a body without a length that runs on past
		// what is kept: the client read MaxResponseSnippet+1 bytes of it and
		// closed the connection. The status stands, as for any long answer.
		b := resp.Body()
		res.snippet, res.note = bytes.Clone(b[:min(len(b), MaxResponseSnippet)]), answerTooLong
		return res
	}
	res.snippet, res.note = readAnswer(resp, dest.Timeout)
	return res
}

// maxDrain is how much of an answer past the kept snippet is read, and
// thrown away, so that its connection can carry the next delivery; a
// longer answer is not read: its connection is closed instead.
const maxDrain = 64 << 10

// answerTooLong notes an attempt whose answer was cut because it was longer
// than hookbox reads.
const answerTooLong = "answer longer than hookbox reads: the rest was not read, the connection closed"

// readAnswer keeps the first MaxResponseSnippet bytes of resp's body, reads
// at most maxDrain more, and closes the connection unless the body ended
// within that, whatever Content-Length said. The note says why an answer
// was cut ("" when it was read whole). The connection's deadline (timeout)
// bounds the time.
func readAnswer(resp *fasthttp.Response, timeout time.Duration) (snippet []byte, note string) {
	defer resp.CloseBodyStream() // releases the connection, or closes it
	body := resp.BodyStream()
	if body == nil { // no body at all (204, 304)
		return nil, ""
	}
	snippet, err := io.ReadAll(io.LimitReader(body, MaxResponseSnippet))
	if err == nil {
		var n int64
		n, err = io.Copy(io.Discard, io.LimitReader(body, maxDrain+1))
		if err == nil && n > maxDrain {
			resp.SetConnectionClose()
			return snippet, answerTooLong
		}
	}
	if err != nil {
		resp.SetConnectionClose() // the rest of the answer may still come
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() || errors.Is(err, fasthttp.ErrTimeout) {
			return snippet, fmt.Sprintf("answer cut at the %v timeout", timeout)
		}
		return snippet, "answer cut: " + sendError(err, timeout).Error()
	}
	return snippet, ""
}

// sendError turns a client error into a short text without the URL, which
// may carry a credential in its query.
func sendError(err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("no answer within %v", timeout)
		}
		err = ue.Err
	}
	var te interface{ Timeout() bool }
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || errors.As(err, &te) && te.Timeout() {
		return fmt.Errorf("no answer within %v", timeout)
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && string(rh.RecordHeader[:]) == "HTTP/" {
		return errors.New("server gave HTTP response to HTTPS client")
	}
	return err
}
