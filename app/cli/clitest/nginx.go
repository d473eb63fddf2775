package clitest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RunNginx runs Debian's nginx with conf (written to prefix/nginx.conf,
// its error log prefix/error.log) until the test ends, and returns once
// it accepts connections on addr; its output and error log are logged
// when the test failed.
func RunNginx(tb testing.TB, prefix, conf, addr string) {
	tb.Helper()
	nginx := Nginx(tb)
	confPath := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	errorLog := filepath.Join(prefix, "error.log")
	cmd := exec.Command(nginx, "-p", prefix, "-c", confPath, "-e", errorLog)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if tb.Failed() {
			b, _ := os.ReadFile(errorLog)
			tb.Logf("nginx output:\n%s\nerror.log:\n%s", out.String(), b)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(errorLog)
			tb.Fatalf("nginx exited: %s\n%s", out.String(), b)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("nginx does not listen on %s after 20 s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
