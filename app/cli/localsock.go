// The local socket (issue 44): serve answers the admin API on a Unix
// socket as well, so that the commands that call the running server work
// on the box as systemctl does, with no password: the socket file's mode
// (0660, in a directory only root, the service user and the hookbox group
// reach) decides who may connect, and the kernel names who did
// (app/web/localsock.go).

package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"hookbox/app/web"
)

const (
	// socketName is the local socket's file name.
	socketName = "hookbox.sock"
	// systemdSocket is the socket of install.sh's unit: systemd makes
	// /run/hookbox for it (RuntimeDirectory=hookbox, mode 0750, the
	// service user's and its group's) and says so in $RUNTIME_DIRECTORY.
	systemdSocket = "/run/hookbox/" + socketName
	// socketMode lets the owner (the service user) and the group in.
	socketMode = 0o660
)

// runtimeDir is the first directory of $RUNTIME_DIRECTORY, which systemd
// sets for a unit with RuntimeDirectory=; "" without it.
func runtimeDir() string {
	d, _, _ := strings.Cut(os.Getenv("RUNTIME_DIRECTORY"), ":")
	return d
}

// serveSocketPath is where serve makes the local socket: in systemd's
// runtime directory, else beside the data file (the data directory is
// its user's alone).
func serveSocketPath(dataDir string) string {
	if d := runtimeDir(); d != "" {
		return filepath.Join(d, socketName)
	}
	return filepath.Join(dataDir, socketName)
}

// clientSocketPaths are where a command looks for the local socket of the
// running server, in order: the runtime directory (a command run by the
// unit itself), beside the data file of the config (a server run by
// hand), then install.sh's /run/hookbox.
func clientSocketPaths(dataDir string) []string {
	var paths []string
	if d := runtimeDir(); d != "" {
		paths = append(paths, filepath.Join(d, socketName))
	}
	if dataDir != "" {
		paths = append(paths, filepath.Join(dataDir, socketName))
	}
	return append(paths, systemdSocket)
}

// errNoPeerCred says why there is no local socket on this system.
var errNoPeerCred = errors.New("this system cannot name the user at the other end of a Unix socket (no SO_PEERCRED, which Linux has)")

// listenLocal makes the local socket at path, mode 0660. A socket file
// left there by a hookbox that did not stop cleanly is removed first; one
// that something answers on is another server's, and is left alone (the
// error says so), as is anything that is not a socket.
func listenLocal(path, dataDir string) (net.Listener, error) {
	if !web.LocalSocket {
		return nil, errNoPeerCred
	}
	if filepath.Dir(path) == filepath.Clean(dataDir) {
		if err := os.MkdirAll(dataDir, 0o700); err != nil { // on PostgreSQL nothing else makes it
			return nil, err
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s is there and is not a socket: move it away", path)
		}
		c, err := net.DialTimeout("unix", path, 2*time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("another hookbox answers on %s", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%s is there and cannot be tried: %w", path, err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) { // a stale one
			return nil, err
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, socketMode); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// dialLocal finds the first of paths that a server answers on; tried says
// why each other one did not serve, except those that are not there.
func dialLocal(paths []string) (path string, tried []string) {
	if !web.LocalSocket {
		return "", nil
	}
	for _, p := range paths {
		c, err := net.DialTimeout("unix", p, 2*time.Second)
		if err == nil {
			c.Close()
			return p, tried
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, fs.ErrPermission):
			tried = append(tried, p+": permission denied")
		case errors.Is(err, syscall.ECONNREFUSED):
			tried = append(tried, p+": nothing answers (hookbox is not running)")
		default:
			tried = append(tried, fmt.Sprintf("%s: %v", p, errors.Unwrap(err)))
		}
	}
	return "", tried
}

// localHint is what the "no credential" error says about the local
// socket, having looked at paths (tried: what was wrong with those there).
func localHint(paths, tried []string) string {
	if !web.LocalSocket {
		return "; " + errNoPeerCred.Error() + ", so the commands cannot go through a local socket here and need a token or a password"
	}
	hint := "; or run it on the box that runs hookbox, as root or as a member of group hookbox (install.sh adds the user who ran it; it counts from the next login): it then goes through the local socket, with no credential"
	if len(tried) == 0 {
		tried = []string{"no socket at " + strings.Join(paths, " nor ") + ": is hookbox running?"}
	}
	hint += " (" + strings.Join(tried, "; ") + ")"
	return hint
}

// bindLocal makes the local socket for the server part to serve. Without
// it hookbox serves all the same: the log says why, and that the commands
// on the box then need a token or a password.
func (p *parts) bindLocal() {
	path := serveSocketPath(p.cfg.Server.DataDir)
	ln, err := listenLocal(path, p.cfg.Server.DataDir)
	if err != nil {
		p.own.Warn("no local socket: hookbox pause, resume, retry, replay and backup on this box need HOOKBOX_TOKEN or HOOKBOX_PASSWORD",
			"socket", path, slog.Any("error", err))
		return
	}
	p.local = ln
	p.attrs = append(p.attrs, "socket", path)
}

// serveLocal serves the admin API on the local socket until the server's
// stop closes it (and removes its file).
func (p *parts) serveLocal() {
	if err := p.srv.ServeLocal(p.local); err != nil && !errors.Is(err, net.ErrClosed) {
		p.own.Warn("the local socket stopped serving", slog.Any("error", err))
	}
}
