package web

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"hookbox/app"
)

// Answers to a connection refused at once, before anything is read; they
// fit in a new socket's send buffer, so writing them does not wait.
var (
	answerFull  = refusal("503 Service Unavailable", "too many connections, retry later")
	answerPerIP = refusal("429 Too Many Requests", "too many connections from your address, retry later")
)

func refusal(status, msg string) []byte {
	body := `{"status":"error","error":"` + msg + `"}`
	return []byte("HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// Limit bounds the connections that ln hands out: server.max_connections
// at once, and server.max_connections_per_ip from one address (an IPv6
// /64), trusted proxies exempt. A connection past a bound is refused at
// accept, before it costs a buffer or a goroutine: over plain HTTP it is
// answered 503 (all full) or 429 (its address), with Retry-After, and
// closed; under TLS it is only closed, so wrap ln in TLS after Limit.
func (s *Server) Limit(ln net.Listener) net.Listener {
	return s.limit(ln, s.server.MaxConnectionsPerIP, s.server.TLS == app.TLSNone)
}

// limit is Limit with perIP connections from one address (0: no bound
// per address), answering the refused ones when answer is set.
func (s *Server) limit(ln net.Listener, perIP int, answer bool) net.Listener {
	l := &limitListener{Listener: ln, s: s, max: s.server.MaxConnections, perIP: perIP,
		answer: answer, from: map[netip.Addr]int{}, conns: map[*limitedConn]struct{}{}}
	s.limitsMu.Lock()
	s.limits = append(s.limits, l)
	s.limitsMu.Unlock()
	return l
}

type limitListener struct {
	net.Listener
	s      *Server
	max    int
	perIP  int
	answer bool

	mu    sync.Mutex
	open  int
	from  map[netip.Addr]int
	conns map[*limitedConn]struct{} // the connections handed out and not closed

	full, crowded app.Throttle // of the log lines about refusals

	closeOnce sync.Once // Shutdown closes the listener before fasthttp does
	closeErr  error
}

// Close closes the listener once; Shutdown closes it first, fasthttp's
// shutdown again.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.Listener.Close() })
	return l.closeErr
}

// Accept returns the next connection within the bounds; it refuses the
// others itself.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var addr netip.Addr
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			addr = a.AddrPort().Addr().Unmap()
		}
		key, counted := clientKey(addr), l.perIP > 0 && !l.s.server.Trusted(addr)
		lc := &limitedConn{Conn: c, l: l, key: key, counted: counted}
		if ok := l.admit(lc); ok {
			return lc, nil
		}
		l.refuse(c, addr, key, counted)
	}
}

// admit counts a new connection if the bounds allow it.
func (l *limitListener) admit(c *limitedConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || c.counted && l.from[c.key] >= l.perIP {
		return false
	}
	l.open++
	if c.counted {
		l.from[c.key]++
	}
	l.conns[c] = struct{}{}
	return true
}

// release forgets a closed connection.
func (l *limitListener) release(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if c.counted {
		if l.from[c.key]--; l.from[c.key] <= 0 {
			delete(l.from, c.key)
		}
	}
	delete(l.conns, c)
}

// closeAll closes every connection handed out and still open.
func (l *limitListener) closeAll() error {
	l.mu.Lock()
	conns := make([]*limitedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	return nil
}

// refuse logs a connection past a bound (throttled), then answers it
// and closes it.
func (l *limitListener) refuse(c net.Conn, addr, key netip.Addr, counted bool) {
	l.mu.Lock()
	perIP := counted && l.from[key] >= l.perIP
	l.mu.Unlock()
	answer, throttle := answerFull, &l.full
	if perIP {
		answer, throttle = answerPerIP, &l.crowded
	}
	if ok, held := throttle.Allow(time.Now(), refuseLogEvery); ok {
		if perIP {
			l.s.Logger.Warn("connection refused: too many from one address (server.max_connections_per_ip)",
				"client", addr.String(), "limit", l.perIP, "refused_since_last_line", held)
		} else {
			l.s.Logger.Warn("connection refused: server.max_connections reached",
				"client", addr.String(), "limit", l.max, "refused_since_last_line", held)
		}
	}
	if l.answer {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(answer)
	}
	c.Close()
}

// limitedConn gives its place back when closed, once.
type limitedConn struct {
	net.Conn
	l       *limitListener
	key     netip.Addr
	counted bool
	closed  atomic.Bool
}

// NetConn is the connection under c (request.Watch peeks at its socket).
func (c *limitedConn) NetConn() net.Conn { return c.Conn }

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c)
	}
	return c.Conn.Close()
}

// Deadlines on a connection closed already are no error. Shutdown closes
// the connections under fasthttp once no handler runs, and between a
// handler's return and the answer's write fasthttp sets a deadline,
// panicking on any error it gets (it took the whole server down in CI).
// The write that follows fails as it should, and fasthttp ends the
// connection.
func (c *limitedConn) SetDeadline(t time.Time) error {
	return c.afterClose(c.Conn.SetDeadline(t))
}

func (c *limitedConn) SetReadDeadline(t time.Time) error {
	return c.afterClose(c.Conn.SetReadDeadline(t))
}

func (c *limitedConn) SetWriteDeadline(t time.Time) error {
	return c.afterClose(c.Conn.SetWriteDeadline(t))
}

func (c *limitedConn) afterClose(err error) error {
	if err != nil && c.closed.Load() && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
