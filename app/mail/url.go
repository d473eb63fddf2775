// Package mail sends hookbox's alerts by email: a bounded queue that never
// blocks its caller, and one goroutine that hands each message to an SMTP
// server (net/smtp over STARTTLS, implicit TLS, or a local relay in the
// clear), retrying with backoff when the server fails.
package mail

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// The schemes of an SMTP URL.
const (
	// SchemeSTARTTLS is smtp://: the connection must turn to TLS with
	// STARTTLS before anything else is sent (port 587 by default).
	SchemeSTARTTLS = "smtp"
	// SchemeTLS is smtps://: TLS from the first byte (port 465 by default).
	SchemeTLS = "smtps"
	// SchemeInsecure is smtp+insecure://: no TLS, for a relay on this
	// machine or its network (port 25 by default); credentials only to
	// localhost.
	SchemeInsecure = "smtp+insecure"
)

var defaultPorts = map[string]string{SchemeSTARTTLS: "587", SchemeTLS: "465", SchemeInsecure: "25"}

// Server is an SMTP server as an SMTP URL names it.
type Server struct {
	Scheme   string
	Host     string // without the port
	Port     string
	User     string // empty: no AUTH
	Password string
}

// ParseURL reads an SMTP URL: smtp://user:pass@host:587,
// smtps://user:pass@host:465 or smtp+insecure://host:25. Its errors never
// hold the URL or any part of it but the scheme, since the URL holds a
// password.
func ParseURL(s string) (Server, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Server{}, errors.New("is not a URL of the form smtp://user:password@host:587 (a character of the password may need %-encoding)")
	}
	var srv Server
	switch scheme := strings.ToLower(u.Scheme); scheme {
	case SchemeSTARTTLS, SchemeTLS, SchemeInsecure:
		srv.Scheme = scheme
	case "":
		return Server{}, errors.New("has no scheme: use smtp:// (STARTTLS), smtps:// (TLS) or smtp+insecure:// (a local relay)")
	default:
		return Server{}, fmt.Errorf("has the scheme %q, not smtp:// (STARTTLS), smtps:// (TLS) or smtp+insecure:// (a local relay)", u.Scheme)
	}
	srv.Host, srv.Port = u.Hostname(), u.Port()
	if srv.Host == "" {
		return Server{}, errors.New("names no host")
	}
	if srv.Port == "" {
		srv.Port = defaultPorts[srv.Scheme]
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Server{}, errors.New("has a path, query or fragment: an SMTP URL is scheme://user:password@host:port")
	}
	if u.User != nil {
		srv.User = u.User.Username()
		srv.Password, _ = u.User.Password()
		if srv.User == "" {
			return Server{}, errors.New("has a password but no user name")
		}
	}
	if srv.Scheme == SchemeInsecure && srv.User != "" && !Loopback(srv.Host) {
		return Server{}, errors.New("is smtp+insecure://, which sends in the clear: it takes a user and password only for a server on this machine (localhost); use smtp:// (STARTTLS) or smtps://")
	}
	return srv, nil
}

// Addr is the server's host:port.
func (s Server) Addr() string { return net.JoinHostPort(s.Host, s.Port) }

// String names the server without its password, for logs and errors.
func (s Server) String() string {
	user := ""
	if s.User != "" {
		user = url.User(s.User).String() + "@"
	}
	return s.Scheme + "://" + user + s.Addr()
}

// Security says in words how the connection is protected, for hookbox
// check.
func (s Server) Security() string {
	switch s.Scheme {
	case SchemeTLS:
		return "TLS"
	case SchemeInsecure:
		return "no TLS"
	}
	return "STARTTLS"
}

// Loopback reports whether host names this machine: net/smtp sends a
// password in the clear only there.
func Loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1" // as net/smtp's PlainAuth checks
}
