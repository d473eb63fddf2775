package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"hookbox/app"
)

// DefaultReloadEvery bounds how often cert_file and key_file are looked at
// for a renewed pair.
const DefaultReloadEvery = 5 * time.Second

// ACMEDirName is the directory under data_dir where ACME mode keeps its
// account key and certificates (0700).
const ACMEDirName = "acme"

// TLS serves the main listener over HTTPS, with TLS 1.2 at least, from a
// certificate in files (reloaded when they change) or one obtained and
// renewed from an ACME CA (golang.org/x/crypto/acme/autocert). When
// server.http_listen is set, HTTP answers on it: ACME HTTP-01 challenges,
// a redirect to HTTPS for GET and HEAD, 403 for anything else (plainHTTP).
type TLS struct {
	// Config is the main listener's TLS configuration.
	Config *tls.Config
	// HTTP is the handler of http_listen (nil: no such listener).
	HTTP   http.Handler
	Logger *slog.Logger
	// Alert, when set, is told of certificate trouble: a topic (Alert*)
	// and a message. It must not block (alert.Alerter.Notify).
	Alert func(topic, text string)

	domain     string
	manager    *autocert.Manager
	files      *certFiles
	port       atomic.Value // string: the HTTPS port redirects name
	checkEvery time.Duration
	notAfter   atomic.Int64           // UnixNano of the served certificate's expiry (0: none yet)
	lastSerial atomic.Pointer[string] // of the ACME certificate Watch saw last
	acmeErr    atomic.Pointer[string] // the latest failed exchange with the CA
	// Throttles of the log lines about failed ACME requests and handshakes.
	acmeLog, handshakeLog app.Throttle
}

// Listener wraps the main listener in TLS; redirects from http_listen
// name its port (left out when 443).
func (t *TLS) Listener(ln net.Listener) net.Listener {
	if _, port, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		t.port.Store(port)
	}
	return tls.NewListener(ln, t.Config)
}

// TLSOptions adjusts NewTLS; the zero value is what serve uses.
type TLSOptions struct {
	// HTTPClient makes the requests to the ACME CA (nil: Go's default).
	HTTPClient *http.Client
	// ReloadEvery bounds how often certificate files are checked
	// (DefaultReloadEvery when 0).
	ReloadEvery time.Duration
	// CheckEvery is how often Watch looks at the certificate
	// (DefaultCheckEvery when 0).
	CheckEvery time.Duration
}

// NewTLS prepares TLS for the [server] table s; it returns nil for plain
// HTTP (TLSNone).
func NewTLS(s app.ServerConfig, opt TLSOptions) (*TLS, error) {
	t := &TLS{Logger: slog.With("component", "tls"), domain: s.Domain, checkEvery: opt.CheckEvery}
	if t.checkEvery <= 0 {
		t.checkEvery = DefaultCheckEvery
	}
	_, port, _ := net.SplitHostPort(s.Listen)
	t.port.Store(port)
	switch s.TLS {
	case app.TLSNone:
		return nil, nil
	case app.TLSFiles:
		every := opt.ReloadEvery
		if every <= 0 {
			every = DefaultReloadEvery
		}
		t.files = &certFiles{certFile: s.CertFile, keyFile: s.KeyFile, every: every, now: time.Now, logger: t.Logger,
			loaded: t.served, failed: func(err error) {
				t.trouble(AlertCertFiles, "certificate files do not load; serving the previous pair", fmt.Sprintf(
					"hookbox: %s and %s do not load (%v); the previous certificate is served until they do.", s.CertFile, s.KeyFile, err),
					slog.Any("error", err))
			}}
		if err := t.files.load(); err != nil {
			return nil, err
		}
		t.Config = &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, GetCertificate: t.files.get}
		if s.HTTPListen != "" {
			t.HTTP = t.plainHTTP(s.PublicURL)
		}
	case app.TLSACME:
		dir := filepath.Join(s.DataDir, ACMEDirName)
		if err := newACMECache(dir); err != nil {
			return nil, err
		}
		t.manager = &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			Cache:      acmeCache(dir),
			HostPolicy: autocert.HostWhitelist(s.Domain),
			Email:      s.ACMEEmail,
			Client:     &acme.Client{DirectoryURL: s.ACMEDirectory, HTTPClient: t.acmeClient(opt.HTTPClient), UserAgent: "hookbox"},
		}
		t.Config = &tls.Config{
			MinVersion: tls.VersionTLS12,
			// acme-tls/1 lets the CA validate through this listener (TLS-ALPN-01).
			NextProtos:     []string{"http/1.1", acme.ALPNProto},
			GetCertificate: t.acmeCertificate,
		}
		if s.HTTPListen != "" {
			challenges := t.manager.HTTPHandler(t.plainHTTP(s.PublicURL))
			t.HTTP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// autocert checks Host against the domain as it comes: without
				// a port (http_listen other than :80, e.g. behind a forward).
				if h, _, err := net.SplitHostPort(r.Host); err == nil {
					r = r.Clone(r.Context())
					r.Host = h
				}
				challenges.ServeHTTP(w, r)
			})
		}
	}
	return t, nil
}

// acmeCertificate serves the domain's certificate, also to a client that
// sends no server name (one that connects by IP address).
func (t *TLS) acmeCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if hello.ServerName == "" {
		h := *hello
		h.ServerName = t.domain
		hello = &h
	}
	c, err := t.manager.GetCertificate(hello)
	switch {
	case err == nil && c.Leaf != nil:
		t.served(c.Leaf.NotAfter)
	case err != nil && hello.ServerName == t.domain && !slices.Contains(hello.SupportedProtos, acme.ALPNProto) && hello.Conn != nil:
		// Not a scanner's other name, nor the CA's validation: the site is down.
		t.handshakeFailed(err)
	}
	return c, err
}

// Obtain makes sure the ACME certificate is there, getting it from the CA
// when the cache has none, so that a problem (DNS not pointing here, port
// 80 closed) shows in the log at start rather than at the first request.
// The HTTP listener must be serving already. Files mode has nothing to do.
func (t *TLS) Obtain(ctx context.Context) (*tls.Certificate, error) {
	if t.manager == nil {
		return t.files.get(nil)
	}
	type res struct {
		c   *tls.Certificate
		err error
	}
	ch := make(chan res, 1)
	go func() {
		// A hello that offers ECDSA gets the ECDSA certificate modern clients use.
		c, err := t.manager.GetCertificate(&tls.ClientHelloInfo{ServerName: t.domain,
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}})
		ch <- res{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// HTTPServer returns the server for http_listen, with every timeout set.
func (t *TLS) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           t.HTTP,
		ReadHeaderTimeout: ReadTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    ReadBufferSize,
	}
}

// hostOf returns the host name of an absolute URL ("" when there is none).
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Hostname()
}

// plainHTTP answers http_listen for everything but ACME challenges. GET
// and HEAD are redirected (301) to the same path at the https address: the
// host of public_url (always set in ACME mode), else the name in the
// certificate; the port of public_url when it names one, else the main
// listener's (left out when 443). Never the request's Host, which the
// client chooses. Every other method is refused with 403 and a message
// naming the https address: its body and any token in it have already
// crossed the network in clear, and a redirect that clients follow
// silently (308 keeps the method and the body) would hide that, so the
// sender's misconfiguration is made visible instead. 403 rather than 426:
// 426 asks for an in-place protocol upgrade that no webhook sender does.
func (t *TLS) plainHTTP(publicURL string) http.Handler {
	var host, port string
	if u, err := url.Parse(publicURL); err == nil {
		host, port = u.Hostname(), u.Port()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := t.httpsBase(host, port)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			msg := "plain HTTP is refused for " + r.Method + ": this request and any credential in it crossed the network in clear; "
			if base != "" {
				msg += "send it to " + base + r.URL.EscapedPath() + " instead, "
			} else {
				msg += "send it over https instead, "
			}
			msg += "and rotate any token it carried"
			plainError(w, http.StatusForbidden, msg)
			return
		}
		if base == "" {
			plainError(w, http.StatusBadRequest, "this address serves https only; hookbox knows no https name to redirect to (set server.public_url)")
			return
		}
		http.Redirect(w, r, base+r.URL.RequestURI(), http.StatusMovedPermanently)
	})
}

// httpsBase is https://host:port of the configured address (see
// plainHTTP), or "" when no name is configured.
func (t *TLS) httpsBase(host, port string) string {
	if host == "" && t.files != nil {
		if c, err := t.files.get(nil); err == nil && c.Leaf != nil && len(c.Leaf.DNSNames) > 0 {
			host = c.Leaf.DNSNames[0]
		}
	}
	if host == "" {
		return ""
	}
	if port == "" || port == "0" { // none named (or ACME's listen on port 0, in tests)
		port, _ = t.port.Load().(string)
	}
	if port != "" && port != "443" && port != "https" {
		host = net.JoinHostPort(host, port)
	}
	return "https://" + host
}

// plainError answers with the JSON error body of every hookbox error.
func plainError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"status": "error", "error": msg})
}

// certFiles serves the pair in certFile and keyFile, and reads it again
// when either file's size, modification time or identity (a renewer that
// swaps a symlink) changed, looking at most once per every. A pair that
// fails to load (say, the certificate written but not yet the key, or a
// key the service cannot read) leaves the previous one in service, is
// reported, and is tried again every time until it loads: a fix such as
// chmod changes none of the stamps watched.
type certFiles struct {
	certFile, keyFile string
	every             time.Duration
	now               func() time.Time
	logger            *slog.Logger
	loaded            func(notAfter time.Time) // told of each pair loaded
	failed            func(error)              // told of a reload that failed (not of every retry)

	mu      sync.Mutex
	cert    *tls.Certificate
	stamps  [2]os.FileInfo
	checked time.Time
	loadErr error // of the last attempt; nil when it loaded
}

// load reads the pair; it fails when it cannot be read or does not match.
func (c *certFiles) load() error {
	var stamps [2]os.FileInfo
	for i, p := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("certificate: %w", err)
		}
		stamps[i] = fi
	}
	c.stamps = stamps
	c.checked = c.now()
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		c.loadErr = fmt.Errorf("load %s and %s: %w", c.certFile, c.keyFile, err)
		return c.loadErr
	}
	c.cert, c.loadErr = &cert, nil
	if cert.Leaf != nil {
		c.logger.Info("certificate loaded", "file", c.certFile, "subject", cert.Leaf.Subject.String(),
			"not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
		if c.loaded != nil {
			c.loaded(cert.Leaf.NotAfter)
		}
	}
	return nil
}

// changed reports whether either file differs from what was loaded.
func (c *certFiles) changed() bool {
	for i, p := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return false // being replaced: keep serving what we have
		}
		old := c.stamps[i]
		if old == nil || !os.SameFile(old, fi) || !old.ModTime().Equal(fi.ModTime()) || old.Size() != fi.Size() {
			return true
		}
	}
	return false
}

func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.checked) >= c.every {
		c.checked = now
		failing, changed := c.loadErr != nil, c.changed()
		if failing || changed {
			if err := c.load(); err != nil && (changed || !failing) && c.failed != nil {
				c.failed(err) // a new failure; retries of the same files are quiet
			}
		}
	}
	if c.cert == nil {
		return nil, errors.New("no certificate")
	}
	return c.cert, nil
}

// failure is the error of the last attempt to load the pair (nil: loaded).
func (c *certFiles) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loadErr
}

// LocalClient returns the base URL (scheme://host:port) and an HTTP client
// for reaching the server of s from this machine, as the CLI does: an
// unspecified listen host becomes 127.0.0.1. Over TLS the client checks the
// certificate for the name it was issued to (domain, or the name in
// cert_file, whose certificates it also trusts, so a self-signed pair
// works), not for 127.0.0.1.
func LocalClient(s app.ServerConfig, timeout time.Duration) (string, *http.Client) {
	host, port, _ := net.SplitHostPort(s.Listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, port)
	client := &http.Client{Timeout: timeout}
	if s.TLS == app.TLSNone {
		return "http://" + addr, client
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.Domain}
	if s.TLS == app.TLSFiles {
		if cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile); err == nil && cert.Leaf != nil {
			roots, err := x509.SystemCertPool()
			if err != nil {
				roots = x509.NewCertPool()
			}
			for _, der := range cert.Certificate {
				if c, err := x509.ParseCertificate(der); err == nil {
					roots.AddCert(c)
				}
			}
			conf.RootCAs = roots
			if len(cert.Leaf.DNSNames) > 0 {
				conf.ServerName = cert.Leaf.DNSNames[0]
			}
		}
		if h := hostOf(s.PublicURL); h != "" {
			conf.ServerName = h
		}
	}
	client.Transport = &http.Transport{TLSClientConfig: conf, Proxy: nil}
	return "https://" + addr, client
}
