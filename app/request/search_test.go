package request_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/request"
)

// TestWatch: a handler's watched context ends when its client hangs up
// mid-request, and does not while the client waits for the answer.
func TestWatch(t *testing.T) {
	ended := make(chan error, 2)
	watching := make(chan struct{}, 2)
	f := fiber.New()
	f.Get("/search", func(c *fiber.Ctx) error {
		ctx, stop := request.Watch(c)
		defer stop()
		watching <- struct{}{}
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(time.Duration(c.QueryInt("wait")) * time.Millisecond):
			ended <- nil
		}
		return c.SendString("done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = f.Listener(ln) }()
	defer func() { _ = f.Shutdown() }()
	send := func(wait int) net.Conn {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET /search?wait=%d HTTP/1.1\r\nHost: x\r\n\r\n", wait)
		return conn
	}

	// The client leaves: the context ends long before the handler's 30 s.
	conn := send(30000)
	apptest.Recv(t, watching, 10*time.Second, "the request at the handler")
	conn.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the watched context after the client left: %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watched context did not end when the client left")
	}

	// The client stays: the handler answers, its context alive.
	conn = send(300)
	defer conn.Close()
	if err := <-ended; err != nil {
		t.Fatalf("the watched context of a client that stayed: %v; want alive", err)
	}
	buf := make([]byte, 512)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := conn.Read(buf); err != nil || n == 0 {
		t.Fatalf("the answer to a client that stayed: %q, %v", buf[:n], err)
	}
}

// TestSearch_Busy: Search refuses a third search of one caller with the
// gate's EBUSY error.
func TestSearch_Busy(t *testing.T) {
	gate := app.NewSearchGate(4, 2)
	f := fiber.New()
	f.Get("/", func(c *fiber.Ctx) error {
		c.Locals("identity", app.Identity{Name: "alice"})
		var dones []func()
		defer func() {
			for _, d := range dones {
				d()
			}
		}()
		for i := range 3 {
			_, done, err := request.Search(c, gate)
			if i < 2 && err != nil || i == 2 && app.ErrorCode(err) != app.EBUSY {
				t.Errorf("search %d = %v", i+1, err)
			}
			if done != nil {
				dones = append(dones, done)
			}
		}
		return nil
	})
	if _, err := f.Test(httptest.NewRequest("GET", "/", nil)); err != nil {
		t.Fatal(err)
	}
}
