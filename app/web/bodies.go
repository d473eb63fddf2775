package web

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"

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

// charge is what a buffer of capacity n takes from the budget.
func charge(n int) int64 { return int64(max(0, n-bodyFree)) }

// readBodies wraps the fasthttp handler: every request's body, on every
// route, is read by readBody before Fiber sees the request; a body that
// cannot be read gets its answer here and its connection is closed (its
// unread rest would otherwise be taken for the next request).
func (s *Server) readBodies(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		charged, status := s.readBody(&ctx.Request)
		if status != 0 {
			s.bodies.give(charged)
			s.refuseBody(ctx, status)
			return
		}
		if charged == 0 {
			next(ctx)
			return
		}
		defer s.bodies.give(charged)
		next(ctx)
	}
}

// readBody reads the body of req, streamed by fasthttp, so that
// req.Body() returns it; it returns what the body took from the budget
// (to give back once the request is answered, even when status is not
// 0) and, when the body cannot be had, the status to answer: 413 over
// max_body_bytes, 503 when the budget is spent, 408 past the read
// timeout, 400 for a body cut short or badly framed.
func (s *Server) readBody(req *fasthttp.Request) (charged int64, status int) {
	stream := req.BodyStream()
	if stream == nil {
		return 0, 0 // no body (no Content-Length, no chunks), or read already
	}
	declared, limit := req.Header.ContentLength(), s.cfg.Server.MaxBodyBytes
	switch {
	case declared > limit:
		return 0, fiber.StatusRequestEntityTooLarge
	case declared >= 0 && declared <= bodyFree:
		// fasthttp read all of it before calling the handler (it reads
		// the first min(length, 8 KiB) bytes, or fails the request):
		// Body moves it from the stream to the request, in place.
		if len(req.Body()) != declared {
			return 0, fiber.StatusBadRequest
		}
		return 0, 0
	}
	// most is what the body may come to; first, the piece to start with:
	// a chunked body may be small, and then needs nothing of the budget.
	most, first := declared, 2*bodyFree
	if declared < 0 {
		most, first = limit+1, bodyFree // one byte past the limit tells it is too long
	}
	buf := make([]byte, 0, min(most, first))
	charged = charge(cap(buf))
	if !s.bodies.take(charged) {
		return 0, fiber.StatusServiceUnavailable
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= most {
				break
			}
			grown := min(most, 2*cap(buf))
			more := charge(grown) - charged
			if !s.bodies.take(more) {
				return charged, fiber.StatusServiceUnavailable
			}
			charged += more
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := stream.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return charged, fiber.StatusRequestTimeout
			}
			return charged, fiber.StatusBadRequest
		}
	}
	switch {
	case len(buf) > limit:
		return charged, fiber.StatusRequestEntityTooLarge
	case declared >= 0 && len(buf) != declared:
		return charged, fiber.StatusBadRequest
	}
	req.SetBodyRaw(buf)
	return charged, 0
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
				"client", s.clientAddr(ctx), "limit", s.cfg.Server.MaxBodyBytesTotal, "refused_since_last_line", held)
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
	if s.cfg.Server.Trusted(p) {
		p = forwardedFor(ctx.Request.Header.PeekAll(fiber.HeaderXForwardedFor), p, s.cfg.Server.Trusted)
	}
	return p.String()
}
