package web_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// originPost sends POST /api/v1/dead-letters/replay with Basic auth, the
// Host host and the Origin origin (and X-Forwarded-Proto when proto is
// set) to base through client, and returns the status.
func originPost(t *testing.T, client *http.Client, base, host, origin, proto string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/v1/dead-letters/replay", nil)
	req.SetBasicAuth("ops", "pw-1234")
	req.Host = host
	req.Header.Set("Origin", origin)
	if proto != "" {
		req.Header.Set("X-Forwarded-Proto", proto)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A state change with Basic auth must not come from another origin, and
// an origin is its scheme too (issue 24): a page at https://host is not
// hookbox at http://host. The scheme is the request's own (TLS, or a
// trusted proxy's X-Forwarded-Proto), or public_url's.
func TestAPI_OriginScheme(t *testing.T) {
	type tc struct {
		name, host, origin, proto string
		want                      int
	}
	run := func(t *testing.T, client *http.Client, base string, cases []tc) {
		for _, tt := range cases {
			if got := originPost(t, client, base, tt.host, tt.origin, tt.proto); got != tt.want {
				t.Errorf("%s: Host %q, Origin %q, X-Forwarded-Proto %q: %d; want %d", tt.name, tt.host, tt.origin, tt.proto, got, tt.want)
			}
		}
	}
	t.Run("PlainHTTP", func(t *testing.T) {
		s, _, _ := newAPIServer(t, apiConfig)
		base := "http://" + serve(t, s.App())
		run(t, http.DefaultClient, base, []tc{
			{"HTTPSameHost", "hooks.example:8080", "http://hooks.example:8080", "", 200},
			{"HTTPDefaultPort", "hooks.example", "http://hooks.example", "", 200},
			{"HTTPDefaultPortWritten", "hooks.example", "http://HOOKS.example:80", "", 200},
			{"HTTPSOnHTTP", "hooks.example", "https://hooks.example", "", 403},
			{"HTTPSOnHTTPSamePort", "hooks.example:8080", "https://hooks.example:8080", "", 403},
			{"OtherPort", "hooks.example:8080", "http://hooks.example:8081", "", 403},
			{"OtherHost", "hooks.example", "http://evil.example", "", 403},
			{"Null", "hooks.example", "null", "", 403},
			{"OtherScheme", "hooks.example", "ftp://hooks.example", "", 403},
			// X-Forwarded-Proto counts only from a trusted proxy.
			{"ForwardedProtoUntrusted", "hooks.example", "https://hooks.example", "https", 403},
		})
	})
	t.Run("TrustedProxy", func(t *testing.T) {
		s, _, _ := newAPIServer(t, "[server]\ntrusted_proxies = [\"127.0.0.1\"]\n"+apiConfig)
		base := "http://" + serve(t, s.App())
		run(t, http.DefaultClient, base, []tc{
			{"HTTPSBehindTLSProxy", "hooks.example", "https://hooks.example", "https", 200},
			{"HTTPBehindTLSProxy", "hooks.example", "http://hooks.example", "https", 403},
			{"HTTPSBehindPlainProxy", "hooks.example", "https://hooks.example", "http", 403},
			{"HTTPNoForwardedProto", "hooks.example", "http://hooks.example", "", 200},
		})
	})
	t.Run("PublicURL", func(t *testing.T) {
		s, _, _ := newAPIServer(t, "[server]\npublic_url = \"https://hooks.example\"\n"+apiConfig)
		base := "http://" + serve(t, s.App())
		run(t, http.DefaultClient, base, []tc{
			// TLS ends at a proxy not listed in trusted_proxies: the
			// browser's origin is public_url's.
			{"PublicURLOrigin", "127.0.0.1:8080", "https://hooks.example", "", 200},
			{"PublicURLOtherScheme", "127.0.0.1:8080", "http://hooks.example", "", 403},
			{"OwnHost", "127.0.0.1:8080", "http://127.0.0.1:8080", "", 200},
		})
	})
	t.Run("TLSListener", func(t *testing.T) {
		s, _, _ := newAPIServer(t, apiConfig)
		dir := t.TempDir()
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		writePair(t, certFile, keyFile, "hooks.example", 7)
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.App().Listener(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}}))
		t.Cleanup(func() { s.App().Shutdown() })
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		base := "https://" + ln.Addr().String()
		host := "hooks.example:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
		run(t, client, base, []tc{
			{"HTTPSOnTLS", host, "https://" + host, "", 200},
			{"HTTPSOnTLSDefaultPort", "hooks.example", "https://hooks.example", "", 200},
			{"HTTPOnTLS", host, "http://" + host, "", 403},
		})
	})
}
