// Package mailtest runs a real SMTP server (github.com/emersion/go-smtp)
// on 127.0.0.1 for tests: STARTTLS, implicit TLS or plain, with or
// without AUTH, a certificate made for the test, and every message it
// takes on a channel.
package mailtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mode is how a test server protects its connections.
type Mode int

// The modes of a test server.
const (
	// STARTTLS offers STARTTLS (and AUTH only after it).
	STARTTLS Mode = iota
	// TLS speaks TLS from the first byte, as on port 465.
	TLS
	// Plain offers no TLS: a local relay, or a server that refuses
	// STARTTLS.
	Plain
)

// Options shape a test server.
type Options struct {
	Mode Mode
	// User and Password, when set, are required (AUTH PLAIN) before MAIL.
	User, Password string
	// InsecureAuth offers AUTH over a plain connection too.
	InsecureAuth bool
	// Listener, when set, is served instead of a new one on 127.0.0.1:0
	// (a test that brings a server up on an address already in use).
	Listener net.Listener
}

// Message is one message the server took.
type Message struct {
	From string
	To   []string
	Data []byte
	// User is who authenticated ("" for none); TLS whether the
	// connection was encrypted when the message came.
	User string
	TLS  bool
}

// Server is a running test SMTP server.
type Server struct {
	Addr string // 127.0.0.1:port
	// Roots holds the certificate the server presents, for the client's
	// RootCAs.
	Roots *x509.CertPool
	// Messages receives every message taken.
	Messages chan Message

	opts  Options
	srv   *smtp.Server
	mu    sync.Mutex
	wire  []byte // everything the client sent, as received
	auths int
	mails int
}

// Start runs a server until the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	cert, roots := certificate(tb)
	s := &Server{Roots: roots, Messages: make(chan Message, 16), opts: opts}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, c: c}, nil
	}))
	s.srv.Domain = "localhost"
	s.srv.ReadTimeout = 10 * time.Second
	s.srv.WriteTimeout = 10 * time.Second
	s.srv.AllowInsecureAuth = opts.InsecureAuth
	s.srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.Debug = wireWriter{s}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}
	if opts.Mode == STARTTLS {
		s.srv.TLSConfig = tlsConfig
	}
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			tb.Fatal(err)
		}
	}
	if opts.Mode == TLS {
		ln = tls.NewListener(ln, tlsConfig)
	}
	s.Addr = ln.Addr().String()
	go s.srv.Serve(ln)
	tb.Cleanup(func() { s.srv.Close() })
	return s
}

// Wire is the conversation as the server spoke it (go-smtp's Debug: both
// sides, the text inside TLS too). On a Plain server, it is everything
// that crossed the network in the clear.
func (s *Server) Wire() string { s.mu.Lock(); defer s.mu.Unlock(); return string(s.wire) }

// Counts returns how many AUTH and MAIL commands the server accepted.
func (s *Server) Counts() (auths, mails int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auths, s.mails
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

type wireWriter struct{ s *Server }

func (w wireWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	w.s.wire = append(w.s.wire, p...)
	w.s.mu.Unlock()
	return len(p), nil
}

type session struct {
	s    *Server
	c    *smtp.Conn
	user string
	msg  Message
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, password string) error {
		if user != ss.s.opts.User || password != ss.s.opts.Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "invalid credentials"}
		}
		ss.user = user
		ss.s.mu.Lock()
		ss.s.auths++
		ss.s.mu.Unlock()
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.User != "" && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.s.mu.Lock()
	ss.s.mails++
	ss.s.mu.Unlock()
	ss.msg = Message{From: from}
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.msg.To = append(ss.msg.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := ss.c.TLSConnectionState()
	m := ss.msg
	m.Data, m.User, m.TLS = b, ss.user, isTLS
	select {
	case ss.s.Messages <- m:
		return nil
	default:
		return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "test server full"}
	}
}

func (ss *session) Reset()        { ss.msg = Message{} }
func (ss *session) Logout() error { return nil }

// certificate makes a self-signed certificate for 127.0.0.1 and
// localhost, and a pool that trusts it.
func certificate(tb testing.TB) (tls.Certificate, *x509.CertPool) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "hookbox test SMTP"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
