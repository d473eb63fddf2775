//go:build unix

package request

import (
	"errors"
	"syscall"
)

// hungUp reports whether the peer of raw closed or reset the connection:
// a peek that does not wait (nothing is taken from the socket, so a
// pipelined request stays for fasthttp) reads its end of stream.
func hungUp(raw syscall.RawConn) bool {
	var gone bool
	var buf [1]byte
	err := raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = n == 0 && err == nil || errors.Is(err, syscall.ECONNRESET)
		return true // never wait for data
	})
	return gone || err != nil
}
