// One attempt of a delivery over HTTP: the client, its connections, the
// request hookbox builds and what it keeps of the answer.

package app

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

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

// MessageID is the webhook-id of the delivery of event (source, id) to
// dest: stable across retries and replays, so the receiver can dedupe.
func MessageID(source, id, dest string) string {
	h := sha256.Sum256([]byte(source + "\x00" + id + "\x00" + dest))
	return "msg_" + hex.EncodeToString(h[:16])
}

// maxAnswerHeader is the longest response header accepted: a destination
// that sends more (an endless header) fails the attempt.
const maxAnswerHeader = 16 << 10

// sendClient is the HTTP client deliveries go out with: Go's own
// transport, which ends an answer where HTTP says it ends (its length,
// its last chunk, the close of a close-delimited or HTTP/1.0 answer).
// It sends only to the configured URL: no proxy from the environment, no
// redirect followed (RoundTrip never follows one; a 3xx is a failed
// attempt), HTTP/1.1 with keep-alive, no Accept-Encoding (the answer is
// read as sent, never inflated). Its connections are dialled by connSet,
// so that shutdown can cut them.
type sendClient struct {
	reuse *http.Transport
	// fresh makes the one resend of a request that a reused connection
	// dropped before any byte of an answer: always on a new connection.
	fresh *http.Transport
}

func newSendClient(dests []*Destination, conns *connSet) *sendClient {
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
			MaxResponseHeaderBytes: maxAnswerHeader,
			// HTTP/1.1 only: an empty map turns HTTP/2 off over TLS.
			TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
			WriteBufferSize: 16 << 10,
			ReadBufferSize:  4 << 10,
		}
	}
	return &sendClient{reuse: transport(true), fresh: transport(false)}
}

// connSet keeps the send client's open connections, so that shutdown can
// cut the sends in flight; after stopDials it cuts the dials in progress
// and refuses new ones.
type connSet struct {
	// timeouts is each destination address's connect timeout: its
	// destination's timeout (the longest where destinations share an
	// address), keyed by host:port in lower case.
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
		addr := dialAddr(u)
		s.timeouts[addr] = max(s.timeouts[addr], d.Timeout)
	}
	return s
}

// dialAddr is the address the transport dials for u, as connSet keys it.
func dialAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[bool]string{true: "443", false: "80"}[u.Scheme == "https"]
	}
	return strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

// errStopping is the error of a dial cut or refused by the stop.
var errStopping = errors.New("shutting down")

// dial connects over IPv4, tracked, and is cut when the send's context
// ends or the stop begins.
func (s *connSet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	timeout := s.timeouts[strings.ToLower(addr)]
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.dialCtx, cancel)()
	c, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp4", addr)
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

// attemptTrace is what the transport tells of one request: whether its
// last connection had carried a request before, and whether any byte of
// an answer came.
type attemptTrace struct {
	reused, answered atomic.Bool
}

func (t *attemptTrace) gotConn(info httptrace.GotConnInfo) { t.reused.Store(info.Reused) }
func (t *attemptTrace) gotFirstByte()                      { t.answered.Store(true) }

func (d *Dispatcher) post(ctx context.Context, dest *Destination, w Work, attempt int) result {
	if ctx.Err() != nil { // shutting down
		return result{err: context.Cause(ctx)}
	}
	e := w.Event
	now := d.Now()
	header, err := d.outboundHeader(dest, e, attempt, now)
	if err != nil {
		return result{err: err}
	}
	// The deadline covers connect, write, the answer's header and as much
	// of its body as is read below.
	ctx, cancel := context.WithTimeout(ctx, dest.Timeout)
	defer cancel()
	var tr attemptTrace
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: tr.gotConn, GotFirstResponseByte: tr.gotFirstByte})
	req, err := newPost(ctx, dest.URL, header, e.Body)
	if err != nil {
		return result{err: errors.New("the destination URL is not valid")}
	}
	resp, err := d.client.reuse.RoundTrip(req)
	if err != nil && tr.reused.Load() && !tr.answered.Load() && ctx.Err() == nil {
		// A connection that had carried a request before was closed
		// before any of the answer came (the destination's keep-alive ran
		// out as this send began, or it restarted): the destination did
		// not act on it, or it dedupes by webhook-id. Once more, on a
		// fresh connection; only what that gives is the attempt. Go's
		// transport does this itself for most such cases, not for a
		// write cut short on a large body.
		if req, err = newPost(ctx, dest.URL, header, e.Body); err == nil {
			resp, err = d.client.fresh.RoundTrip(req)
		}
	}
	if err != nil {
		return result{err: sendError(ctx, err, dest.Timeout)}
	}
	res := result{status: resp.StatusCode, retryAfter: retryAfter(resp.Header.Get("Retry-After"), now)}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		res.err = redirectError(resp.Header.Get("Location"))
	}
	res.snippet, res.note = readAnswer(ctx, resp.Body, resp.ContentLength, dest.Timeout)
	res.snippet = inflateSnippet(resp.Header.Get("Content-Encoding"), res.snippet)
	return res
}

// inflateSnippet returns the start of a gzip-compressed answer as text,
// when a destination's headers asked for compression (hookbox sends no
// Accept-Encoding of its own): at most MaxResponseSnippet bytes of it,
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
	buf := make([]byte, MaxResponseSnippet)
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
var snippetBufs = sync.Pool{New: func() any { return new([MaxResponseSnippet + 1]byte) }}

// answerTooLong notes an attempt whose answer was cut because it was longer
// than hookbox reads.
const answerTooLong = "answer longer than hookbox reads: the rest was not read, the connection closed"

// readAnswer keeps the first MaxResponseSnippet bytes of body, reads at
// most maxDrain more (none when its declared length is more than that),
// and closes it: the transport keeps the connection
// for the next delivery when the answer ended within that (its length,
// its last chunk), and closes it otherwise, whatever Content-Length said.
// The note says why an answer was cut ("" when it was read whole). ctx's
// deadline (timeout) bounds the time.
func readAnswer(ctx context.Context, body io.ReadCloser, length int64, timeout time.Duration) (snippet []byte, note string) {
	defer body.Close() // before its end: the transport closes the connection
	buf := snippetBufs.Get().(*[MaxResponseSnippet + 1]byte)
	defer snippetBufs.Put(buf)
	n, err := io.ReadFull(body, buf[:MaxResponseSnippet])
	if n > 0 {
		snippet = bytes.Clone(buf[:n])
	}
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return snippet, ""
	case err == nil && length > MaxResponseSnippet+maxDrain:
		return snippet, answerTooLong // declared longer than is read: not read on
	case err == nil:
		var drained int64
		drained, err = io.Copy(io.Discard, io.LimitReader(body, maxDrain))
		if err == nil && drained == maxDrain {
			if n, _ := body.Read(buf[MaxResponseSnippet:]); n > 0 {
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
	return snippet, "answer cut: " + sendError(ctx, err, timeout).Error()
}

// sendError turns a transport error into a short text without the URL,
// which may carry a credential in its query.
func sendError(ctx context.Context, err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var te interface{ Timeout() bool }
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) && te.Timeout() {
		return fmt.Errorf("no answer within %v", timeout)
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && string(rh.RecordHeader[:]) == "HTTP/" {
		return errors.New("server gave HTTP response to HTTPS client")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the destination closed the connection without an answer")
	}
	if strings.Contains(err.Error(), "server response headers exceeded") { // net/http has no value for it
		return fmt.Errorf("the answer's header is longer than %d KiB: not read on", maxAnswerHeader>>10)
	}
	return err
}

// Outbound header names hookbox sets itself, or that describe the inbound
// connection, in canonical form: a sender's copies never go out (all of
// them, whatever their case), and hookbox's own take their place.
var (
	hopHeaders = map[string]bool{
		"Content-Length": true, "Host": true, "Connection": true, "Transfer-Encoding": true,
		"Keep-Alive": true, "Te": true, "Trailer": true, "Upgrade": true, "Proxy-Connection": true,
		"Expect": true, "Accept-Encoding": true, "User-Agent": true, "Idempotency-Key": true,
	}
	// ownPrefixes are the prefixes of the names hookbox signs and labels
	// with: the Standard Webhooks headers under either name (a sender's
	// would make a receiver check the sender's signature with its own
	// secret) and hookbox's X-Hookbox-*.
	ownPrefixes = []string{"Webhook-", "Svix-", "X-Hookbox-"}
)

// ownHeader reports whether a sender's header named name (canonical) is
// never forwarded.
func ownHeader(name string) bool {
	if hopHeaders[name] {
		return true
	}
	for _, p := range ownPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// withheld reports whether a sender's header named name (canonical) is
// kept from dest: a name hookbox sets, one of dest's configured headers
// (their values replace the sender's), or a provider's signature for a
// destination with forward_signatures = false. A name with underscores
// where such a name has dashes is withheld too: Rack, WSGI and CGI servers
// read X_Hookbox_Source and X-Hookbox-Source as one variable
// (HTTP_X_HOOKBOX_SOURCE), so the sender's could stand in for hookbox's.
func (d *Dispatcher) withheld(dest *Destination, source, name string) bool {
	if ownHeader(name) || !dest.ForwardSignatures && d.signatureHeader(source, name) {
		return true
	}
	if strings.IndexByte(name, '_') < 0 {
		return false
	}
	dashed := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(name, "_", "-"))
	if ownHeader(dashed) || !dest.ForwardSignatures && d.signatureHeader(source, dashed) {
		return true
	}
	for k := range dest.Headers {
		if textproto.CanonicalMIMEHeaderKey(k) == dashed {
			return true
		}
	}
	return false
}

// outboundHeader is the header of an attempt of e to dest: the sender's
// headers but those hookbox sets (and, unless the destination wants them,
// the provider's signatures), the destination's configured headers, then
// hookbox's own.
func (d *Dispatcher) outboundHeader(dest *Destination, e *Event, attempt int, now time.Time) (http.Header, error) {
	n := len(e.Header) + len(dest.Headers) + 12
	h := make(http.Header, n)
	// One array holds the values, rather than a slice for each.
	vals := make([]string, 0, n)
	set := func(name, v string) {
		vals = append(vals, v)
		h[name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	for _, f := range e.Header {
		// The names come canonical from the edge: no copy is made then.
		name := textproto.CanonicalMIMEHeaderKey(f.Name)
		if d.withheld(dest, e.Source, name) ||
			!httpguts.ValidHeaderFieldName(f.Name) || !httpguts.ValidHeaderFieldValue(f.Value) {
			continue // a header the transport would refuse to send fails every attempt
		}
		if old, ok := h[name]; ok {
			h[name] = append(old, f.Value)
		} else {
			set(name, f.Value)
		}
	}
	for k, v := range dest.Headers {
		set(textproto.CanonicalMIMEHeaderKey(k), v) // every copy a sender sent under this name goes
	}
	msgID := MessageID(e.Source, e.ID, dest.Name)
	ts := strconv.FormatInt(now.Unix(), 10)
	set("User-Agent", "hookbox/"+d.Version)
	set("Idempotency-Key", msgID) // the delivery is idempotent: a receiver may dedupe by it
	set("Webhook-Id", msgID)
	set("Webhook-Timestamp", ts)
	var sig string
	if dest.Secret != nil {
		s, err := provider.Sign("standard", provider.Settings{Secrets: [][]byte{dest.Secret}}, e.Body, "", msgID, "", now)
		if err != nil {
			return nil, errors.New("cannot sign with the destination secret")
		}
		sig = s.Get("webhook-signature")
		set("Webhook-Signature", sig)
	}
	if dest.SignatureHeaders == SignatureHeadersSvix {
		set("Svix-Id", msgID)
		set("Svix-Timestamp", ts)
		if sig != "" {
			set("Svix-Signature", sig)
		}
	}
	set("X-Hookbox-Source", e.Source)
	set("X-Hookbox-Event-Id", e.ID)
	set("X-Hookbox-Topic", e.Topic)
	set("X-Hookbox-Attempt", strconv.Itoa(attempt))
	return h, nil
}

// signatureHeader reports whether a header named name (canonical) of an
// event of source carries a provider's signature or credential.
func (d *Dispatcher) signatureHeader(source, name string) bool {
	return provider.SignatureHeader(name) || d.sourceSigs[source] == name
}
