package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/app/config"
	"hookbox/app/web"
)

// The plain-HTTP listener next to HTTPS (files mode here; ACME mode in
// app/cli/acme_test.go): a POST, whose body and token have already
// crossed the network in clear, is refused with 403 and a message that
// names the https address, never redirected; GET and HEAD are redirected
// to the configured host whatever Host the request names.
func TestTLS_PlainHTTPListener(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writePair(t, certFile, keyFile, "cert.example.com", 1)
	for _, tt := range []struct {
		name, publicURL, wantBase string
	}{
		{"PublicURL", "https://hooks.example.com", "https://hooks.example.com:9443"},
		{"PublicURLWithPort", "https://hooks.example.com:8443", "https://hooks.example.com:8443"},
		{"CertificateName", "", "https://cert.example.com:9443"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			public := ""
			if tt.publicURL != "" {
				public = fmt.Sprintf("public_url = %q\n", tt.publicURL)
			}
			cfg, err := config.Parse("t.toml", fmt.Sprintf(`[server]
listen = "127.0.0.1:9443"
http_listen = "127.0.0.1:9080"
cert_file = %q
key_file = %q
data_dir = %q
%s
[[source]]
name = "gh"
provider = "github"
secret = "x"
`, certFile, keyFile, dir, public), nil)
			if err != nil {
				t.Fatal(err)
			}
			tl, err := web.NewTLS(cfg.Server, web.TLSOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
				for _, path := range []string{"/in/gh", "/login", "/api/v1/dead-letters/replay"} {
					req := httptest.NewRequest(method, "http://evil.example"+path, strings.NewReader(`{"token":"x"}`))
					req.Header.Set("Authorization", "Bearer t0ken")
					w := httptest.NewRecorder()
					tl.HTTP.ServeHTTP(w, req)
					var ans struct{ Status, Error string }
					json.Unmarshal(w.Body.Bytes(), &ans)
					if w.Code != http.StatusForbidden || w.Header().Get("Location") != "" || ans.Status != "error" ||
						!strings.Contains(ans.Error, tt.wantBase+path) || !strings.Contains(ans.Error, "in clear") {
						t.Errorf("%s %s: %d Location %q %s", method, path, w.Code, w.Header().Get("Location"), w.Body.String())
					}
				}
			}
			for _, method := range []string{"GET", "HEAD"} {
				req := httptest.NewRequest(method, "http://evil.example:666/events?x=1", nil)
				w := httptest.NewRecorder()
				tl.HTTP.ServeHTTP(w, req)
				if got, want := w.Header().Get("Location"), tt.wantBase+"/events?x=1"; w.Code != http.StatusMovedPermanently || got != want {
					t.Errorf("%s: %d Location %q, want 301 %q", method, w.Code, got, want)
				}
			}
		})
	}
}
