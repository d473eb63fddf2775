package httpsend

import (
	"bufio"
	"errors"
	"io"

	"hookbox/app"
)

// body reads an answer's body as its head frames it: its declared length,
// its chunks (and trailers), or until the connection closes. Read returns
// io.EOF at its end, and io.ErrUnexpectedEOF when the connection closes
// before.
type body struct {
	br *bufio.Reader
	// left is what remains of the declared length, or of the current
	// chunk; -1 for a body that runs until the close.
	left    int64
	chunked bool
	// started says the first chunk's size line was read; excess counts
	// the chunk framing beyond what its data allows (as Go's reader does,
	// so that tiny chunks with long extensions cannot make a drain read
	// megabytes).
	started bool
	excess  int64
	done    bool
}

func newBody(br *bufio.Reader, h head) *body {
	b := &body{br: br, left: h.length, chunked: h.chunked}
	if b.chunked {
		b.left = 0
	}
	b.done = !b.chunked && b.left == 0
	return b
}

var (
	errChunkLine   = errors.New("malformed chunked encoding: size line")
	errChunkEnd    = errors.New("malformed chunked encoding: no CRLF after a chunk")
	errChunkExcess = errors.New("chunked encoding contains too much non-data")
)

// maxChunkLine bounds a chunk's size line (with its extensions), as Go's
// reader does.
const maxChunkLine = 4096

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.chunked && b.left == 0 {
		if err := b.nextChunk(); err != nil {
			return 0, err
		}
		if b.done {
			return 0, io.EOF
		}
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	if b.left < 0 { // until the close
		if err == io.EOF {
			b.done = true
		}
		return n, err
	}
	b.left -= int64(n)
	if b.left == 0 && !b.chunked {
		b.done = true
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// nextChunk reads the end of the chunk before (its CRLF) and the size
// line of the next; after the last chunk, the trailers.
func (b *body) nextChunk() error {
	if b.started {
		if err := b.crlf(); err != nil {
			return err
		}
	}
	b.started = true
	line, err := b.br.ReadSlice('\n')
	if err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		if err == bufio.ErrBufferFull || len(line) >= maxChunkLine {
			return errChunkLine
		}
		return err
	}
	if len(line) >= maxChunkLine {
		return errChunkLine
	}
	b.excess += int64(len(line)) + 2 // and the CRLF after the chunk
	size, ok := parseChunkSize(line)
	if !ok {
		return errChunkLine
	}
	if b.excess -= 16 + 2*int64(size); b.excess < 0 {
		b.excess = 0
	}
	if b.excess > 16<<10 {
		return errChunkExcess
	}
	if size == 0 {
		b.done = true
		return readTrailers(b.br)
	}
	b.left = int64(size)
	return nil
}

// crlf reads the CRLF that ends a chunk's data.
func (b *body) crlf() error {
	c1, err := b.br.ReadByte()
	if err == nil {
		var c2 byte
		if c2, err = b.br.ReadByte(); err == nil {
			if c1 != '\r' || c2 != '\n' {
				return errChunkEnd
			}
			return nil
		}
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseChunkSize reads a chunk's size line: hex digits (at most 16, so
// that it fits), an optional extension after ';', the line end.
func parseChunkSize(line []byte) (uint64, bool) {
	line = line[:len(line)-1] // its '\n'
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	for i, c := range line {
		if c == ';' {
			line = line[:i]
			break
		}
	}
	line = trimOWS(line)
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, n <= 1<<62
}

// readTrailers reads the trailer fields after the last chunk, up to the
// empty line, at most app.MaxAnswerHeader bytes of them; none is kept.
func readTrailers(br *bufio.Reader) error {
	r := headReader{br: br, left: app.MaxAnswerHeader}
	for {
		line, err := r.line()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if len(line) == 0 {
			return nil
		}
	}
}
