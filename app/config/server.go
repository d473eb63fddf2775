// Validating [server]: listen and data_dir, the limits of the edge, and TLS
// (certificate files or ACME).

package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"

	"hookbox/app"
)

// The largest values the limits of the edge may take.
const (
	maxMaxBodyBytes      = 64 << 20
	maxMaxBodyBytesTotal = 1 << 40
	maxMaxConnections    = 1 << 20
)

func (v *validator) server(s *app.ServerConfig, r rawServer) {
	s.Listen = r.Listen
	if s.Listen == "" {
		s.Listen = app.DefaultListen
		if r.Domain != "" || r.CertFile != "" || r.KeyFile != "" {
			s.Listen = app.DefaultTLSListen
		}
	}
	if _, port, err := net.SplitHostPort(s.Listen); err != nil || port == "" {
		v.fail("server.listen", fmt.Sprintf("%q is not host:port", s.Listen))
	}
	v.tls(s, r)
	if r.PublicURL != "" {
		u, err := url.Parse(r.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			v.fail("server.public_url", fmt.Sprintf("%q is not an absolute http(s) URL", r.PublicURL))
		} else if s.TLS != app.TLSNone && u.Scheme != "https" {
			v.fail("server.public_url", fmt.Sprintf("%q: with TLS on, senders reach hookbox over https", r.PublicURL))
		}
		s.PublicURL = strings.TrimRight(r.PublicURL, "/")
	} else if s.TLS == app.TLSACME {
		// The name the certificate is for is where senders post to.
		s.PublicURL = "https://" + s.Domain
		if _, port, err := net.SplitHostPort(s.Listen); err == nil && port != "443" && port != "https" {
			s.PublicURL = "https://" + net.JoinHostPort(s.Domain, port)
		}
	}
	s.DataDir = r.DataDir
	if s.DataDir == "" {
		s.DataDir = app.DefaultDataDir
	}
	s.MaxBodyBytes = app.DefaultMaxBodyBytes
	if r.MaxBodyBytes != nil {
		s.MaxBodyBytes = *r.MaxBodyBytes
		if s.MaxBodyBytes <= 0 || s.MaxBodyBytes > maxMaxBodyBytes {
			v.fail("server.max_body_bytes", fmt.Sprintf("must be between 1 and %d", maxMaxBodyBytes))
		}
	}
	// A body is held in pieces that double as they fill, so the largest
	// may hold up to twice max_body_bytes.
	s.MaxBodyBytesTotal = max(app.DefaultMaxBodyBytesTotal, 2*int64(s.MaxBodyBytes))
	if r.MaxBodyBytesTotal != nil {
		s.MaxBodyBytesTotal = *r.MaxBodyBytesTotal
		if s.MaxBodyBytesTotal < 2*int64(s.MaxBodyBytes) || s.MaxBodyBytesTotal > maxMaxBodyBytesTotal {
			v.fail("server.max_body_bytes_total", fmt.Sprintf("must be between twice server.max_body_bytes (%d), so that a body of that size can be read, and %d", 2*s.MaxBodyBytes, int64(maxMaxBodyBytesTotal)))
		}
	}
	v.edge(s, r)
}

// edge checks the keys that bound what peers get: connections, and whose
// forwarded headers count.
func (v *validator) edge(s *app.ServerConfig, r rawServer) {
	for i, p := range r.TrustedProxies {
		key := fmt.Sprintf("server.trusted_proxies[%d]", i)
		if pfx, err := netip.ParsePrefix(p); err == nil {
			switch {
			case pfx != pfx.Masked():
				v.fail(key, fmt.Sprintf("%q has bits set past its /%d: write %s", p, pfx.Bits(), pfx.Masked()))
			case pfx.Addr().Is4In6() && pfx.Bits() < 96:
				v.fail(key, fmt.Sprintf("%q: write IPv4 ranges as IPv4", p))
			case pfx.Addr().Is4In6(): // connections from IPv4 peers are matched unmapped
				pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
			}
			s.TrustedProxies = append(s.TrustedProxies, pfx)
		} else if a, err := netip.ParseAddr(p); err == nil && a.Zone() == "" {
			a = a.Unmap()
			s.TrustedProxies = append(s.TrustedProxies, netip.PrefixFrom(a, a.BitLen()))
		} else {
			v.fail(key, fmt.Sprintf("%q is not an IP address or a CIDR range (e.g. \"127.0.0.1\", \"10.0.0.0/8\", \"::1\")", p))
		}
	}
	s.MaxConnections = app.DefaultMaxConnections
	if r.MaxConnections != nil {
		s.MaxConnections = *r.MaxConnections
		if s.MaxConnections < 1 || s.MaxConnections > maxMaxConnections {
			v.fail("server.max_connections", fmt.Sprintf("must be between 1 and %d", maxMaxConnections))
		}
	}
	s.MaxConnectionsPerIP = min(app.DefaultMaxConnectionsPerIP, s.MaxConnections)
	if r.MaxConnectionsPerIP != nil {
		s.MaxConnectionsPerIP = *r.MaxConnectionsPerIP
		if s.MaxConnectionsPerIP < 0 || s.MaxConnectionsPerIP > s.MaxConnections {
			v.fail("server.max_connections_per_ip", fmt.Sprintf("must be between 0 (no per-address bound) and server.max_connections (%d)", s.MaxConnections))
		}
	}
}

// hostLabel is one label of a DNS name: letters, digits and inner hyphens.
var hostLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// validDomain reports whether s is a DNS name a public CA can issue for:
// two labels at least (autocert refuses single-label names), no IP address,
// no wildcard, no trailing dot.
func validDomain(s string) bool {
	if len(s) > 253 || net.ParseIP(s) != nil {
		return false
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if !hostLabel.MatchString(l) {
			return false
		}
	}
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != "" // a numeric TLD is an IP address in disguise
}

// tls decides the TLS mode from the keys that are set and checks that they
// fit together. A certificate pair must load now: `hookbox check` runs as
// the service user, so a file it cannot read is found before a restart.
func (v *validator) tls(s *app.ServerConfig, r rawServer) {
	s.CertFile, s.KeyFile = r.CertFile, r.KeyFile
	s.Domain = strings.ToLower(r.Domain)
	s.ACMEEmail, s.ACMEDirectory = r.ACMEEmail, r.ACMEDirectory
	switch {
	case r.Domain != "" && (r.CertFile != "" || r.KeyFile != ""):
		key := "server.cert_file"
		if r.CertFile == "" {
			key = "server.key_file"
		}
		v.fail(key, "not with server.domain: either hookbox gets the certificate itself (domain) or reads it from files (cert_file, key_file)")
		return
	case r.Domain != "":
		s.TLS = app.TLSACME
	case r.CertFile != "" || r.KeyFile != "":
		s.TLS = app.TLSFiles
	}
	if s.TLS != app.TLSACME {
		for _, k := range []struct{ key, val string }{{"server.acme_email", r.ACMEEmail}, {"server.acme_directory", r.ACMEDirectory}} {
			if k.val != "" {
				v.fail(k.key, "only with server.domain (ACME)")
			}
		}
	}
	if r.HTTPListen != nil {
		s.HTTPListen = *r.HTTPListen
		if s.TLS == app.TLSNone {
			v.fail("server.http_listen", "only with TLS (server.domain or server.cert_file): it redirects to HTTPS")
		} else if _, port, err := net.SplitHostPort(s.HTTPListen); err != nil || port == "" {
			v.fail("server.http_listen", fmt.Sprintf("%q is not host:port", s.HTTPListen))
		} else if s.HTTPListen == s.Listen {
			v.fail("server.http_listen", "is the same address as server.listen")
		}
	}
	switch s.TLS {
	case app.TLSFiles:
		switch {
		case r.CertFile == "":
			v.fail("server.cert_file", "server.key_file needs its certificate: set cert_file (PEM, the full chain)")
		case r.KeyFile == "":
			v.fail("server.key_file", "server.cert_file needs its private key: set key_file (PEM)")
		default:
			if _, err := os.Stat(r.CertFile); err != nil {
				v.fail("server.cert_file", fmt.Sprintf("cannot read %s: %v", r.CertFile, errors.Unwrap(err)))
			} else if _, err := os.Stat(r.KeyFile); err != nil {
				v.fail("server.key_file", fmt.Sprintf("cannot read %s: %v", r.KeyFile, errors.Unwrap(err)))
			} else if _, err := tls.LoadX509KeyPair(r.CertFile, r.KeyFile); err != nil {
				v.fail("server.cert_file", fmt.Sprintf("cannot load the pair %s and %s: %v", r.CertFile, r.KeyFile, err))
			}
		}
	case app.TLSACME:
		if !validDomain(s.Domain) {
			v.fail("server.domain", fmt.Sprintf("%q is not a DNS name a CA issues for (e.g. \"hooks.example.com\"; no IP address, no wildcard)", r.Domain))
		}
		if s.ACMEDirectory == "" {
			s.ACMEDirectory = app.DefaultACMEDirectory
		} else if u, err := url.Parse(s.ACMEDirectory); err != nil || u.Scheme != "https" || u.Host == "" {
			v.fail("server.acme_directory", fmt.Sprintf("%q is not an https URL", s.ACMEDirectory))
		}
		if s.ACMEEmail != "" {
			if a, err := mail.ParseAddress(s.ACMEEmail); err != nil || a.Address != s.ACMEEmail {
				v.fail("server.acme_email", fmt.Sprintf("%q is not an email address", s.ACMEEmail))
			}
		}
		if r.HTTPListen == nil {
			s.HTTPListen = app.DefaultHTTPListen
		}
	}
}
