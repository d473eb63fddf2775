package web_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
	"hookbox/app/web"
)

// streamNginxConf is nginx in front of hookbox as docs/API.md shows it for
// the stream, but with nginx's default proxy_buffering on: hookbox's
// X-Accel-Buffering: no must turn it off for the stream by itself.
const streamNginxConf = `daemon off;
master_process off;
worker_processes 1;
pid DIR/nginx.pid;
error_log DIR/error.log info;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path DIR/body;
    proxy_temp_path DIR/proxy;
    fastcgi_temp_path DIR/fastcgi;
    uwsgi_temp_path DIR/uwsgi;
    scgi_temp_path DIR/scgi;
    server {
        listen 127.0.0.1:PORT sndbuf=64k;
        location / {
            proxy_pass http://BACKEND;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_read_timeout 1h;
        }
    }
}
`

// startNginxInFront runs Debian's nginx in front of backend (host:port)
// and returns its address.
func startNginxInFront(t *testing.T, backend string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	prefix := t.TempDir()
	conf := strings.NewReplacer("DIR", prefix, "PORT", port, "BACKEND", backend).Replace(streamNginxConf)
	clitest.RunNginx(t, prefix, conf, addr)
	return addr
}

// Through nginx, each event arrives on its own (the next one is sent only
// once the last has arrived: a buffering proxy would hold the first), the
// stream outlives the server's WriteTimeout, and a client behind nginx
// that stops reading is still dropped: X-Accel-Buffering: no keeps nginx
// from soaking the stream into its buffers and temp files (up to 1 GiB by
// default) for it.
func TestStream_ThroughNginx(t *testing.T) {
	const writeTimeout = time.Second // the server's, shortened: the stream must outlive it
	n := startStreamNode(t, openBolt(t), func(d *web.Deps) { d.WriteTimeout = writeTimeout })
	front := "http://" + startNginxInFront(t, strings.TrimPrefix(n.base, "http://"))
	s := openStream(t, front, "", "")
	if got := s.res.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Fatalf("through nginx, Content-Type %q", got)
	}
	s.notice(t, app.StreamNoticeReady)
	for i := range 5 {
		sendTo(t, n.base, fmt.Sprint("n", i), "orders/create", []byte(fmt.Sprintf(`{"n":%d}`, i)))
		if e := s.event(t); e.ID != fmt.Sprint("n", i) {
			t.Fatalf("through nginx, event %d is %+v", i, e)
		}
	}
	time.Sleep(writeTimeout + 500*time.Millisecond) // the time this is about: fasthttp's deadline of the answer has passed
	sendTo(t, n.base, "late", "orders/create", []byte(`{"late":true}`))
	if e := s.event(t); e.ID != "late" {
		t.Fatalf("after WriteTimeout, got %+v", e)
	}

	defer web.SetStreamTimes(app.StreamPing, 2*time.Second)()
	stuckClient(t, strings.TrimPrefix(front, "http://"))
	apptest.Eventually(t, time.Minute, "two listeners", func() bool { return n.hub.Listeners() == 2 })
	flood(t, n, s, 6000) // 16 MiB on the wire: past the buffers of three sockets and nginx
	apptest.Eventually(t, time.Minute, "the stuck listener behind nginx dropped", func() bool { return n.hub.Listeners() == 1 })
}
