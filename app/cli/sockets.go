package cli

import (
	"bufio"
	"fmt"
	"net"
	"strings"

	"hookbox/app"
	"hookbox/app/systemd"
)

// The names install.sh gives the sockets of hookbox.socket
// (FileDescriptorName=): the one server.listen serves and, with TLS, the
// one server.http_listen serves (ACME's challenges, the redirect).
const (
	socketMain = "hookbox"
	socketHTTP = "http"
)

// passedSockets are the listening sockets the service manager passed,
// sorted: main serves what server.listen would, http what
// server.http_listen would (nil: not passed, hookbox binds it itself).
// Passed sockets win over the config; notes say where the two disagree,
// and what was passed and not used (closed).
type passedSockets struct {
	main, http net.Listener
	notes      []string
}

// sortSockets picks the main and http sockets from socks for s (wantHTTP:
// TLS serves server.http_listen). A socket named "http", or without a
// name one at server.http_listen's address, is the http one; the first
// other is the main one.
func sortSockets(socks []systemd.Socket, s app.ServerConfig, wantHTTP bool) passedSockets {
	var p passedSockets
	var rest []systemd.Socket
	for _, sock := range socks {
		isHTTP := sock.Name == socketHTTP || (sock.Name != socketMain && wantHTTP && sameAddr(sock.Listener.Addr().String(), s.HTTPListen) &&
			!sameAddr(sock.Listener.Addr().String(), s.Listen))
		if isHTTP && wantHTTP && p.http == nil {
			p.http = sock.Listener
			continue
		}
		rest = append(rest, sock)
	}
	for _, sock := range rest {
		if p.main == nil {
			p.main = sock.Listener
			continue
		}
		p.notes = append(p.notes, fmt.Sprintf("the service manager passed a socket on %s that hookbox does not use: the socket unit lists more than server.listen and server.http_listen", sock.Listener.Addr()))
		sock.Listener.Close()
	}
	var got []string
	if p.main != nil {
		got = append(got, p.main.Addr().String())
	}
	if p.http != nil {
		got = append(got, p.http.Addr().String())
	}
	if len(got) > 0 {
		p.notes = append(p.notes, socketDisagreements(got, s, wantHTTP)...)
	}
	return p
}

// socketDisagreements says where the socket unit's addresses (listens:
// the main socket first, then the http one) and the config differ:
// the sockets are served, server.listen and server.http_listen are not.
func socketDisagreements(listens []string, s app.ServerConfig, wantHTTP bool) []string {
	var notes []string
	if len(listens) > 0 && !sameAddr(listens[0], s.Listen) {
		notes = append(notes, fmt.Sprintf("the socket unit listens on %s but server.listen is %s: hookbox serves the socket; make them the same (install.sh writes the unit from the config)", listens[0], s.Listen))
	}
	switch {
	case wantHTTP && len(listens) < 2:
		notes = append(notes, fmt.Sprintf("the socket unit has no socket for server.http_listen %s: hookbox binds it itself, which needs the port free and, below 1024, CAP_NET_BIND_SERVICE", s.HTTPListen))
	case wantHTTP && !sameAddr(listens[1], s.HTTPListen):
		notes = append(notes, fmt.Sprintf("the socket unit's second socket is %s but server.http_listen is %s: hookbox serves the socket", listens[1], s.HTTPListen))
	case !wantHTTP && len(listens) > 1:
		notes = append(notes, fmt.Sprintf("the socket unit also listens on %s, which this config does not serve (server.http_listen is for TLS)", strings.Join(listens[1:], ", ")))
	}
	return notes
}

// sameAddr reports whether two listen addresses are the same socket: the
// same port, and the same host, where "", 0.0.0.0 and :: (all addresses)
// are one and localhost is 127.0.0.1. A bare port is all addresses, as
// systemd's ListenStream=443 is.
func sameAddr(a, b string) bool {
	ha, pa := splitListen(a)
	hb, pb := splitListen(b)
	return pa == pb && ha == hb
}

func splitListen(addr string) (host, port string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil { // a bare port
		h, p = "", addr
	}
	switch h {
	case "", "0.0.0.0", "::":
		h = ""
	case "localhost":
		h = "127.0.0.1"
	}
	return h, p
}

// unitListens reads a socket unit's ListenStream= addresses, in order.
func unitListens(unit string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(unit))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && strings.TrimSpace(k) == "ListenStream" && strings.TrimSpace(v) != "" {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}
