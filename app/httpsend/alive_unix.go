//go:build unix

package httpsend

import "syscall"

// peerClosed says whether the destination closed an idle connection (or
// sent on it unasked), without waiting and without taking any byte: a
// peek at its socket.
func peerClosed(rc syscall.RawConn) bool {
	closed := false
	err := rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n > 0 || err == nil || err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
		return true
	})
	return err != nil || closed
}
