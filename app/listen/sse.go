// Package listen is the client side of the live stream of a remote hookbox
// (GET /api/v1/stream): a reader of server-sent events, and the Listener
// that `hookbox listen` runs, which forwards each streamed event to a local
// URL.
package listen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrTooLong is returned by Reader.Next when a line, or the data of one
// message, is longer than the reader's bound: the remote is a peer, and
// what it sends is read within a limit.
var ErrTooLong = errors.New("server-sent event too long")

// Message is one dispatched server-sent event.
type Message struct {
	// ID is the stream's last event ID when the message was dispatched
	// (the spec keeps it from one message to the next until an id field
	// changes it); it is what a reconnection sends as Last-Event-ID.
	ID string
	// Event is the event type, "message" when the message named none.
	Event string
	// Data is the data fields joined by "\n".
	Data string
}

// Reader reads server-sent events as the WHATWG HTML standard's "event
// stream interpretation" defines them: lines ended by CRLF, LF or CR;
// comments (a line that starts with ':'); fields id, event, data (one or
// more lines) and retry; a blank line dispatches the message.
type Reader struct {
	br  *bufio.Reader
	max int
	// skipLF is set after a CR: a LF that follows belongs to the same line
	// end. It is kept as state, not peeked, so that a message ended by a
	// lone CR is dispatched without waiting for the next byte.
	skipLF  bool
	started bool
	line    []byte
	lastID  string
	// Retry is the reconnection time the last retry field set (0: none).
	Retry time.Duration
}

// NewReader returns a Reader of r in which a line, and the data of one
// message, is at most max bytes.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// LastID is the stream's last event ID so far.
func (r *Reader) LastID() string { return r.lastID }

// Next returns the next message. It returns io.EOF at the end of the
// stream (a message not ended by a blank line is discarded, as the spec
// says), ErrTooLong past the bound, or the underlying reader's error.
func (r *Reader) Next() (Message, error) {
	var data strings.Builder
	hasData := false
	event := ""
	for {
		line, err := r.readLine()
		if err != nil {
			return Message{}, err
		}
		if len(line) == 0 {
			if !hasData {
				event = ""
				continue
			}
			if event == "" {
				event = "message"
			}
			return Message{ID: r.lastID, Event: event, Data: data.String()}, nil
		}
		if line[0] == ':' {
			continue
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "event":
			event = string(value)
		case "data":
			if hasData {
				if data.Len()+1+len(value) > r.max {
					return Message{}, fmt.Errorf("%w: the data of one message is over %d bytes", ErrTooLong, r.max)
				}
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.lastID = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil && onlyDigits(value) {
				r.Retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// onlyDigits reports whether b is ASCII digits only (ParseUint takes a
// leading '+').
func onlyDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// readLine returns the next line without its end; the slice is valid
// until the next call.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	if !r.started {
		// A byte order mark at the very start is not part of the stream.
		r.started = true
		if b, _ := r.br.Peek(3); string(b) == "\xEF\xBB\xBF" {
			r.br.Discard(3)
		}
	}
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return nil, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				r.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if len(r.line)+len(buf) > r.max {
				return nil, fmt.Errorf("%w: a line is over %d bytes", ErrTooLong, r.max)
			}
			r.line = append(r.line, buf...)
			r.br.Discard(len(buf))
			continue
		}
		if len(r.line)+i > r.max {
			return nil, fmt.Errorf("%w: a line is over %d bytes", ErrTooLong, r.max)
		}
		r.line = append(r.line, buf[:i]...)
		r.skipLF = buf[i] == '\r'
		r.br.Discard(i + 1)
		return r.line, nil
	}
}
