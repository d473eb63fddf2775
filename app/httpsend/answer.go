package httpsend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"hookbox/app"
)

// head is what hookbox keeps of an answer's header, and how its body is
// framed, as Go's transport reads them.
type head struct {
	status int
	// retryAfter, location and encoding are the first values of the
	// Retry-After, Location and Content-Encoding headers.
	retryAfter, location, encoding string
	// length is the body's declared length: 0 when the status has no body,
	// -1 when it is chunked or runs until the connection closes.
	length  int64
	chunked bool
	// close says the connection ends with this answer: the destination
	// said so, an HTTP/1.0 answer did not say keep-alive, or its body runs
	// until the close.
	close bool
}

// errHeaderTooLong fails an answer whose header is longer than hookbox
// reads; app.SendError words it.
var errHeaderTooLong = fmt.Errorf("server response headers exceeded %d bytes; aborted", app.MaxAnswerHeader)

// headReader reads the lines of an answer's header, at most left bytes
// in all (the 1xx answers before it included).
type headReader struct {
	br   *bufio.Reader
	left int
	long []byte // a line longer than br's buffer, put together
}

// line is the next line without its line end, valid until the next call.
func (r *headReader) line() ([]byte, error) {
	l, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], l...)
		for err == bufio.ErrBufferFull && len(r.long) <= r.left {
			l, err = r.br.ReadSlice('\n')
			r.long = append(r.long, l...)
		}
		l = r.long
	}
	if r.left -= len(l); r.left < 0 {
		return nil, errHeaderTooLong
	}
	if err != nil {
		if err == io.EOF && len(l) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	l = l[:len(l)-1]
	if len(l) > 0 && l[len(l)-1] == '\r' {
		l = l[:len(l)-1]
	}
	return l, nil
}

// readHead reads an answer's status line and header, past any 1xx
// informational answer (100 Continue, 103 Early Hints), at most
// app.MaxAnswerHeader bytes of them in all, and works out its framing.
func readHead(br *bufio.Reader) (head, error) {
	r := headReader{br: br, left: app.MaxAnswerHeader}
	for {
		h, err := r.readOne()
		if err != nil || h.status < 100 || h.status > 199 || h.status == 101 {
			return h, err
		}
	}
}

// readOne reads one answer's status line and header.
func (r *headReader) readOne() (head, error) {
	var h head
	line, err := r.line()
	if err != nil {
		return h, err
	}
	major, minor, status, err := parseStatusLine(line)
	if err != nil {
		return h, err
	}
	h.status = status
	var (
		lengths  []byte // the first Content-Length, trimmed
		nLengths int
		te       []byte // the Transfer-Encoding
		nTE      int
		closing  = major < 1 // Connection: close, or none of keep-alive on HTTP/1.0
		keep     bool
		last     *string // the value a continuation line goes on
	)
	for first := true; ; first = false {
		line, err := r.line()
		if err != nil {
			return h, err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' { // an obsolete continuation line
			if first {
				return h, errors.New("malformed MIME header initial line")
			}
			if last != nil {
				*last += " " + string(trimOWS(line))
			}
			continue
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !validName(name) {
			return h, fmt.Errorf("malformed MIME header line: %q", clip(line))
		}
		value = trimOWS(value)
		last = nil
		switch {
		case equalFold(name, "Content-Length"):
			if nLengths++; nLengths == 1 {
				lengths = append(lengths, value...)
			} else if !bytes.Equal(lengths, value) {
				return h, errors.New("http: message cannot contain multiple Content-Length headers")
			}
		case equalFold(name, "Transfer-Encoding"):
			if nTE++; nTE == 1 {
				te = append(te, value...)
			}
		case equalFold(name, "Connection"):
			closing = closing || hasToken(value, "close")
			keep = keep || hasToken(value, "keep-alive")
		case equalFold(name, "Retry-After"):
			last = firstValue(&h.retryAfter, value)
		case equalFold(name, "Location"):
			last = firstValue(&h.location, value)
		case equalFold(name, "Content-Encoding"):
			last = firstValue(&h.encoding, value)
		}
	}
	if major == 1 && minor == 0 && !keep {
		closing = true
	}
	h.close = closing
	if nTE > 0 && (major > 1 || major == 1 && minor >= 1) { // HTTP/1.0's is ignored
		if nTE > 1 {
			return h, errors.New("too many transfer encodings")
		}
		if !equalFold(te, "chunked") {
			return h, fmt.Errorf("unsupported transfer encoding: %q", clip(te))
		}
		h.chunked = true
	}
	switch {
	case h.status/100 == 1 || h.status == 204 || h.status == 304:
		h.length, h.chunked = 0, false
		if h.status == 101 { // a switch of protocols: the connection is not HTTP any more
			h.close = true
		}
	case h.chunked:
		h.length = -1
	case nLengths > 0:
		n, ok := parseLength(lengths)
		if !ok {
			return h, fmt.Errorf("bad Content-Length %q", clip(lengths))
		}
		h.length = n
	default: // the body runs until the connection closes
		h.length, h.close = -1, true
	}
	return h, nil
}

// parseStatusLine reads "HTTP/1.1 200 OK" as Go's ReadResponse does.
func parseStatusLine(line []byte) (major, minor, status int, err error) {
	proto, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return 0, 0, 0, fmt.Errorf("malformed HTTP response %q", clip(line))
	}
	rest = bytes.TrimLeft(rest, " ")
	code, _, _ := bytes.Cut(rest, []byte(" "))
	if len(code) != 3 || !isDigit(code[0]) || !isDigit(code[1]) || !isDigit(code[2]) {
		return 0, 0, 0, fmt.Errorf("malformed HTTP status code %q", clip(code))
	}
	status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	if status < 100 { // Go's reader takes 000, which an attempt would record as no answer at all
		return 0, 0, 0, fmt.Errorf("malformed HTTP status code %q", code)
	}
	if len(proto) != 8 || string(proto[:5]) != "HTTP/" || !isDigit(proto[5]) || proto[6] != '.' || !isDigit(proto[7]) {
		return 0, 0, 0, fmt.Errorf("malformed HTTP version %q", clip(proto))
	}
	return int(proto[5] - '0'), int(proto[7] - '0'), status, nil
}

// firstValue keeps v in *dst when it is the first of its name, and
// returns dst for the continuation lines that may follow.
func firstValue(dst *string, v []byte) *string {
	if *dst != "" {
		return nil
	}
	*dst = string(v)
	return dst
}

// parseLength reads a Content-Length: digits only, at most MaxInt64.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validName says whether name is a header name (an RFC 7230 token).
func validName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}

// trimOWS trims the spaces and tabs around a header value.
func trimOWS(v []byte) []byte { return bytes.Trim(v, " \t") }

// equalFold compares a header name or token with an ASCII one, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// hasToken says whether a comma-separated header value holds token.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte(","))
		if equalFold(trimOWS(t), token) {
			return true
		}
	}
	return false
}

// clip shortens what an error quotes of a destination's bytes.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
