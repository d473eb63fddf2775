package cli

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/sink"
)

// TestSign_DefaultTopic: sign without -topic sends the provider's usual
// topic, so a route with a topic filter (push) delivers the test event;
// the sink command takes the destination's secret from the config.
func TestSign_DefaultTopic(t *testing.T) {
	sinkAddr := freePort(t)
	config := writeTestConfig(t, "http://"+sinkAddr+"/", "")
	var sinkOut buffer
	ctx, cancel := context.WithCancel(context.Background())
	sinkDone := make(chan int, 1)
	go func() {
		sinkDone <- Run(ctx, []string{"sink", "-config", config, "-listen", sinkAddr}, &sinkOut, &sinkOut)
	}()
	defer func() { cancel(); <-sinkDone }()
	apptest.Until(t, 10*time.Second, func() error {
		if !strings.Contains(sinkOut.String(), "listening") {
			return fmt.Errorf("sink: %s", sinkOut.String())
		}
		return nil
	})
	if !strings.Contains(sinkOut.String(), `the secret from destination "sink"`) {
		t.Fatalf("the sink did not take the destination's secret: %s", sinkOut.String())
	}
	addr := freePort(t)
	startServe(t, config, addr)
	pipeStdin(t, `{"hello":"world"}`)
	code, out := runCmd("sign", "-config", config, "-listen", addr, "-source", "gh", "-send", "-")
	m := regexp.MustCompile(`^200 \{"status":"accepted","id":"([^"]+)"\}`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("sign -send: %d %q", code, out)
	}
	apptest.Until(t, 20*time.Second, func() error {
		if !strings.Contains(sinkOut.String(), "event="+m[1]) {
			return fmt.Errorf("the topic-filtered route did not deliver the test event: %s", sinkOut.String())
		}
		return nil
	})
	if !strings.Contains(sinkOut.String(), "event="+m[1]+" topic=push attempt=1 bytes=17 signature ok") {
		t.Fatalf("sink printed %q", sinkOut.String())
	}
	// An explicit -topic still wins, and this one matches no route.
	code, out = runCmd("sign", "-config", config, "-listen", addr, "-source", "gh", "-topic", "issues", "-send", "/dev/null")
	if code != 0 {
		t.Fatalf("sign -topic issues: %d %q", code, out)
	}
}

func TestSink_Command(t *testing.T) {
	t.Run("ErrBadSecret", func(t *testing.T) {
		code, out := runCmd("sink", "-listen", "127.0.0.1:0", "-secret", "not-a-secret!")
		if code != 2 || !strings.Contains(out, "whsec_") {
			t.Fatalf("%d %q", code, out)
		}
	})
	t.Run("ErrListen", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		code, out := runCmd("sink", "-config", "/nonexistent", "-listen", ln.Addr().String())
		if code != 1 || !strings.Contains(out, "address already in use") {
			t.Fatalf("%d %q", code, out)
		}
	})
	t.Run("NoSecret", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var out buffer
		done := make(chan int, 1)
		addr := freePort(t)
		go func() {
			done <- Run(ctx, []string{"sink", "-config", "/nonexistent", "-listen", addr}, &out, &out)
		}()
		apptest.Until(t, 10*time.Second, func() error {
			if !strings.Contains(out.String(), "listening") {
				return fmt.Errorf("sink: %s", out.String())
			}
			return nil
		})
		cancel()
		if code := <-done; code != 0 || !strings.Contains(out.String(), "signatures not checked") {
			t.Fatalf("%d %q", code, out.String())
		}
	})
	_ = sink.DefaultMaxBody
}
