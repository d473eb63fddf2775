package web

import (
	"net"
	"testing"
	"time"

	"hookbox/app"
)

// Shutdown closes the connections under fasthttp, which panics when a
// deadline it sets between a handler's return and the answer's write
// fails ("BUG: error in SetWriteDeadline": it took the server down in
// CI, in TestListen/postgres). A deadline on a connection Shutdown
// closed is no error; the write after it still fails.
func TestLimitedConn_DeadlinesAfterCloseAll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{server: app.ServerConfig{MaxConnections: 4}}
	l := s.limit(ln, 0, true).(*limitListener)
	defer l.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatalf("deadline on an open connection: %v", err)
	}
	l.closeAll()
	deadline := time.Now().Add(10 * time.Second)
	for name, set := range map[string]func(time.Time) error{
		"SetDeadline": c.SetDeadline, "SetReadDeadline": c.SetReadDeadline, "SetWriteDeadline": c.SetWriteDeadline,
	} {
		if err := set(deadline); err != nil {
			t.Errorf("%s after closeAll: %v; fasthttp panics on it", name, err)
		}
	}
	if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")); err == nil {
		t.Error("a write on a connection closeAll closed succeeded")
	}
	if n := s.openConns(); n != 0 {
		t.Errorf("open connections after closeAll: %d", n)
	}
}
