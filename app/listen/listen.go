package listen

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"hookbox/app"
)

// The defaults of a Listener.
const (
	// MinBackoff and MaxBackoff bound the wait before a reconnection: 1 s,
	// doubling up to 10 s, back to 1 s once a connection is ready.
	MinBackoff = time.Second
	MaxBackoff = 10 * time.Second
	// DefaultMaxBody is the largest event body read from the stream: the
	// server's default server.max_body_bytes.
	DefaultMaxBody = app.DefaultMaxBodyBytes
	// lineSlack is what a stream line holds beside the body (base64 in
	// the JSON): the headers, the names, the JSON itself.
	lineSlack = 256 << 10
	// answerMax is how much of a local answer is read (then discarded).
	answerMax = 64 << 10
	// idleMax is how long the stream may send nothing (it sends a comment
	// every StreamPing) before the connection is taken to be dead.
	idleMax = 3 * app.StreamPing
	// DefaultForwardTimeout bounds one forward to the local URL.
	DefaultForwardTimeout = 30 * time.Second
)

// Listener reads the stream of a remote hookbox and POSTs each event to a
// local URL, one at a time in the order received, printing a line for each.
// The stream carries no signature: each request is signed here, with
// Secret, in the scheme of the event's provider. It changes nothing on
// the remote.
type Listener struct {
	// Remote is the remote hookbox's base URL (https://hooks.example.com).
	Remote string
	// Forward is the local URL each event is POSTed to.
	Forward string
	// Source and Topic filter the stream ("": all); Topic is a glob.
	Source, Topic string
	// Token is sent as a Bearer token; else User and Password as Basic.
	Token, User, Password string
	// CredentialFrom names the credential for errors (never its value).
	CredentialFrom string
	// Secret is the listen secret each forwarded request is signed with,
	// in the scheme of its source's provider (default: TokenSecret of
	// Token, else PasswordSecret of User and Password).
	Secret string
	// MaxBody is the largest event body accepted on the stream (default
	// DefaultMaxBody); a longer line ends the connection with ErrTooLong.
	MaxBody int
	// ForwardTimeout bounds one forward (default DefaultForwardTimeout).
	ForwardTimeout time.Duration
	// Out receives the lines: one per event, notice and reconnection.
	Out io.Writer
	// Now is the clock of the printed times (default time.Now).
	Now func() time.Time
	// MinBackoff and MaxBackoff override the package's (tests).
	MinBackoff, MaxBackoff time.Duration

	lastID  string
	stream  *http.Client
	forward *http.Client
	mu      sync.Mutex
}

// FatalError ends Run: the remote refused the listener (401, 403, 404, a
// redirect), and trying again would only be refused again.
type FatalError struct{ Message string }

func (e *FatalError) Error() string { return e.Message }

// LastID is the id of the last event received (what a reconnection sends
// as Last-Event-ID), "" before the first.
func (l *Listener) LastID() string { l.mu.Lock(); defer l.mu.Unlock(); return l.lastID }

// Run listens until ctx ends (nil) or the remote refuses the listener
// (a *FatalError). A connection that ends or fails is made again after a
// backoff, sending the last event's id so that the server resumes after it.
func (l *Listener) Run(ctx context.Context) error {
	if err := l.init(); err != nil {
		return err
	}
	backoff := app.Backoff{First: l.MinBackoff, Max: l.MaxBackoff}
	wait := backoff.First
	for {
		ready, err := l.connect(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var fatal *FatalError
		if errors.As(err, &fatal) {
			return err
		}
		if ready {
			wait = backoff.First
		}
		l.printf("%s  connection lost: %v; reconnecting in %s", l.clock(), err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = backoff.Next(wait)
	}
}

// init checks the URLs and fills the defaults.
func (l *Listener) init() error {
	for _, u := range []struct{ name, v string }{{"the remote URL", l.Remote}, {"-forward", l.Forward}} {
		p, err := url.Parse(u.v)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return &FatalError{fmt.Sprintf("%s %q is not an http:// or https:// URL", u.name, u.v)}
		}
	}
	switch {
	case l.Secret == "" && l.Token != "":
		l.Secret = TokenSecret(l.Token)
	case l.Secret == "":
		l.Secret = PasswordSecret(l.User, l.Password)
	}
	if err := CheckSecret(l.Secret); err != nil {
		return &FatalError{err.Error()}
	}
	if l.MaxBody <= 0 {
		l.MaxBody = DefaultMaxBody
	}
	if l.ForwardTimeout <= 0 {
		l.ForwardTimeout = DefaultForwardTimeout
	}
	if l.MinBackoff <= 0 {
		l.MinBackoff = MinBackoff
	}
	if l.MaxBackoff <= 0 {
		l.MaxBackoff = MaxBackoff
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	if l.Out == nil {
		l.Out = io.Discard
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	dial := (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	l.stream = &http.Client{CheckRedirect: noRedirect, Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, DialContext: dial, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second, ForceAttemptHTTP2: true,
	}}
	l.forward = &http.Client{CheckRedirect: noRedirect, Timeout: l.ForwardTimeout, Transport: &http.Transport{
		DialContext: dial, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second,
		// The body as received: no gzip asked for, none undone.
		DisableCompression: true,
	}}
	return nil
}

// streamURL is the stream's URL on the remote with the filters.
func (l *Listener) streamURL() string {
	u, _ := url.Parse(l.Remote)
	u = u.JoinPath("api/v1/stream")
	q := url.Values{}
	if l.Source != "" {
		q.Set("source", l.Source)
	}
	if l.Topic != "" {
		q.Set("topic", l.Topic)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// connect reads one connection of the stream until it ends; ready reports
// whether the server said it was live (so the backoff starts again).
func (l *Listener) connect(parent context.Context) (ready bool, err error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.streamURL(), nil)
	if err != nil {
		return false, &FatalError{err.Error()}
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if id := l.LastID(); id != "" {
		req.Header.Set("Last-Event-ID", id)
	}
	if l.Token != "" {
		req.Header.Set("Authorization", "Bearer "+l.Token)
	} else {
		req.SetBasicAuth(l.User, l.Password)
	}
	resp, err := l.stream.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the ready line already
		}
		return false, err
	}
	defer resp.Body.Close()
	if err := l.refusal(resp); err != nil {
		return false, err
	}
	// A stream that sends nothing, not even its ping, for idleMax is dead
	// (a cut the kernel has not noticed): end it and connect again.
	idle := time.AfterFunc(idleMax, func() { cancel(fmt.Errorf("nothing received for %s", idleMax)) })
	defer idle.Stop()
	body := &activity{r: resp.Body, idle: idle}
	sse := NewReader(body, base64.StdEncoding.EncodedLen(l.MaxBody)+lineSlack)
	for {
		msg, err := sse.Next()
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				err = cause
			}
			if errors.Is(err, ErrTooLong) {
				err = fmt.Errorf("%w (raise -max-body to the remote's server.max_body_bytes)", err)
			}
			if err == io.EOF {
				err = errors.New("the server closed the stream")
			}
			return ready, err
		}
		switch msg.Event {
		case "event":
			var ev app.StreamEvent
			if err := json.Unmarshal([]byte(msg.Data), &ev); err != nil {
				return ready, fmt.Errorf("an event the stream sent is not JSON: %v", err)
			}
			// The stream waits while the local app answers (the server
			// drops a listener too far behind; it resumes).
			idle.Stop()
			l.forwardEvent(parent, &ev)
			idle.Reset(idleMax)
			l.mu.Lock()
			l.lastID = msg.ID
			l.mu.Unlock()
		case "notice":
			var n app.StreamNotice
			if err := json.Unmarshal([]byte(msg.Data), &n); err != nil {
				return ready, fmt.Errorf("a notice the stream sent is not JSON: %v", err)
			}
			switch n.Kind {
			case app.StreamNoticeReady:
				ready = true
				l.printf("%s  Ready, forwarding events of %s to %s%s", l.clock(), l.Remote, l.Forward, l.filters())
			default:
				l.printf("%s  %s: %s", l.clock(), n.Kind, n.Message)
			}
		}
	}
}

// filters says which filters the stream has, for the ready line.
func (l *Listener) filters() string {
	var f []string
	if l.Source != "" {
		f = append(f, "source "+l.Source)
	}
	if l.Topic != "" {
		f = append(f, "topic "+l.Topic)
	}
	if len(f) == 0 {
		return ""
	}
	return " (" + strings.Join(f, ", ") + ")"
}

// refusal turns an answer that is not a stream into an error: fatal for
// the ones trying again cannot change.
func (l *Listener) refusal(resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			return &FatalError{fmt.Sprintf("%s answered 200 with %q, not a stream of server-sent events: is it a hookbox (with GET /api/v1/stream)?", l.Remote, ct)}
		}
		return nil
	}
	answer := serverSentence(resp.Body)
	who := l.CredentialFrom
	if who == "" {
		who = "the credential"
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return &FatalError{fmt.Sprintf("%s answered 401 to %s: a wrong, revoked or expired token, or a wrong password (%s)", l.Remote, who, answer)}
	case resp.StatusCode == http.StatusForbidden:
		return &FatalError{fmt.Sprintf("%s answered 403 to %s: %s", l.Remote, who, answer)}
	case resp.StatusCode == http.StatusNotFound:
		return &FatalError{fmt.Sprintf("%s has no %s (404): is it a hookbox, of a version with hookbox listen, and is the URL its base (https://host, without a path)?", l.Remote, "/api/v1/stream")}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return &FatalError{fmt.Sprintf("%s redirects to %q (%d): give that URL", l.Remote, resp.Header.Get("Location"), resp.StatusCode)}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		// Too many listeners (one may be a connection the server has not
		// yet seen end), or a server in trouble: try again.
		return fmt.Errorf("the server answered %d: %s", resp.StatusCode, answer)
	}
	return &FatalError{fmt.Sprintf("%s answered %d: %s", l.Remote, resp.StatusCode, answer)}
}

// serverSentence is the error sentence of a hookbox answer
// ({"status":"error","error":"…"}), or the start of any other answer.
func serverSentence(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// activity is the stream's body, which pushes the idle timer back on each
// read.
type activity struct {
	r    io.Reader
	idle *time.Timer
}

func (a *activity) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.idle.Reset(idleMax)
	}
	return n, err
}

// clock is the local time of a line, with its zone (issue 44: the CLI
// prints local time, and a printed time carries its zone).
func (l *Listener) clock() string { return l.Now().Local().Format("15:04:05 MST") }

// printf writes one line to Out.
func (l *Listener) printf(format string, args ...any) {
	fmt.Fprintf(l.Out, format+"\n", args...)
}
