package httpsend

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// target is where a destination's URL sends: parsed once per URL.
type target struct {
	addr string // the address dialled, as connSet keys it
	host string // the Host header, as Go's client writes it
	uri  string // the request target
	tls  *tls.Config
}

// parseTarget reads a destination URL as Go's client does: http or https,
// the Host header from the URL's host (an empty port dropped), the
// request target from its path and query.
func parseTarget(raw string) (*target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("the destination URL is not valid")
	}
	host := strings.TrimSuffix(u.Host, ":")
	if host, err = httpguts.PunycodeHostPort(host); err != nil || !httpguts.ValidHostHeader(host) {
		return nil, errors.New("the destination URL is not valid")
	}
	if i := strings.LastIndex(host, "]"); strings.HasPrefix(host, "[") && i > 0 { // an IPv6 zone stays out of it
		if j := strings.LastIndex(host[:i], "%"); j > 0 {
			host = host[:j] + host[i:]
		}
	}
	t := &target{addr: dialAddr(u), host: host, uri: u.RequestURI()}
	if u.Scheme == "https" {
		name := u.Hostname()
		if ip := net.ParseIP(name); ip == nil {
			name, _ = httpguts.PunycodeHostPort(name)
		}
		// HTTP/1.1 only: no ALPN offered.
		t.tls = &tls.Config{ServerName: name}
	}
	return t, nil
}

// excluded says whether name is one Go's client writes itself, never from
// the header map.
func excluded(name string) bool {
	switch name {
	case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
		return true
	}
	return false
}

// appendRequest appends a POST of a body of bodyLen bytes to t, with
// header, as Go's client writes one: request line, Host, User-Agent,
// Content-Length, then the other names in order; a name or value that Go's
// client would refuse (a line break in it) fails the send.
func appendRequest(b []byte, t *target, header http.Header, bodyLen int) ([]byte, error) {
	var arr [32]string
	names := arr[:0]
	for name, vs := range header {
		if !httpguts.ValidHeaderFieldName(name) {
			return b, fmt.Errorf("invalid header field name %q", name)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return b, fmt.Errorf("invalid header field value for %q", name)
			}
		}
		if !excluded(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b = append(b, "POST "...)
	b = append(b, t.uri...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, t.host...)
	ua := "Go-http-client/1.1"
	if vs, ok := header["User-Agent"]; ok {
		ua = ""
		if len(vs) > 0 {
			ua = textproto.TrimString(vs[0])
		}
	}
	if ua != "" {
		b = append(b, "\r\nUser-Agent: "...)
		b = append(b, ua...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(bodyLen), 10)
	b = append(b, "\r\n"...)
	for _, name := range names {
		for _, v := range header[name] {
			b = append(b, name...)
			b = append(b, ": "...)
			b = append(b, textproto.TrimString(v)...)
			b = append(b, "\r\n"...)
		}
	}
	return append(b, "\r\n"...), nil
}
