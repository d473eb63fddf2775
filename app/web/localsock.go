// The local socket: the admin API on a Unix socket, for the command line
// on the box. Who may connect is the socket file's mode (the caller's
// business: app/cli makes it 0660 in a directory only root, the service
// user and the hookbox group reach); who did connect is what the kernel
// says of the peer (SO_PEERCRED), read once per connection at accept. A
// request on it is the admin local:<unix user>: no password, no token and
// no CSRF token (no browser reaches a Unix socket), every other check kept.

package web

import (
	"errors"
	"fmt"
	"net"
	"os/user"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// LocalSocket says whether this system names the peer of a Unix socket
// (SO_PEERCRED, Linux): without it hookbox serves no local socket, and the
// command line needs a token or a password.
const LocalSocket = peerCredSupported

// viaSocket is how a request on the local socket is authenticated, as the
// audit log names it.
const viaSocket = "socket"

// LocalPeer is who is at the other end of a local socket's connection: the
// kernel's word, taken at accept. It is the connection's RemoteAddr, so
// that nothing a client sends can make a request look local.
type LocalPeer struct {
	UID int
	// Name is the Unix user's name; "" when the uid has none.
	Name string
}

// Network is the address family, for net.Addr.
func (p LocalPeer) Network() string { return "unix" }

// String is the audit log's actor for p.
func (p LocalPeer) String() string { return p.Actor() }

// Actor is the audit log's actor for p: local:<unix user>, or
// local:uid:N for a uid without a name.
func (p LocalPeer) Actor() string {
	if p.Name == "" {
		return "local:uid:" + strconv.Itoa(p.UID)
	}
	return "local:" + p.Name
}

// Identity is what a request of p may do: all an admin may.
func (p LocalPeer) Identity() app.Identity {
	return app.Identity{Name: p.Actor(), Role: app.RoleAdmin, Local: true}
}

// LookupPeer is the LocalPeer of uid, its name from the user database.
func LookupPeer(uid int) LocalPeer {
	p := LocalPeer{UID: uid}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		p.Name = u.Username
	}
	return p
}

// ServeLocal serves the admin API on ln, a Unix socket's listener, until
// Shutdown, which closes it (and so removes its file). Only the admin API
// (/api/v1/, /metrics, /healthz) answers there; connections are bounded
// by server.max_connections, as on the main listener.
func (s *Server) ServeLocal(ln net.Listener) error {
	if !LocalSocket {
		return errors.New("this system cannot name a Unix socket's peer (no SO_PEERCRED): no local socket")
	}
	return s.fiber.Listener(s.limit(&peerListener{Listener: ln}, 0, true))
}

// peerListener hands out connections whose RemoteAddr is their LocalPeer.
type peerListener struct{ net.Listener }

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err != nil { // not a peer the kernel names: nobody to act for
			c.Close()
			continue
		}
		return &peerConn{Conn: c, peer: LookupPeer(uid)}, nil
	}
}

// peerConn is a local socket's connection with its peer.
type peerConn struct {
	net.Conn
	peer LocalPeer
}

func (c *peerConn) RemoteAddr() net.Addr { return c.peer }

// NetConn is the connection under c (request.Watch peeks at its socket).
func (c *peerConn) NetConn() net.Conn { return c.Conn }

// localPeer is the peer of c's connection when it came on the local socket.
func localPeer(c *fiber.Ctx) (LocalPeer, bool) {
	p, ok := c.Context().RemoteAddr().(LocalPeer)
	return p, ok
}

// localPath reports whether the local socket serves path: the admin API
// and the health check, not the pages nor the webhooks.
func localPath(path string) bool {
	return len(path) >= 8 && path[:8] == "/api/v1/" || path == "/metrics" || path == "/healthz"
}

// refuseLocal answers a request on the local socket for what it does not
// serve: 404, saying what it serves.
func refuseLocal(c *fiber.Ctx) error {
	return c.Status(fiber.StatusNotFound).JSON(answer{Status: "error",
		Error: fmt.Sprintf("the local socket serves the admin API (/api/v1/) only, not %s", truncate(c.Path(), maxLoggedPath))})
}

// clientString is who sent the request for the log and the audit log:
// "local" on the local socket, else the client's address.
func (s *Server) clientString(c *fiber.Ctx) string {
	if _, ok := localPeer(c); ok {
		return "local"
	}
	return s.client(c).String()
}
