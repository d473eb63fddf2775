package request

import (
	"context"
	"net"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// Body searches (issue 42): each takes a place in the node's SearchGate
// for its caller, and stops soon after its client hangs up. fasthttp
// does not end a handler's context when the client goes (it reads the
// connection again only after the answer), so Search watches the
// connection itself.

// watchEvery is how often Search looks at the connection: a search
// stops within this (plus the ~1 MiB it reads between two looks at its
// context) of its client leaving.
const watchEvery = 50 * time.Millisecond

// Search takes a place in gate for c's caller (its Identity's Actor) and
// returns a context, under c's, that is cancelled when the client hangs
// up; done gives the place back and stops the watch (call it once, before
// the handler returns). A caller over the gate's bounds gets gate's EBUSY
// error and nothing to give back.
func Search(c *fiber.Ctx, gate *app.SearchGate) (ctx context.Context, done func(), err error) {
	id, _ := c.Locals("identity").(app.Identity)
	leave, err := gate.Enter(id.Actor())
	if err != nil {
		return nil, nil, err
	}
	ctx, stop := Watch(c)
	return ctx, func() { stop(); leave() }, nil
}

// Watch returns a context under c's user context that is cancelled when
// c's client hangs up (its end of the connection closed or reset), looked
// at every watchEvery; stop ends the watch (call it before the handler
// returns: the connection is not the handler's after). Over TLS a client
// that closes with close_notify looks like one that sent more (the alert
// is data): its leaving is seen only when the connection is reset.
func Watch(c *fiber.Ctx) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(c.UserContext())
	raw := rawConn(c.Context().Conn())
	if raw == nil {
		return ctx, cancel
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if hungUp(raw) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(); <-ended }
}

// rawConn finds the socket under conn (through TLS and wrappers that
// offer NetConn), nil when there is none.
func rawConn(conn net.Conn) syscall.RawConn {
	for range 4 {
		if sc, ok := conn.(syscall.Conn); ok {
			raw, err := sc.SyscallConn()
			if err != nil {
				return nil
			}
			return raw
		}
		w, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		conn = w.NetConn()
	}
	return nil
}
