package httpsend

import (
	"bufio"
	"net"
	"sync"
	"syscall"
	"time"
)

// conn is one connection to a destination's address, with the reader of
// its answers.
type conn struct {
	nc   net.Conn        // a trackedConn, or TLS over one
	raw  syscall.RawConn // its socket, to see whether it was closed while idle
	br   *bufio.Reader
	addr string
	idle time.Time // when it went back to the pool
}

// checkIdle is how long a connection stays idle before it is checked
// for a close by the destination as it is taken: one taken sooner is not
// (a busy destination's connections are taken within milliseconds; one
// closed meanwhile is found by the send, which goes once more on a fresh
// connection).
const checkIdle = 50 * time.Millisecond

// idleTimeout is how long an idle connection is kept, as Go's transport
// keeps them by default.
const idleTimeout = 90 * time.Second

// pool keeps the idle connections, per address, the last one back taken
// first, at most max of them in all; one idle longer than idleTimeout is
// closed.
type pool struct {
	mu     sync.Mutex
	idle   map[string][]*conn // oldest first
	n, max int
	timer  *time.Timer // sweeps the expired ones while any is idle
	closed bool
}

func newPool(max int) *pool { return &pool{idle: map[string][]*conn{}, max: max} }

// get takes the connection last put back for addr, nil when there is none.
func (p *pool) get(addr string) *conn {
	now := time.Now()
	p.mu.Lock()
	cs := p.idle[addr]
	if len(cs) == 0 {
		p.mu.Unlock()
		return nil
	}
	c := cs[len(cs)-1]
	cs[len(cs)-1] = nil
	cs = cs[:len(cs)-1]
	p.n--
	var expired []*conn
	if now.Sub(c.idle) > idleTimeout { // and every one before it
		expired, c = append(cs, c), nil
		p.n -= len(cs)
		cs = nil
	}
	p.idle[addr] = cs
	p.mu.Unlock()
	for _, e := range expired {
		e.nc.Close()
	}
	return c
}

// put gives c back for the next send to its address, or closes it when
// the pool is full or closed.
func (p *pool) put(c *conn) {
	c.idle = time.Now()
	p.mu.Lock()
	if p.closed || p.n >= p.max {
		p.mu.Unlock()
		c.nc.Close()
		return
	}
	p.idle[c.addr] = append(p.idle[c.addr], c)
	p.n++
	if p.timer == nil {
		p.timer = time.AfterFunc(idleTimeout, p.sweep)
	}
	p.mu.Unlock()
}

// sweep closes the connections idle longer than idleTimeout, and comes
// back while any is left.
func (p *pool) sweep() {
	now := time.Now()
	var expired []*conn
	p.mu.Lock()
	next := idleTimeout
	for addr, cs := range p.idle {
		i := 0
		for i < len(cs) && now.Sub(cs[i].idle) > idleTimeout {
			i++
		}
		expired = append(expired, cs[:i]...)
		p.n -= i
		if i == len(cs) {
			delete(p.idle, addr)
			continue
		}
		n := copy(cs, cs[i:])
		clear(cs[n:])
		p.idle[addr] = cs[:n]
		next = min(next, idleTimeout-now.Sub(cs[0].idle))
	}
	p.timer = nil
	if p.n > 0 && !p.closed {
		p.timer = time.AfterFunc(next+time.Second, p.sweep)
	}
	p.mu.Unlock()
	for _, c := range expired {
		c.nc.Close()
	}
}

// close closes the idle connections and every one put back later.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle, p.n = map[string][]*conn{}, 0
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.nc.Close()
		}
	}
}
