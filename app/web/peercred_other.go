//go:build !linux

package web

import (
	"errors"
	"net"
)

const peerCredSupported = false

// peerUID cannot name a Unix socket's peer here (no SO_PEERCRED).
func peerUID(net.Conn) (int, error) {
	return 0, errors.New("no SO_PEERCRED on this system")
}
