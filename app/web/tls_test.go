package web_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// writePair writes a fresh self-signed certificate for name (serial sn) and
// its key to certFile and keyFile, each through a rename as a renewer does.
func writePair(t *testing.T, certFile, keyFile, name string, sn int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(sn), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		pem  []byte
	}{
		{keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})},
		{certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
	} {
		if err := os.WriteFile(f.path+".new", f.pem, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.path+".new", f.path); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// servedSerial connects over TLS and returns the serial of the certificate served.
func servedSerial(t *testing.T, addr string) int64 {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: "hooks.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// cert_file mode: replacing the files switches the served certificate
// without a restart; a pair that does not load keeps the previous one.
func TestTLS_CertFilesReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "fullchain.pem"), filepath.Join(dir, "privkey.pem")
	certA := writePair(t, certFile, keyFile, "hooks.example.com", 1001)
	cfg, err := config.Parse("t.toml", fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
cert_file = %q
key_file = %q
data_dir = %q
[status]
password = "pw"
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
`, certFile, keyFile, dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.TLS != app.TLSFiles || cfg.Server.HTTPListen != "" {
		t.Fatalf("server = %+v", cfg.Server)
	}
	tlsSrv, err := web.NewTLS(cfg.Server, web.TLSOptions{ReloadEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var al alerts // the watcher's reports: the signal that it tried a pair
	tlsSrv.Alert = al.alert
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping,
		Access: access.Fixed("admin", "pw")})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go srv.Serve(tlsSrv.Listener(ln))
	t.Cleanup(func() { srv.Shutdown(t.Context()) })

	if got := servedSerial(t, addr); got != certA.SerialNumber.Int64() {
		t.Fatalf("serial %d, want pair A's %d", got, certA.SerialNumber.Int64())
	}

	// A signed webhook over HTTPS, trusting exactly pair A.
	roots := x509.NewCertPool()
	roots.AddCert(certA)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		ServerName: "hooks.example.com", MinVersion: tls.VersionTLS12}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	body := []byte(`{"id":1}`)
	mac := hmac.New(sha256.New, []byte("s3cret-shop"))
	mac.Write(body)
	req, _ := http.NewRequest("POST", "https://"+addr+"/in/shop", bytes.NewReader(body))
	req.Header.Set("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	req.Header.Set("X-Shopify-Event-Id", "tls-1")
	req.Header.Set("X-Shopify-Topic", "orders/create")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `"accepted"`) {
		t.Fatalf("POST over HTTPS: %d %s", resp.StatusCode, raw)
	}

	// The CLI's client reaches it on 127.0.0.1, checking the pair's name.
	local := cfg.Server
	local.Listen = addr
	base, cli := web.LocalClient(local, 5*time.Second)
	if resp, err := cli.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(base, "https://") {
		t.Fatalf("LocalClient %s: %v %v", base, resp, err)
	} else {
		resp.Body.Close()
	}

	// Over TLS the session cookie is Secure and pages send HSTS.
	resp, err = client.PostForm("https://"+addr+"/login", map[string][]string{"user": {"admin"}, "password": {"pw"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := resp.Header.Get("Set-Cookie"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(strings.ToLower(c), "secure") {
		t.Errorf("login: %d, Set-Cookie %q", resp.StatusCode, c)
	}
	if h := resp.Header.Get("Strict-Transport-Security"); h == "" {
		t.Error("no Strict-Transport-Security over TLS")
	}

	// The renewer writes pair B: the next handshakes get it, no restart.
	certB := writePair(t, certFile, keyFile, "hooks.example.com", 2002)
	apptest.Eventually(t, 5*time.Second, "the served certificate switched to pair B", func() bool {
		return servedSerial(t, addr) == certB.SerialNumber.Int64()
	})

	// A broken pair (a key that does not match) keeps B in service, once
	// the watcher has tried it and said it does not load (earlier reports,
	// of B half-written say, are dropped first).
	al.mu.Lock()
	al.got = nil
	al.mu.Unlock()
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certA.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, 5*time.Second, "the mismatched pair tried", func() bool {
		if got := servedSerial(t, addr); got != certB.SerialNumber.Int64() {
			t.Fatalf("after a mismatched pair: serial %d, want B's %d", got, certB.SerialNumber.Int64())
		}
		return al.has(web.AlertCertFiles, "do not load")
	})
	if got := servedSerial(t, addr); got != certB.SerialNumber.Int64() {
		t.Fatalf("after a mismatched pair: serial %d, want B's %d", got, certB.SerialNumber.Int64())
	}
}

func TestParseConfig_TLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writePair(t, certFile, keyFile, "hooks.example.com", 1)
	const src = "\n[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret = \"x\"\n"
	files := fmt.Sprintf("cert_file = %q\nkey_file = %q\n", certFile, keyFile)

	t.Run("ACMEDefaults", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", "[server]\ndomain = \"Hooks.Example.com\"\n"+src, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := cfg.Server
		if s.TLS != app.TLSACME || s.Domain != "hooks.example.com" || s.Listen != ":443" || s.HTTPListen != ":80" ||
			s.ACMEDirectory != app.DefaultACMEDirectory || s.PublicURL != "https://hooks.example.com" {
			t.Errorf("server = %+v", s)
		}
		if got, want := cfg.Sources[0].URL, "https://hooks.example.com/in/s"; got != want {
			t.Errorf("source URL %q, want %q", got, want)
		}
	})
	t.Run("ACMEOtherPort", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", "[server]\ndomain = \"hooks.example.com\"\nlisten = \":8443\"\nhttp_listen = \":8080\"\n"+src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.PublicURL != "https://hooks.example.com:8443" || cfg.Server.HTTPListen != ":8080" {
			t.Errorf("server = %+v", cfg.Server)
		}
	})
	t.Run("Files", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", "[server]\n"+files+src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.TLS != app.TLSFiles || cfg.Server.Listen != ":443" || cfg.Server.HTTPListen != "" {
			t.Errorf("server = %+v", cfg.Server)
		}
	})
	t.Run("None", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.TLS != app.TLSNone {
			t.Errorf("server = %+v", cfg.Server)
		}
		if tl, err := web.NewTLS(cfg.Server, web.TLSOptions{}); tl != nil || err != nil {
			t.Errorf("NewTLS for plain HTTP = %v, %v", tl, err)
		}
	})

	other := filepath.Join(dir, "other.pem")
	writePair(t, other, filepath.Join(dir, "otherkey.pem"), "x.example.com", 2)
	for _, tt := range []struct{ name, server, key, reason string }{
		{"DomainAndFiles", "domain = \"hooks.example.com\"\n" + files, "server.cert_file", "not with server.domain"},
		{"DomainAndKeyOnly", fmt.Sprintf("domain = \"hooks.example.com\"\nkey_file = %q\n", keyFile), "server.key_file", "not with server.domain"},
		{"CertWithoutKey", fmt.Sprintf("cert_file = %q\n", certFile), "server.key_file", "needs its private key"},
		{"KeyWithoutCert", fmt.Sprintf("key_file = %q\n", keyFile), "server.cert_file", "needs its certificate"},
		{"MissingCert", fmt.Sprintf("cert_file = %q\nkey_file = %q\n", filepath.Join(dir, "nope.pem"), keyFile), "server.cert_file", "no such file"},
		{"MismatchedPair", fmt.Sprintf("cert_file = %q\nkey_file = %q\n", other, keyFile), "server.cert_file", "cannot load the pair"},
		{"IPDomain", "domain = \"203.0.113.7\"\n", "server.domain", "not a DNS name"},
		{"SingleLabel", "domain = \"localhost\"\n", "server.domain", "not a DNS name"},
		{"Wildcard", "domain = \"*.example.com\"\n", "server.domain", "not a DNS name"},
		{"URLDomain", "domain = \"https://hooks.example.com\"\n", "server.domain", "not a DNS name"},
		{"EmailWithoutDomain", "acme_email = \"a@example.com\"\n", "server.acme_email", "only with server.domain"},
		{"DirectoryWithoutDomain", files + "acme_directory = \"https://ca.example/dir\"\n", "server.acme_directory", "only with server.domain"},
		{"HTTPDirectory", "domain = \"hooks.example.com\"\nacme_directory = \"http://ca.example/dir\"\n", "server.acme_directory", "not an https URL"},
		{"BadEmail", "domain = \"hooks.example.com\"\nacme_email = \"ops\"\n", "server.acme_email", "not an email address"},
		{"HTTPListenWithoutTLS", "http_listen = \":80\"\n", "server.http_listen", "only with TLS"},
		{"HTTPListenSame", "domain = \"hooks.example.com\"\nlisten = \":443\"\nhttp_listen = \":443\"\n", "server.http_listen", "same address"},
		{"PlainPublicURL", "domain = \"hooks.example.com\"\npublic_url = \"http://hooks.example.com\"\n", "server.public_url", "over https"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("c.toml", "[server]\n"+tt.server+src, nil)
			var ce *app.ConfigError
			if !errorsAs(err, &ce) || ce.Key != tt.key || !strings.Contains(ce.Reason, tt.reason) {
				t.Fatalf("err = %v; want key %s, reason containing %q", err, tt.key, tt.reason)
			}
		})
	}
}

func errorsAs(err error, ce **app.ConfigError) bool {
	e, ok := err.(*app.ConfigError)
	if ok {
		*ce = e
	}
	return ok
}
