package web

import (
	"bytes"
	"net"
	"net/netip"
	"time"

	"github.com/gofiber/fiber/v2"
)

// refuseLogEvery throttles the log lines about refused requests.
const refuseLogEvery = 10 * time.Second

// Answers of the edge check; the body is read by then (bounded by
// max_body_bytes), but nothing has looked at it.
const (
	msgTwoLengths    = "two different Content-Length headers: the body's end is ambiguous"
	msgLengthChunked = "Content-Length together with Transfer-Encoding: the body's end is ambiguous"
	msgEncoded       = "compressed bodies are not accepted: send the body uncompressed (no Content-Encoding, or identity); signatures are checked over the bytes as sent"
)

// edge runs first on every request, before any route or source is looked
// up: one on the local socket for what it does not serve gets 404; a
// request whose body could be framed two ways (a proxy in front
// may have read another request from the same bytes) gets 400 and the
// connection is closed; a body with a Content-Encoding gets 415, so that
// nothing is ever inflated and the bytes verified, stored and forwarded
// are the bytes received.
func (s *Server) edge(c *fiber.Ctx) error {
	if _, ok := localPeer(c); ok && !localPath(c.Path()) {
		return refuseLocal(c)
	}
	status, msg := checkHead(c.Request().Header.RawHeaders())
	if status == 0 {
		return c.Next()
	}
	if status == fiber.StatusBadRequest {
		c.Context().SetConnectionClose()
	}
	if ok, held := s.refusedLog.Allow(s.deps.Now(), refuseLogEvery); ok {
		s.Logger.Warn("request refused", "reason", msg, "client", s.client(c).String(), "method", c.Method(),
			"path", truncate(c.Path(), maxLoggedPath), "refused_since_last_line", held)
	}
	return c.Status(status).JSON(answer{Status: "error", Error: msg})
}

// maxLoggedPath bounds a request's path in the log.
const maxLoggedPath = 96

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string { return s[:min(len(s), n)] }

// checkHead reads the raw header lines of a request ("Name: value\r\n"
// each, as fasthttp keeps them) and says what is wrong with its framing
// or coding: 400 for two different Content-Length values or one beside a
// Transfer-Encoding, 415 for any Content-Encoding but identity; 0 when
// all is well. It allocates nothing.
func checkHead(raw []byte) (status int, msg string) {
	var length []byte
	hasLength, chunked, encoded := false, false, false
	for len(raw) > 0 {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || line[0] == ' ' || line[0] == '\t' {
			continue // the blank end, or a folded line: not a field of its own
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		switch {
		case equalFold(name, "content-length"):
			if hasLength && !bytes.Equal(value, length) {
				return fiber.StatusBadRequest, msgTwoLengths
			}
			hasLength, length = true, value
		case equalFold(name, "transfer-encoding"):
			chunked = true
		case equalFold(name, "content-encoding"):
			encoded = encoded || !identity(value)
		}
	}
	switch {
	case hasLength && chunked:
		return fiber.StatusBadRequest, msgLengthChunked
	case encoded:
		return fiber.StatusUnsupportedMediaType, msgEncoded
	}
	return 0, ""
}

// identity reports whether a Content-Encoding value lists no coding but
// identity ("", "identity", "identity, identity").
func identity(v []byte) bool {
	for len(v) > 0 {
		var tok []byte
		tok, v, _ = bytes.Cut(v, []byte{','})
		if tok = bytes.Trim(tok, " \t"); len(tok) > 0 && !equalFold(tok, "identity") {
			return false
		}
	}
	return true
}

// equalFold compares an ASCII header name to a lower-case one.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// peer is the address at the other end of the connection.
func peer(c *fiber.Ctx) netip.Addr {
	if a, ok := c.Context().RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// client is who sent the request: the connection's peer or, when the peer
// is a trusted proxy (server.trusted_proxies), the nearest address in
// X-Forwarded-For that is not one. Without trusted proxies no header can
// change it.
func (s *Server) client(c *fiber.Ctx) netip.Addr {
	p := peer(c)
	if !s.server.Trusted(p) {
		return p
	}
	return forwardedFor(c.Request().Header.PeekAll(fiber.HeaderXForwardedFor), p, s.server.Trusted)
}

// forwardedFor walks the X-Forwarded-For values (each a comma-separated
// list; each proxy appends the address it got the request from) from the
// nearest hop back, past the trusted proxies, to the first address that
// is not trusted: the client as the last trustworthy proxy saw it.
// Anything the client wrote further left is ignored. An entry that is not
// an address stops the walk at the hop that added it; when every hop is
// trusted the farthest one is the client.
func forwardedFor(values [][]byte, peer netip.Addr, trusted func(netip.Addr) bool) netip.Addr {
	client := peer
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for len(v) > 0 {
			entry := v
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				entry, v = v[j+1:], v[:j]
			} else {
				v = nil
			}
			a, err := netip.ParseAddr(string(bytes.Trim(entry, " \t")))
			if err != nil || a.Zone() != "" {
				return client
			}
			client = a.Unmap()
			if !trusted(client) {
				return client
			}
		}
	}
	return client
}

// scheme is "https" when the request came over TLS, or from a trusted
// proxy that says so in X-Forwarded-Proto (its last value, the nearest
// proxy's); "http" otherwise.
func (s *Server) scheme(c *fiber.Ctx) string {
	if c.Context().IsTLS() {
		return "https"
	}
	if !s.server.Trusted(peer(c)) {
		return "http"
	}
	all := c.Request().Header.PeekAll(fiber.HeaderXForwardedProto)
	if len(all) == 0 {
		return "http"
	}
	v := all[len(all)-1]
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	if equalFold(bytes.Trim(v, " \t"), "https") {
		return "https"
	}
	return "http"
}
