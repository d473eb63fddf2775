//go:build !unix

package httpsend

import "syscall"

// peerClosed cannot tell here: a connection the destination closed while
// idle is found by the send, which goes once more on a fresh one.
func peerClosed(syscall.RawConn) bool { return false }
