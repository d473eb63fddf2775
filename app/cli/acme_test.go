package cli_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
	"github.com/miekg/dns"
)

// acmeDomain is the name the ACME test gets a certificate for. Pebble's
// validation resolves it through the test's own DNS server to 127.0.0.1;
// nothing leaves the machine.
const acmeDomain = "hooks.hookbox.test"

// pebbleCA is Let's Encrypt's ACME test server (letsencrypt/pebble) run in
// this process on 127.0.0.1: the ACME directory over HTTPS, its CA and its
// validation authority, which really fetches the HTTP-01 challenge.
type pebbleCA struct {
	directory string         // ACME directory URL
	serverPEM string         // file with the directory's TLS certificate (trust it to talk ACME)
	roots     *x509.CertPool // the root the issued certificates chain to
	stop      func()         // takes the CA off the network
}

// env is the environment of a hookbox that talks ACME to p: it trusts the
// directory's certificate as a system root (a variable of the process, not
// of the test, so that the tests stay t.Parallel), with the e2e secrets.
func (p *pebbleCA) env() []string {
	return []string{"SSL_CERT_FILE=" + p.serverPEM, "E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e"}
}

// pebbleNoSleep sets PEBBLE_VA_NOSLEEP once for this process: va.New
// reads it, and t.Setenv would forbid t.Parallel. No hookbox reads it.
var pebbleNoSleep = sync.OnceFunc(func() { os.Setenv("PEBBLE_VA_NOSLEEP", "1") })

// startPebble starts pebble whose validation authority checks HTTP-01 on
// httpPort and TLS-ALPN-01 on tlsPort of whatever dnsAddr resolves names to.
func startPebble(t *testing.T, httpPort, tlsPort int, dnsAddr string) *pebbleCA {
	t.Helper()
	return startPebbleValidity(t, httpPort, tlsPort, dnsAddr, 0)
}

// startPebbleValidity is startPebble issuing certificates valid for
// validity seconds (0: pebble's default, 90 days).
func startPebbleValidity(t *testing.T, httpPort, tlsPort int, dnsAddr string, validity uint64) *pebbleCA {
	t.Helper()
	pebbleNoSleep()
	logger := log.New(io.Discard, "pebble ", 0)
	if testing.Verbose() {
		logger = log.New(os.Stderr, "pebble ", log.Lmicroseconds)
	}
	store := db.NewMemoryStore()
	authority := ca.New(logger, store, "", "rsa", 0, 1, map[string]ca.Profile{
		"default": {Description: "the default profile", ValidityPeriod: validity},
	})
	validator := va.New(logger, httpPort, tlsPort, false, dnsAddr, store)
	front := wfe.New(logger, store, validator, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	srv := httptest.NewUnstartedServer(front.Handler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	p := &pebbleCA{directory: srv.URL + wfe.DirectoryPath, roots: x509.NewCertPool(), stop: srv.Close}
	p.serverPEM = filepath.Join(t.TempDir(), "pebble-server.pem")
	der := srv.Certificate().Raw
	if err := os.WriteFile(p.serverPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	p.roots.AddCert(authority.GetRootCert(0).Cert)
	return p
}

// startDNS answers every A question with 127.0.0.1 (and AAAA with
// nothing), over TCP on 127.0.0.1, as pebble's resolver.
func startDNS(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Listener: ln, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		for _, q := range r.Question {
			if q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET},
					A: net.IPv4(127, 0, 0, 1)})
			}
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

// hookbox serve in ACME mode gets a real certificate from pebble through
// HTTP-01 on http_listen, serves a signed webhook over HTTPS with it,
// redirects plain HTTP, and after a restart serves the cached certificate
// without asking the CA again.
func TestACME_Pebble(t *testing.T) {
	t.Parallel() // mostly waits for the CA's validation
	httpPort := freePort(t)
	// Nothing listens on tlsPort: TLS-ALPN-01, which autocert tries first,
	// fails, so the certificate is proven through HTTP-01 on http_listen.
	tlsPort := freePort(t)
	pebble := startPebble(t, httpPort, tlsPort, startDNS(t))

	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	config := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
http_listen = "127.0.0.1:%d"
domain = %q
acme_email = "ops@hookbox.test"
acme_directory = %q
data_dir = %q

[status]
password_env = "E2E_STATUS_PASSWORD"

[[source]]
name = "gh"
provider = "github"
secret_env = "E2E_GH_SECRET"
`, httpPort, acmeDomain, pebble.directory, dataDir)
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, config, pebble.env())
	waitLog(t, p, "certificate ready", 90*time.Second)
	if strings.Contains(p.logText(), "no certificate yet") {
		t.Fatalf("a failed attempt was logged:\n%s", p.logText())
	}

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pebble.roots, ServerName: acmeDomain},
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "https://" + p.addr

	// A signed webhook over HTTPS, verified against pebble's root.
	body := []byte(`{"ref":"refs/heads/main"}`)
	req, _ := http.NewRequest("POST", base+"/in/gh", bytes.NewReader(body))
	for k, v := range githubHeaders(body, e2eSecret, "acme-1") {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST over HTTPS: %v\n%s", err, p.logText())
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ans map[string]any
	json.Unmarshal(raw, &ans)
	if resp.StatusCode != 200 || ans["status"] != "accepted" {
		t.Fatalf("POST over HTTPS: %d %s", resp.StatusCode, raw)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if !slices.Contains(leaf.DNSNames, acmeDomain) || !strings.Contains(leaf.Issuer.CommonName, "Pebble") {
		t.Errorf("served certificate: names %v, issuer %q", leaf.DNSNames, leaf.Issuer)
	}
	if v := resp.TLS.Version; v < tls.VersionTLS12 {
		t.Errorf("TLS version %x", v)
	}
	serial := leaf.SerialNumber.String()

	// TLS 1.1 is refused.
	old := &tls.Config{RootCAs: pebble.roots, ServerName: acmeDomain, MaxVersion: tls.VersionTLS11}
	if c, err := tls.Dial("tcp", p.addr, old); err == nil {
		c.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}

	// The status page over TLS: HSTS and a Secure session cookie.
	resp, err = client.PostForm(base+"/login", map[string][]string{"user": {"admin"}, "password": {"pw-e2e"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Set-Cookie"), "secure") {
		t.Errorf("login over TLS: %d, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	if h := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(h, "max-age=") {
		t.Errorf("no HSTS over TLS: %q", h)
	}

	// Plain HTTP on http_listen redirects GET to the HTTPS name and port,
	// whatever Host the request names, and refuses a POST (its body has
	// crossed in clear) with 403 and the https address.
	_, port, _ := net.SplitHostPort(p.addr)
	httpBase := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	want := "https://" + acmeDomain + ":" + port + "/in/gh?x=1"
	req, _ = http.NewRequest("GET", httpBase+"/in/gh?x=1", nil)
	req.Host = "evil.example"
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != want {
		t.Errorf("GET over HTTP: %d Location %q; want 301 %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	req, _ = http.NewRequest("POST", httpBase+"/in/gh?x=1", bytes.NewReader(body))
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" ||
		!strings.Contains(string(raw), "https://"+acmeDomain+":"+port+"/in/gh") {
		t.Errorf("POST over HTTP: %d Location %q %s; want 403 naming the https address", resp.StatusCode, resp.Header.Get("Location"), raw)
	}

	// The account key and the certificate are cached under data_dir/acme, 0700.
	fi, err := os.Stat(filepath.Join(dataDir, "acme"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("acme cache: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dataDir, "acme")); len(ents) < 2 {
		t.Errorf("acme cache holds %d files", len(ents))
	}
	p.stop(t)

	// A restart serves the cached certificate; the id is still remembered.
	p = startWith(t, config, pebble.env())
	waitLog(t, p, "certificate ready", 30*time.Second)
	req, _ = http.NewRequest("POST", "https://"+p.addr+"/in/gh", bytes.NewReader(body))
	for k, v := range githubHeaders(body, e2eSecret, "acme-1") {
		req.Header.Set(k, v)
	}
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `"duplicate"`) || resp.TLS.PeerCertificates[0].SerialNumber.String() != serial {
		t.Errorf("after restart: %s, certificate %s (want serial %s)", raw, resp.TLS.PeerCertificates[0].SerialNumber, serial)
	}
	p.stop(t)
}
