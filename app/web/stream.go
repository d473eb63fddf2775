// GET /api/v1/stream: the live events as server-sent events, for
// `hookbox listen`.

package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// StreamWriteTimeout bounds each write of a stream: a client that stops
// reading is cut once its socket's buffers are full and a write has waited
// this long (its queue in the hub is bounded apart from that). It replaces
// the server's WriteTimeout, which fasthttp sets once per answer and would
// cut every stream 10 s after it began.
const StreamWriteTimeout = 30 * time.Second

// streamWrite and streamPing are StreamWriteTimeout and app.StreamPing
// (as nanoseconds); tests shorten them.
var streamWrite, streamPing atomic.Int64

func init() {
	streamWrite.Store(int64(StreamWriteTimeout))
	streamPing.Store(int64(app.StreamPing))
}

// maxStreamTopic bounds the topic glob of a stream's query.
const maxStreamTopic = 256

// handleStream answers GET /api/v1/stream: `source` (exact) and `topic` (a
// glob) filter it; Last-Event-ID resumes it (app.StreamHub.Subscribe).
//
// The answer is a body stream writer (fasthttp's SetBodyStreamWriter), not
// a hijacked connection: fasthttp keeps the HTTP framing (chunked), its
// connection accounting (the limits of connlimit.go, Concurrency) and its
// graceful shutdown, and the writer gives the connection a write deadline
// before each flush. A hijacked connection would need its own response
// head and be invisible to Shutdown.
func (s *Server) handleStream(c *fiber.Ctx) error {
	hub := s.deps.Stream
	if hub == nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "this server has no stream"))
	}
	f := app.StreamFilter{Source: c.Query("source"), Topic: c.Query("topic")}
	if len(f.Topic) > maxStreamTopic || len(f.Source) > maxStreamTopic {
		return s.sendError(c, app.Errorf(app.EINVALID, "source and topic are at most %d bytes", maxStreamTopic))
	}
	var last uint64
	resume := false
	if h := c.Get("Last-Event-ID"); h != "" {
		n, err := strconv.ParseUint(h, 10, 64)
		if err != nil {
			return s.sendError(c, app.Errorf(app.EINVALID, "Last-Event-ID must be the seq of an event (a number)"))
		}
		last, resume = n, true
	}
	id, _ := c.Locals("identity").(app.Identity)
	l, err := hub.Subscribe(c.UserContext(), id.Actor(), f, resume, last)
	var limit *app.StreamLimitError
	switch {
	case errors.As(err, &limit):
		c.Set(fiber.HeaderRetryAfter, "5")
		c.Locals(errorLocal, limit.Message)
		return c.Status(fiber.StatusTooManyRequests).JSON(answer{Status: "error", Error: limit.Message})
	case errors.Is(err, app.ErrStreamClosed):
		return s.sendError(c, app.Errorf(app.EUNAVAILABLE, "the server is stopping"))
	case err != nil:
		return s.storeError(c, err)
	}
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no") // nginx: pass each message on as it comes
	conn := c.Context().Conn()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) { s.writeStream(conn, w, l, id) })
	return nil
}

// writeStream writes l's messages to w until the client goes, the hub
// closes (shutdown), the listener is dropped or id no longer holds (a
// revoked token, a removed user: checked at each ping).
func (s *Server) writeStream(conn net.Conn, w *bufio.Writer, l *app.StreamListener, id app.Identity) {
	defer l.Close()
	write, ping := time.Duration(streamWrite.Load()), time.Duration(streamPing.Load())
	flush := func() bool {
		if err := conn.SetWriteDeadline(time.Now().Add(write)); err != nil {
			return false
		}
		return w.Flush() == nil
	}
	if !flush() { // the head goes out now, before any event
		return
	}
	var buf []byte
	for {
		ctx, cancel := context.WithTimeout(context.Background(), ping)
		more := s.writeUntilPing(ctx, w, l, flush, &buf)
		cancel()
		if !more || !s.deps.Access.Current(id) {
			return
		}
		if _, err := w.WriteString(": ping\n\n"); err != nil || !flush() {
			return
		}
	}
}

// writeUntilPing writes l's messages until ctx is done (time to ping:
// true) or the stream ends (false).
func (s *Server) writeUntilPing(ctx context.Context, w *bufio.Writer, l *app.StreamListener, flush func() bool, buf *[]byte) bool {
	for {
		m, err := l.Next(ctx)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return true
		case err != nil:
			if !errors.Is(err, app.ErrStreamClosed) {
				s.Logger.Warn("stream: resume failed", slog.Any("error", err))
			}
			return false
		}
		var src *app.Source
		if m.Event != nil {
			src = s.config().SourceByName(m.Event.Source)
		}
		*buf = appendStreamMessage((*buf)[:0], m, src)
		if _, err := w.Write(*buf); err != nil {
			return false
		}
		if m.Notice != nil && m.Notice.Kind == app.StreamNoticeDropped {
			flush()
			return false
		}
		if !l.Ready() && !flush() { // flushed once nothing more waits
			return false
		}
	}
}

// appendStreamMessage appends m, an event of src when it is one, as an SSE
// message to b.
func appendStreamMessage(b []byte, m app.StreamMessage, src *app.Source) []byte {
	if m.Notice != nil {
		data, _ := json.Marshal(m.Notice)
		b = append(b, "event: notice\ndata: "...)
		b = append(b, data...)
		return append(b, "\n\n"...)
	}
	data, _ := json.Marshal(app.StreamEventOf(m.Event, src)) // one line: JSON escapes newlines in strings
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, m.Event.Seq, 10)
	b = append(b, "\nevent: event\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}
