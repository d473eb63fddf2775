// GET /api/v1/stream: the live events as server-sent events, for
// `hookbox listen`.

package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/stream"
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
// glob) filter it; Last-Event-ID resumes it (stream.Hub.Subscribe).
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
	f := stream.Filter{Source: c.Query("source"), Topic: c.Query("topic")}
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
	var limit *stream.LimitError
	switch {
	case errors.As(err, &limit):
		c.Set(fiber.HeaderRetryAfter, "5")
		c.Locals(errorLocal, limit.Message)
		return c.Status(fiber.StatusTooManyRequests).JSON(answer{Status: "error", Error: limit.Message})
	case errors.Is(err, stream.ErrClosed):
		return s.sendError(c, app.Errorf(app.EUNAVAILABLE, "the server is stopping"))
	case err != nil:
		return s.storeError(c, err)
	}
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no") // nginx: pass each message on as it comes
	conn := c.Context().Conn()
	session, _ := c.Locals("session").(string) // the caller's session token, if it came with one
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) { s.writeStream(conn, w, l, id, session) })
	return nil
}

// writeStream writes l's messages to w until the client goes, the hub
// closes (shutdown), the listener is dropped or id no longer holds (a
// revoked or expired token, a removed user, a changed role or password,
// the session it came with logged out or expired): the latter ends the
// stream at once, with a revoked notice that says why (Access.Hold signals
// it, here or from another node within access.Poll; Sessions.Hold a
// session's end within twice access.SessionCache).
func (s *Server) writeStream(conn net.Conn, w *bufio.Writer, l *stream.Listener, id app.Identity, session string) {
	defer l.Close()
	hold := s.deps.Access.Hold
	if session != "" { // a logout or the session's expiry ends it too
		hold = func(ctx context.Context, id app.Identity) (context.Context, context.CancelFunc) {
			return s.sessions.Hold(ctx, session, id)
		}
	}
	held, release := hold(context.Background(), id)
	defer release()
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
	out := &streamOut{w: w, flush: flush}
	for {
		ctx, cancel := context.WithTimeout(held, ping)
		more := s.writeUntilPing(ctx, out, l, &buf)
		cancel()
		if !more {
			return
		}
		if held.Err() != nil {
			n := &app.StreamNotice{Kind: app.StreamNoticeRevoked, Message: app.ErrorMessage(context.Cause(held)) + "; this stream ends"}
			if writeStreamMessage(out, stream.Message{Notice: n}, nil, &buf) == nil {
				flush()
			}
			return
		}
		if _, err := out.Write([]byte(": ping\n\n")); err != nil || !flush() {
			return
		}
	}
}

// writeUntilPing writes l's messages until ctx is done (time to ping, or
// the caller's credential no longer holds: true) or the stream ends
// (false).
func (s *Server) writeUntilPing(ctx context.Context, out *streamOut, l *stream.Listener, buf *[]byte) bool {
	for {
		if ctx.Err() != nil { // checked before each message: a busy stream never waits in Next
			return true
		}
		m, err := l.Next(ctx)
		switch {
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			return true
		case err != nil:
			if !errors.Is(err, stream.ErrClosed) {
				s.Logger.Warn("stream: resume failed", slog.Any("error", err))
			}
			return false
		}
		var src *app.Source
		if m.Event != nil {
			src = s.config().SourceByName(m.Event.Source)
		}
		if err := writeStreamMessage(out, m, src, buf); err != nil {
			if !errors.Is(err, errStreamWrite) {
				s.Logger.Error("stream: encode a message", slog.Any("error", err))
			}
			return false
		}
		if m.Notice != nil && m.Notice.Kind == app.StreamNoticeDropped {
			out.flush()
			return false
		}
		if !l.Ready() && !out.flush() { // flushed once nothing more waits
			return false
		}
	}
}

// streamOut is a stream's writer: w (fasthttp's, over a pipe to the
// connection) written through a piece at a time, never more than its
// buffer holds. fasthttp's pipe copies each write it is handed whole, so a
// message written at once was a copy of it per listener; and each buffer
// that fills sets the connection's write deadline again (flush), so the
// deadline bounds each wait, not a whole message.
type streamOut struct {
	w     *bufio.Writer
	flush func() bool
}

// errStreamWrite is a write to the client that failed or timed out.
var errStreamWrite = errors.New("stream: write to the client")

// Write writes p through w's buffer.
func (o *streamOut) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if o.w.Available() == 0 && !o.flush() {
			return n, errStreamWrite
		}
		k, err := o.w.Write(p[:min(len(p), o.w.Available())]) // it fits the buffer: no write of its own
		n += k
		if err != nil {
			return n, errStreamWrite
		}
		p = p[k:]
	}
	return n, nil
}

// writeStreamMessage writes m, an event of src when it is one, as an SSE
// message to o; buf is scratch space. An event's JSON is
// app.StreamEventOf's, its body in base64 encoded as it goes out: no copy
// of the whole message is made.
func writeStreamMessage(o *streamOut, m stream.Message, src *app.Source, buf *[]byte) error {
	if m.Notice != nil {
		*buf = appendStreamMessage((*buf)[:0], m)
		_, err := o.Write(*buf)
		return err
	}
	se := app.StreamEventOf(m.Event, src)
	body := se.Body
	se.Body = nil
	data, err := json.Marshal(se) // one line: JSON escapes newlines in strings
	if err != nil {
		return err
	}
	// "body":null occurs once: a quote within a JSON string is escaped.
	at := bytes.Index(data, bodyNull)
	if at < 0 || bytes.Contains(data[at+1:], bodyNull) {
		return fmt.Errorf("the event's JSON has not one %s: %.200s", bodyNull, data)
	}
	b := append((*buf)[:0], "id: "...)
	b = strconv.AppendUint(b, m.Event.Seq, 10)
	b = append(b, "\nevent: event\ndata: "...)
	*buf = b
	if _, err := o.Write(b); err != nil {
		return err
	}
	if _, err := o.Write(data[:at]); err != nil {
		return err
	}
	if _, err := o.Write([]byte(`"body":"`)); err != nil {
		return err
	}
	enc := base64.NewEncoder(base64.StdEncoding, o) // writes 1 KiB at a time
	if _, err := enc.Write(body); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if _, err := o.Write([]byte(`"`)); err != nil {
		return err
	}
	if _, err := o.Write(data[at+len(bodyNull):]); err != nil {
		return err
	}
	_, err = o.Write([]byte("\n\n"))
	return err
}

// bodyNull is the body's field in the JSON of an event without it.
var bodyNull = []byte(`"body":null`)

// appendStreamMessage appends m, a notice, as an SSE message to b.
func appendStreamMessage(b []byte, m stream.Message) []byte {
	data, _ := json.Marshal(m.Notice)
	b = append(b, "event: notice\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}
