package httpsend

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// The send client's connections are dialled with their destination's
// timeout, found under the address Go's transport dials (host:port, the
// port from the scheme when the URL has none), whatever the host's case.
func TestConnSet_TimeoutPerAddress(t *testing.T) {
	dests := []*app.Destination{
		{URL: "https://Shop.Example.com/hooks?k=1", Timeout: 7 * time.Second},
		{URL: "http://127.0.0.1:8081/a", Timeout: 2 * time.Second},
		{URL: "http://127.0.0.1:8081/b", Timeout: 5 * time.Second}, // same address: the longest
		{URL: "http://[::1]/x", Timeout: 3 * time.Second},
	}
	s := newConnSet(dests)
	for _, d := range dests {
		u, err := url.Parse(d.URL)
		if err != nil {
			t.Fatal(err)
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		addr := strings.ToLower(net.JoinHostPort(u.Hostname(), port))
		want := d.Timeout
		if addr == "127.0.0.1:8081" {
			want = 5 * time.Second
		}
		if got := (*s.timeouts.Load())[addr]; got != want {
			t.Errorf("%s: dial timeout for %q is %v, want %v (known: %v)", d.URL, addr, got, want, *s.timeouts.Load())
		}
	}
}
