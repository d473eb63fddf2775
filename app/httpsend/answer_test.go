package httpsend

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// readAll reads one answer from raw as an exchange does: its head, then
// its body as readAnswer keeps and drains it. rest is what was left
// unread behind it.
func readAll(raw string) (h head, snippet, note string, whole bool, rest string, err error) {
	br := bufio.NewReaderSize(strings.NewReader(raw), 4<<10)
	if h, err = readHead(br); err != nil {
		return h, "", "", false, "", err
	}
	s, note, whole := readAnswer(context.Background(), newBody(br, h), h.length, time.Second)
	left, _ := io.ReadAll(br)
	return h, string(s), note, whole, string(left), nil
}

// Answers the framing cases no app test sends: each read to its end (or
// not) as Go's transport reads it, the connection kept or not.
func TestReadAnswer_Framing(t *testing.T) {
	for _, tt := range []struct {
		name, raw   string
		status      int
		snippet     string
		reuse       bool // read whole, and the connection may carry the next
		rest        string
		retryAfter  string
		wantErrPart string
	}{
		{name: "Trailers", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nok\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\nNEXT",
			status: 200, snippet: "ok", reuse: true, rest: "NEXT"},
		{name: "ContinueThenAnswer", raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
			status: 201, snippet: "ok", reuse: true},
		{name: "HTTP10KeepAlive", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
			status: 200, snippet: "ok", reuse: true},
		{name: "HTTP10", raw: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, snippet: "ok"},
		{name: "HTTP10ChunkedIgnored", raw: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok", status: 200, snippet: "2\r\nok"},
		{name: "ConnectionClose", raw: "HTTP/1.1 200 OK\r\nConnection: Keep-Alive, close\r\nContent-Length: 2\r\n\r\nok", status: 200, snippet: "ok"},
		{name: "SameContentLengthTwice", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nok", status: 200, snippet: "ok", reuse: true},
		{name: "ConflictingContentLength", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!", wantErrPart: "multiple Content-Length"},
		{name: "BadContentLength", raw: "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok", wantErrPart: "bad Content-Length"},
		{name: "ChunkedOverridesLength", raw: "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", status: 200, snippet: "ok", reuse: true},
		{name: "ChunkSizeOverflow", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nok", status: 200, rest: "ok"},
		{name: "ChunkWithoutCRLF", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n", status: 200, snippet: "ok", rest: "0\r\n\r\n"},
		{name: "UnsupportedTransferEncoding", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", wantErrPart: "unsupported transfer encoding"},
		{name: "NoContent", raw: "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\nNEXT", status: 204, reuse: true, rest: "NEXT"},
		{name: "NotModified", raw: "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", status: 304, reuse: true},
		{name: "UntilClose", raw: "HTTP/1.1 503 Busy\r\nRetry-After: 7\r\nRetry-After: 9\r\n\r\nlater", status: 503, snippet: "later", retryAfter: "7"},
		{name: "ContinuationLine", raw: "HTTP/1.1 429 Slow\r\nRetry-After:\r\n 120\r\nContent-Length: 0\r\n\r\n", status: 429, reuse: true, retryAfter: " 120"},
		{name: "BareLF", raw: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", status: 200, snippet: "ok", reuse: true},
		{name: "MalformedStatus", raw: "HTTP/1.1 2000 OK\r\n\r\n", wantErrPart: "malformed HTTP status code"},
		{name: "StatusZero", raw: "HTTP/1.1 000 Nothing\r\n\r\n", wantErrPart: "malformed HTTP status code"},
		{name: "MalformedVersion", raw: "HTTQ/1.1 200 OK\r\n\r\n", wantErrPart: "malformed HTTP version"},
		{name: "HeaderWithoutColon", raw: "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", wantErrPart: "malformed MIME header"},
		{name: "ShortBody", raw: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", status: 200, snippet: "ok"},
		{name: "NoAnswer", raw: "", wantErrPart: "EOF"},
		{name: "CutHeader", raw: "HTTP/1.1 200 OK\r\nContent-Le", wantErrPart: "unexpected EOF"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, snippet, _, whole, rest, err := readAll(tt.raw)
			if tt.wantErrPart != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrPart) {
					t.Fatalf("err = %v; want one saying %q", err, tt.wantErrPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.status != tt.status || snippet != tt.snippet || rest != tt.rest || h.retryAfter != tt.retryAfter {
				t.Errorf("status %d, snippet %q, rest %q, Retry-After %q; want %d, %q, %q, %q",
					h.status, snippet, rest, h.retryAfter, tt.status, tt.snippet, tt.rest, tt.retryAfter)
			}
			if reuse := whole && !h.close; reuse != tt.reuse {
				t.Errorf("reusable %v (read whole %v, close %v); want %v", reuse, whole, h.close, tt.reuse)
			}
		})
	}
}

// An answer header over app.MaxAnswerHeader, in one line or in many, or
// in 1xx answers before it, fails with the words app.SendError turns into
// its sentence, and no more than the bound is read.
func TestReadHead_Bounded(t *testing.T) {
	long := strings.Repeat("y", app.MaxAnswerHeader)
	for name, raw := range map[string]string{
		"OneLine":   "HTTP/1.1 200 OK\r\nX-Long: " + long + "\r\n\r\n",
		"ManyLines": "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Filler: "+long[:1000]+"\r\n", 20) + "\r\n",
		"Many1xx":   strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", app.MaxAnswerHeader/20) + "HTTP/1.1 200 OK\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			cr := &countingReader{r: strings.NewReader(raw)}
			_, err := readHead(bufio.NewReaderSize(cr, 4<<10))
			if err == nil {
				t.Fatal("read whole")
			}
			if got := app.SendError(context.Background(), err, time.Second).Error(); got != "the answer's header is longer than 16 KiB: not read on" {
				t.Errorf("error %q", got)
			}
			if cr.n > app.MaxAnswerHeader+8<<10 {
				t.Errorf("read %d bytes", cr.n)
			}
		})
	}
}

// A chunked answer of tiny chunks with long extensions is refused before
// it costs more than its framing bound.
func TestReadAnswer_ChunkFramingBounded(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("1;"+strings.Repeat("e", 1000)+"\r\nx\r\n", 100) + "0\r\n\r\n"
	_, _, note, whole, _, err := readAll(raw)
	if err != nil || whole || !strings.Contains(note, "too much non-data") {
		t.Fatalf("note %q, read whole %v, err %v; want it cut for its framing", note, whole, err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzAnswer reads arbitrary bytes as an answer: never a panic, never a
// loop, never more than the bounds: the header's, the snippet and the
// drain, the chunk framing's and the trailers'.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nok\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 301 Moved\r\nLocation: http://x/\r\nRetry-After: 3\r\nContent-Encoding: gzip\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cr := &countingReader{r: strings.NewReader(string(raw))}
		br := bufio.NewReaderSize(cr, 4<<10)
		h, err := readHead(br)
		if err != nil {
			if cr.n > app.MaxAnswerHeader+4<<10 {
				t.Fatalf("read %d bytes for a failed header", cr.n)
			}
			return
		}
		if h.status < 100 || h.status > 999 || h.length < -1 || h.chunked && h.length != -1 {
			t.Fatalf("head %+v", h)
		}
		atHead := cr.n
		snippet, _, whole := readAnswer(context.Background(), newBody(br, h), h.length, time.Second)
		if len(snippet) > app.MaxResponseSnippet {
			t.Fatalf("kept %d bytes", len(snippet))
		}
		// Data, chunk framing (at most 18 bytes a chunk of a byte or
		// more past 16 KiB), trailers, and a buffer's read ahead.
		data := app.MaxResponseSnippet + maxDrain + 1
		if bound := atHead + data*19 + 16<<10 + app.MaxAnswerHeader + 4<<10; cr.n > bound {
			t.Fatalf("read %d bytes, bound %d", cr.n, bound)
		}
		if whole && h.length >= 0 && h.length > int64(data) {
			t.Fatalf("read whole an answer of %d bytes", h.length)
		}
	})
}
