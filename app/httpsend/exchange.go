package httpsend

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"hookbox/app"
)

// exchange is what one request on a connection gave.
type exchange struct {
	head    head
	snippet []byte
	note    string
	// answered says a byte of an answer came: a request on a reused
	// connection that failed before is sent once more on a fresh one.
	answered bool
}

// errIdleClosed is the error of an idle connection the destination
// closed.
var errIdleClosed = errors.New("the destination closed the idle connection")

// aLongTimeAgo is the deadline that cuts a connection's I/O at once.
var aLongTimeAgo = time.Unix(1, 0)

// writeBufs hold a request's head, and its body when that is small, so
// that it goes out in one write.
var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// maxPooledWrite bounds the buffers kept in writeBufs.
const maxPooledWrite = inlineBody + 16<<10

// inlineBody is the largest body copied behind its head for one write; a
// larger one is written from where it is.
const inlineBody = 64 << 10

// roundTrip writes req (the request's head, and its body when body is
// empty) and body on c and reads the answer, under deadline; ctx's end
// (shutdown) cuts it at once. c goes back to p when its answer was read
// to its end and neither side said close; it is closed otherwise.
func (c *conn) roundTrip(ctx context.Context, p *pool, req, body []byte, deadline time.Time, timeout time.Duration) (x exchange, err error) {
	reusable := false
	defer func() {
		if reusable {
			p.put(c)
		} else {
			c.nc.Close()
		}
	}()
	c.nc.SetDeadline(deadline) // before the peek, which the last one would fail
	if !c.idle.IsZero() && c.raw != nil && time.Since(c.idle) > checkIdle && peerClosed(c.raw) {
		return x, errIdleClosed // nothing sent: a fresh connection takes it
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	_, werr := c.nc.Write(req)
	if werr == nil && len(body) > 0 {
		_, werr = c.nc.Write(body)
	}
	if werr != nil && isTimeout(werr) {
		stop()
		return x, werr
	}
	// After a failed write too: a destination may have answered before it
	// hung up (nginx's 413 to a body over its limit).
	if _, err = c.br.Peek(1); err != nil {
		stop()
		if werr != nil {
			err = werr
		}
		return x, err
	}
	x.answered = true
	if x.head, err = readHead(c.br); err != nil {
		stop()
		return x, err
	}
	b := newBody(c.br, x.head)
	var whole bool
	x.snippet, x.note, whole = readAnswer(ctx, b, x.head.length, timeout)
	cut := !stop() // ctx ended meanwhile: the deadline may be in the past
	reusable = whole && werr == nil && !x.head.close && !cut && c.br.Buffered() == 0
	return x, nil
}

// isTimeout says whether err is a deadline's.
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) && te.Timeout()
}

// dial connects to t's address through the connSet, and for https makes
// the TLS handshake (HTTP/1.1, the system's roots, the URL's host name),
// all before deadline.
func (s *Sender) dial(ctx context.Context, t *target, deadline time.Time) (*conn, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	nc, err := s.conns.dial(ctx, "tcp4", t.addr)
	if err != nil {
		return nil, err
	}
	c := &conn{addr: t.addr}
	if tc, ok := nc.(*trackedConn); ok {
		if sc, ok := tc.Conn.(syscall.Conn); ok {
			c.raw, _ = sc.SyscallConn()
		}
	}
	if t.tls != nil {
		tc := tls.Client(nc, t.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	c.nc, c.br = nc, bufio.NewReaderSize(nc, 4<<10)
	return c, nil
}

// maxDrain is how much of an answer past the kept snippet is read, and
// thrown away, so that its connection can carry the next delivery; a
// longer answer is not read: its connection is closed instead.
const maxDrain = 64 << 10

// snippetBufs hold the start of an answer while it is read, and then what
// is read past it and thrown away.
var snippetBufs = sync.Pool{New: func() any { return new([16 << 10]byte) }}

// answerTooLong notes an attempt whose answer was cut because it was longer
// than hookbox reads.
const answerTooLong = "answer longer than hookbox reads: the rest was not read, the connection closed"

// readAnswer keeps the first app.MaxResponseSnippet bytes of b and reads
// at most maxDrain more (none when its declared length is more than
// that). whole says the answer was read to its end, so that its
// connection can carry the next delivery. The note says why an answer
// was cut ("" when it was read whole, or when the destination closed the
// connection before its end).
func readAnswer(ctx context.Context, b *body, length int64, timeout time.Duration) (snippet []byte, note string, whole bool) {
	buf := snippetBufs.Get().(*[16 << 10]byte)
	defer snippetBufs.Put(buf)
	n, err := io.ReadFull(b, buf[:app.MaxResponseSnippet])
	if n > 0 {
		snippet = bytes.Clone(buf[:n])
	}
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return snippet, "", b.done
	case err == nil && length > app.MaxResponseSnippet+maxDrain:
		return snippet, answerTooLong, false // declared longer than is read: not read on
	case err == nil:
		for left := maxDrain; left > 0 && err == nil; left -= n {
			n, err = b.Read(buf[:min(left, len(buf))])
		}
		if err == nil { // the drain is full: does the answer go on?
			if n, err = b.Read(buf[:1]); n > 0 {
				return snippet, answerTooLong, false
			}
		}
		if err == io.EOF {
			return snippet, "", true
		}
		if err == io.ErrUnexpectedEOF || err == nil {
			return snippet, "", false
		}
	}
	if ctx.Err() != nil {
		return snippet, "answer cut: " + context.Cause(ctx).Error(), false
	}
	if isTimeout(err) {
		return snippet, fmt.Sprintf("answer cut at the %v timeout", timeout), false
	}
	return snippet, "answer cut: " + app.SendError(ctx, err, timeout).Error(), false
}
