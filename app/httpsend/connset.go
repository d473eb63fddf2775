package httpsend

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hookbox/app"
)

// connSet keeps the send client's open connections, so that shutdown can
// cut the sends in flight; after stopDials it cuts the dials in progress
// and refuses new ones.
type connSet struct {
	// timeouts is each destination address's connect timeout: its
	// destination's timeout (the longest where destinations share an
	// address), keyed by host:port in lower case; swapped whole by a
	// reload (setTimeouts).
	timeouts atomic.Pointer[map[string]time.Duration]
	// dialCtx ends when the stop begins (stopDials); stopped says so
	// without a lock, for every send.
	dialCtx    context.Context
	cancelDial context.CancelFunc
	stopped    atomic.Bool
	mu         sync.Mutex
	open       map[*trackedConn]struct{}
	closed     bool
}

func newConnSet(dests []*app.Destination) *connSet {
	s := &connSet{open: map[*trackedConn]struct{}{}}
	s.dialCtx, s.cancelDial = context.WithCancel(context.Background())
	s.setTimeouts(dests)
	return s
}

// setTimeouts makes the connect timeouts those of dests.
func (s *connSet) setTimeouts(dests []*app.Destination) {
	timeouts := map[string]time.Duration{}
	for _, d := range dests {
		if len(d.Command) > 0 {
			continue // cmdsend runs it: nothing to dial
		}
		u, err := url.Parse(d.URL)
		if err != nil {
			continue // the config refuses such URLs
		}
		addr := dialAddr(u)
		timeouts[addr] = max(timeouts[addr], d.Timeout)
	}
	s.timeouts.Store(&timeouts)
}

// dialAddr is the address dialled for u, as connSet keys it.
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
	timeout := (*s.timeouts.Load())[strings.ToLower(addr)]
	if timeout <= 0 {
		timeout = app.DefaultTimeout
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
