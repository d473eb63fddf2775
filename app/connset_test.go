package app

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// The send client's connections are dialled with their destination's
// timeout, found under the address fasthttp's client dials.
func TestConnSet_TimeoutPerAddress(t *testing.T) {
	dests := []*Destination{
		{URL: "https://Shop.Example.com/hooks?k=1", Timeout: 7 * time.Second},
		{URL: "http://127.0.0.1:8081/a", Timeout: 2 * time.Second},
		{URL: "http://127.0.0.1:8081/b", Timeout: 5 * time.Second}, // same address: the longest
		{URL: "http://[::1]/x", Timeout: 3 * time.Second},
	}
	s := newConnSet(dests)
	for _, d := range dests {
		var u fasthttp.URI
		if err := u.Parse(nil, []byte(d.URL)); err != nil {
			t.Fatal(err)
		}
		addr := fasthttp.AddMissingPort(string(u.Host()), string(u.Scheme()) == "https")
		want := d.Timeout
		if addr == "127.0.0.1:8081" {
			want = 5 * time.Second
		}
		if got := s.timeouts[addr]; got != want {
			t.Errorf("%s: dial timeout for %q is %v, want %v (known: %v)", d.URL, addr, got, want, s.timeouts)
		}
	}
}
