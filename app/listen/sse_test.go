package listen_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"hookbox/app/listen"
)

// readAll reads every message of stream, and the error that ended it.
func readAll(r io.Reader, max int) ([]listen.Message, error) {
	sr := listen.NewReader(r, max)
	var out []listen.Message
	for {
		m, err := sr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []listen.Message
	}{
		{"Event", "id: 7\nevent: event\ndata: {\"seq\":7}\n\n",
			[]listen.Message{{ID: "7", Event: "event", Data: `{"seq":7}`}}},
		{"CRLF", "id: 7\r\nevent: notice\r\ndata: a\r\n\r\n",
			[]listen.Message{{ID: "7", Event: "notice", Data: "a"}}},
		{"LoneCR", "id: 7\revent: notice\rdata: a\r\rdata: b\r\r",
			[]listen.Message{{ID: "7", Event: "notice", Data: "a"}, {ID: "7", Event: "message", Data: "b"}}},
		{"MultiLineData", "data: one\ndata:two\ndata:  three\ndata\n\n",
			[]listen.Message{{Event: "message", Data: "one\ntwo\n three\n"}}},
		{"Comments", ": ping\n\n: hello\ndata: x\n: mid\n\n",
			[]listen.Message{{Event: "message", Data: "x"}}},
		{"NoDataNoDispatch", "event: notice\nid: 3\n\ndata: y\n\n",
			[]listen.Message{{ID: "3", Event: "message", Data: "y"}}},
		{"IDKeptAcrossMessages", "id: 5\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
			[]listen.Message{{ID: "5", Event: "message", Data: "a"}, {ID: "5", Event: "message", Data: "b"}, {ID: "", Event: "message", Data: "c"}}},
		{"IDWithNULIgnored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
			[]listen.Message{{ID: "1", Event: "message", Data: "a"}, {ID: "1", Event: "message", Data: "b"}}},
		{"UnknownFieldsIgnored", "foo: bar\nretry: x\ndata: a\n\n",
			[]listen.Message{{Event: "message", Data: "a"}}},
		{"ColonInValue", "data: a: b\n\n",
			[]listen.Message{{Event: "message", Data: "a: b"}}},
		{"BOM", "\xEF\xBB\xBFdata: a\n\n",
			[]listen.Message{{Event: "message", Data: "a"}}},
		{"UnfinishedDiscarded", "data: a\n\ndata: b\n",
			[]listen.Message{{Event: "message", Data: "a"}}},
		{"EmptyData", "data\n\n",
			[]listen.Message{{Event: "message", Data: ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.stream), iotest.OneByteReader(strings.NewReader(tt.stream))} {
				got, err := readAll(r, 1<<10)
				if err != io.EOF {
					t.Fatalf("ended with %v, want EOF", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got %q\nwant %q", got, tt.want)
				}
			}
		})
	}
}

func TestReader_Retry(t *testing.T) {
	sr := listen.NewReader(strings.NewReader("retry: 2500\ndata: a\n\nretry: +3\ndata: b\n\n"), 100)
	sr.Next()
	if got, want := sr.Retry, 2500*time.Millisecond; got != want {
		t.Fatalf("retry %v, want %v", got, want)
	}
	sr.Next()
	if got, want := sr.Retry, 2500*time.Millisecond; got != want {
		t.Fatalf("retry after +3: %v, want %v (kept)", got, want)
	}
}

// A message ended by a lone CR is dispatched at once: the reader does not
// wait for the byte after the CR (it may come 15 s later, with a ping).
func TestReader_LoneCRDispatchesAtOnce(t *testing.T) {
	pr, pw := io.Pipe()
	sr := listen.NewReader(pr, 100)
	go pw.Write([]byte("data: a\r\r"))
	m, err := sr.Next()
	if err != nil || m.Data != "a" {
		t.Fatalf("got %+v, %v", m, err)
	}
	go func() { pw.Write([]byte("\ndata: b\n\n")); pw.Close() }()
	m, err = sr.Next()
	if err != nil || m.Data != "b" {
		t.Fatalf("after the LF: got %+v, %v", m, err)
	}
}

func TestReader_Bounds(t *testing.T) {
	t.Run("LongLine", func(t *testing.T) {
		_, err := readAll(strings.NewReader("data: "+strings.Repeat("x", 200)+"\n\n"), 100)
		if !errors.Is(err, listen.ErrTooLong) {
			t.Fatalf("err %v, want ErrTooLong", err)
		}
	})
	t.Run("LongLineWithoutEnd", func(t *testing.T) {
		// A peer that sends bytes and never a line end is cut at the bound,
		// not read into memory forever.
		_, err := readAll(io.LimitReader(neverEnding('x'), 1<<30), 1000)
		if !errors.Is(err, listen.ErrTooLong) {
			t.Fatalf("err %v, want ErrTooLong", err)
		}
	})
	t.Run("ManyDataLines", func(t *testing.T) {
		_, err := readAll(strings.NewReader(strings.Repeat("data: 0123456789\n", 20)+"\n"), 100)
		if !errors.Is(err, listen.ErrTooLong) {
			t.Fatalf("err %v, want ErrTooLong", err)
		}
	})
	t.Run("AtTheBound", func(t *testing.T) {
		line := "data: " + strings.Repeat("x", 94)
		got, err := readAll(strings.NewReader(line+"\n\n"), 100)
		if err != io.EOF || len(got) != 1 || len(got[0].Data) != 94 {
			t.Fatalf("a line of exactly the bound: %d messages, %v", len(got), err)
		}
	})
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// encode writes m as a stream would: its id (when it differs from
// lastID), its event and each line of its data.
func encode(w *bytes.Buffer, m listen.Message, lastID string) {
	if m.ID != lastID {
		fmt.Fprintf(w, "id: %s\n", m.ID)
	}
	fmt.Fprintf(w, "event: %s\n", m.Event)
	for _, line := range strings.Split(m.Data, "\n") {
		fmt.Fprintf(w, "data: %s\n", line)
	}
	w.WriteString("\n")
}

// FuzzSSE reads arbitrary bytes as a stream: it never panics, stays within
// its bound, reads the same whether the bytes come at once or one by one,
// and what it read, written again as a stream, reads back the same.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"id: 7\nevent: event\ndata: {\"seq\":7}\n\n",
		"id: 7\r\nevent: notice\r\ndata: a\r\n\r\n",
		"data: a\r\rdata: b\r\n\r\n: ping\n\n",
		"\xEF\xBB\xBFdata:x\ndata\nid:1\x00\nretry: 10\n\n",
		"event\nid\n:\n\n\n\r\r\n",
	} {
		f.Add([]byte(s))
	}
	const max = 256
	f.Fuzz(func(t *testing.T, stream []byte) {
		got, err := readAll(bytes.NewReader(stream), max)
		if err != io.EOF && !errors.Is(err, listen.ErrTooLong) {
			t.Fatalf("ended with %v", err)
		}
		slow, err2 := readAll(iotest.OneByteReader(bytes.NewReader(stream)), max)
		if !reflect.DeepEqual(got, slow) || (err == io.EOF) != (err2 == io.EOF) {
			t.Fatalf("at once: %q, %v\none by one: %q, %v", got, err, slow, err2)
		}
		var again bytes.Buffer
		lastID := ""
		for _, m := range got {
			if len(m.Data) > max || strings.ContainsAny(m.Data, "\r") || strings.ContainsAny(m.Event, "\r\n") ||
				strings.ContainsAny(m.ID, "\r\n\x00") || m.Event == "" {
				t.Fatalf("message %q breaks the reader's promises", m)
			}
			encode(&again, m, lastID)
			lastID = m.ID
		}
		back, err := readAll(&again, 2*max)
		if err != io.EOF {
			t.Fatalf("written again: %v\n%q", err, again.String())
		}
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(back, got) {
			t.Fatalf("read %q\nwritten again and read %q", got, back)
		}
	})
}
