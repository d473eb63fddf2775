package httpsend

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// The request goes out byte for byte as Go's client wrote it (the one
// hookbox used before its own, with compression off): request line, Host
// as the URL writes it, User-Agent, Content-Length, the other headers in
// order of name, for the header set app.Outbound builds.
func TestAppendRequest_AsGoWritesIt(t *testing.T) {
	cfg := &app.Config{}
	e := &app.Event{Source: "gh", ID: "ev-1", Topic: "push", Body: []byte(`{"a":1}`),
		Header: []app.HeaderField{{Name: "X-Github-Event", Value: "push"}, {Name: "X-Custom", Value: " a "}, {Name: "X-Custom", Value: "b"}}}
	for _, url := range []string{
		"http://127.0.0.1:8080/hook?k=1&b=%20x",
		"https://Shop.Example.com/hooks",
		"http://example.com:80/",
		"http://example.com:/a/b",
		"https://example.com",
		"http://bücher.example/x",
	} {
		t.Run(url, func(t *testing.T) {
			dest := &app.Destination{Name: "d", URL: url, Secret: []byte("0123456789abcdef0123456789abcdef"), Headers: map[string]string{"X-Api-Key": "k"}}
			header, err := app.NewOutbound(cfg, "dev").Header(dest, e, nil, 2, time.Unix(1700000000, 0))
			if err != nil {
				t.Fatal(err)
			}
			tg, err := parseTarget(url)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendRequest(nil, tg, header, len(e.Body))
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(e.Body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = header
			var want bytes.Buffer
			if err := req.Write(&want); err != nil {
				t.Fatal(err)
			}
			if w := strings.TrimSuffix(want.String(), string(e.Body)); string(got) != w {
				t.Errorf("wrote\n%s\nGo's client writes\n%s", got, w)
			}
		})
	}
}

// An empty body still says Content-Length: 0, as Go's client does for a
// POST; a header value with a line break fails the send, as it did.
func TestAppendRequest_Edges(t *testing.T) {
	tg, _ := parseTarget("http://h/x")
	got, err := appendRequest(nil, tg, http.Header{"User-Agent": {"u"}}, 0)
	if err != nil || string(got) != "POST /x HTTP/1.1\r\nHost: h\r\nUser-Agent: u\r\nContent-Length: 0\r\n\r\n" {
		t.Errorf("empty body: %q, %v", got, err)
	}
	for _, h := range []http.Header{{"X-A": {"a\r\nX-Injected: 1"}}, {"X-A": {"a\nb"}}, {"X A": {"a"}}} {
		if got, err := appendRequest(nil, tg, h, 0); err == nil {
			t.Errorf("%q written: %q", h, got)
		}
	}
	for _, u := range []string{"ftp://h/x", "http:///x", "://x", "http://h h/"} {
		if _, err := parseTarget(u); err == nil {
			t.Errorf("parseTarget(%q) took it", u)
		}
	}
}
