package web

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Request bodies are held as they arrive, never as declared. Left to
// itself fasthttp allocates a body's declared Content-Length as soon as
// the headers are in (4,096 connections declaring 1 MiB and sending a
// byte now and then held 4 GB, issue 24). So the server streams bodies
// (fasthttp's StreamRequestBody): before any handler runs fasthttp has
// read at most the first bodyFree bytes, into a buffer of that size, and
// readBody takes the rest in pieces that double as they fill, up to
// max_body_bytes. What a body holds past bodyFree comes out of one budget
// for all connections, server.max_body_bytes_total: a body that finds it
// spent is refused (503, Retry-After) rather than given memory. The bytes
// the handlers see are the bytes received (never inflated), through
// Request.Body as before.
const (
	// bodyFree is what one connection's body may hold outside the budget:
	// fasthttp's own first read of a streamed body (8 KiB). Nearly every
	// webhook fits in it, so they never wait on the budget, and its memory
	// is bounded per connection like the read buffer's.
	bodyFree = 8 << 10
	// lingerBytes and lingerTime bound what a refused body may still send
	// before its 413 and the close: a sender that is still writing when
	// the connection closes on unread bytes gets a reset from the kernel
	// instead of the answer, and reports "connection reset" rather than
	// "body larger than max_body_bytes".
	lingerBytes = 1 << 20
	lingerTime  = 500 * time.Millisecond
)

// Answers of readBody.
const (
	msgBodyBudget = "too many request bodies arriving at once, retry later"
	msgBodyShort  = "the body ended before its Content-Length"
	msgBodyBad    = "bad request body"
)

// bodyBudget is a semaphore of bytes: what the bodies being read or
// handled hold past bodyFree each, in all.
type bodyBudget struct {
	free atomic.Int64
}

func newBodyBudget(total int64) *bodyBudget {
	b := &bodyBudget{}
	b.free.Store(total)
	return b
}

// take reserves n bytes; false when fewer are left.
func (b *bodyBudget) take(n int64) bool {
	for {
		f := b.free.Load()
		if f < n {
			return false
		}
		if b.free.CompareAndSwap(f, f-n) {
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *bodyBudget) give(n int64) { b.free.Add(n) }

// charge is what a piece of capacity n takes from the budget.
func charge(n int) int64 { return int64(max(0, n-bodyFree)) }

// Pieces come in sizes bodyFree << k, each size with a pool: a body of
// any length costs no allocation once the server has seen its like, as
// when fasthttp kept bodies in its own pool.
var pieces [16]sync.Pool // up to 256 MiB, past twice the largest max_body_bytes

// piece returns an empty piece of size class k.
func piece(k int) []byte {
	if p, ok := pieces[k].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, bodyFree<<k)
}

// classOf is the smallest size class that holds n bytes.
func classOf(n int) int {
	k := 0
	for bodyFree<<k < n {
		k++
	}
	return k
}

// readBodies wraps the fasthttp handler: every request's body, on every
// route, is read by readBody before Fiber sees the request; a body that
// cannot be read gets its answer here and its connection is closed (its
// unread rest would otherwise be taken for the next request). A body
// read into a piece is the piece's until the handler returns, as it was
// fasthttp's buffer's until the request's end: nothing may keep it.
func (s *Server) readBodies(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		buf, status := s.readBody(&ctx.Request)
		if status != 0 {
			s.release(buf)
			if status == fiber.StatusRequestEntityTooLarge {
				linger(ctx.Conn(), ctx.Request.BodyStream())
			}
			s.refuseBody(ctx, status)
			return
		}
		if buf == nil {
			next(ctx)
			return
		}
		defer s.release(buf)
		defer ctx.Request.ResetBody()
		next(ctx)
	}
}

// release gives a piece back to the budget and its pool (nil: none).
func (s *Server) release(buf []byte) {
	if buf == nil {
		return
	}
	s.bodies.give(charge(cap(buf)))
	k := classOf(cap(buf))
	pieces[k].Put(&buf)
}

// readBody reads the body of req, streamed by fasthttp, so that
// req.Body() returns it, and says what it could not read: 413 over
// max_body_bytes, 503 when the budget is spent, 408 past the read
// timeout, 400 for a body cut short or badly framed. The piece it
// returns, if any, holds its share of the budget until released, even
// when status is not 0; a body that fasthttp read whole (up to
// bodyFree) stays in fasthttp's buffer, and the piece is nil.
func (s *Server) readBody(req *fasthttp.Request) (buf []byte, status int) {
	stream := req.BodyStream()
	if stream == nil {
		return nil, 0 // no body (no Content-Length, no chunks), or read already
	}
	declared, limit := req.Header.ContentLength(), s.server.MaxBodyBytes
	switch {
	case declared > limit:
		return nil, fiber.StatusRequestEntityTooLarge
	case declared >= 0 && declared <= bodyFree:
		// fasthttp read all of it before calling the handler (it reads
		// the first min(length, 8 KiB) bytes, or fails the request):
		// Body moves it from the stream to the request, in place.
		if len(req.Body()) != declared {
			return nil, fiber.StatusBadRequest
		}
		return nil, 0
	}
	// most is what the body may come to. A chunked body starts in the
	// piece that needs nothing of the budget, since it may be small; a
	// longer one declared, in the next.
	most, k := declared, 1
	if declared < 0 {
		most, k = limit+1, 0 // one byte past the limit tells it is too long
	}
	if !s.bodies.take(charge(bodyFree << k)) {
		return nil, fiber.StatusServiceUnavailable
	}
	buf = piece(k)
	for len(buf) < most {
		if len(buf) == cap(buf) {
			k++
			if !s.bodies.take(charge(bodyFree<<k) - charge(cap(buf))) {
				return buf, fiber.StatusServiceUnavailable
			}
			old := buf
			buf = append(piece(k), old...)
			pieces[k-1].Put(&old)
		}
		n, err := stream.Read(buf[len(buf):min(cap(buf), most)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return buf, fiber.StatusRequestTimeout
			}
			return buf, fiber.StatusBadRequest
		}
	}
	switch {
	case len(buf) > limit:
		return buf, fiber.StatusRequestEntityTooLarge
	case declared >= 0 && len(buf) != declared:
		return buf, fiber.StatusBadRequest
	}
	req.SetBodyRaw(buf)
	return buf, 0
}

// linger drops what a refused body sends next, up to lingerBytes within
// lingerTime, so that its sender reads the answer (see lingerBytes).
// Nothing is kept: io.Discard reads through a shared pool.
func linger(conn net.Conn, stream io.Reader) {
	if stream == nil {
		return
	}
	if conn.SetReadDeadline(time.Now().Add(lingerTime)) != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(stream, lingerBytes))
}

// refuseBody answers a request whose body readBody did not read, and
// closes the connection; a refusal for the budget is logged (throttled).
func (s *Server) refuseBody(ctx *fasthttp.RequestCtx, status int) {
	msg := msgBodyBad
	switch status {
	case fiber.StatusRequestEntityTooLarge:
		msg = "body larger than max_body_bytes"
	case fiber.StatusRequestTimeout:
		msg = "request timeout"
	case fiber.StatusServiceUnavailable:
		msg = msgBodyBudget
		ctx.Response.Header.Set(fiber.HeaderRetryAfter, "1")
		if ok, held := s.budgetLog.Allow(s.deps.Now(), refuseLogEvery); ok {
			s.Logger.Warn("request refused: server.max_body_bytes_total held by bodies arriving",
				"client", s.clientAddr(ctx), "limit", s.server.MaxBodyBytesTotal, "refused_since_last_line", held)
		}
	case fiber.StatusBadRequest:
		if ctx.Request.Header.ContentLength() >= 0 {
			msg = msgBodyShort
		}
	}
	ctx.SetConnectionClose()
	ctx.SetStatusCode(status)
	ctx.SetContentType(fiber.MIMEApplicationJSON)
	ctx.SetBodyString(`{"status":"error","error":` + strconv.Quote(msg) + `}`)
}

// clientAddr is who sent a request, for a log line written before Fiber
// has it: as Server.client says.
func (s *Server) clientAddr(ctx *fasthttp.RequestCtx) string {
	var p netip.Addr
	if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		p = a.AddrPort().Addr().Unmap()
	}
	if s.server.Trusted(p) {
		p = forwardedFor(ctx.Request.Header.PeekAll(fiber.HeaderXForwardedFor), p, s.server.Trusted)
	}
	return p.String()
}
