package bench

import (
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"hookbox/app"
	"hookbox/app/provider"
)

// startRelay starts the stateless relay -compare measures hookbox against:
// a Fiber server with hookbox's server settings (lim) that verifies the
// signature, forwards the body to the sink and answers with the sink's
// verdict, storing nothing. It is what a webhook forwarder without a
// durable outbox does: the sender waits for the destination, and an event
// is lost if the destination is down or the process dies. The difference
// to hookbox is the price of durability (and of decoupling the sender from
// the destination). It returns the relay's address and a stop function.
func startRelay(src *app.Source, bodyLimit int, sinkURL string, conns int, lim ConnLimits) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	client := &fasthttp.Client{MaxConnsPerHost: max(conns, 64), ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxIdleConnDuration: time.Minute}
	relay := fiber.New(lim.fiber(bodyLimit))
	relay.Post("/in/:source", func(c *fiber.Ctx) error {
		if !verified(c, src) {
			return c.SendStatus(fiber.StatusUnauthorized)
		}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(sinkURL)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(c.Request().Body())
		if err := client.Do(req, resp); err != nil || resp.StatusCode()/100 != 2 {
			return c.SendStatus(fiber.StatusBadGateway)
		}
		return c.JSON(fiber.Map{"status": "accepted"})
	})
	go relay.Listener(ln)
	return ln.Addr().String(), func() { relay.Shutdown() }, nil
}

// verified checks the request's signature for src over the bytes received,
// as hookbox does: the work the ceiling and the relay do per request.
func verified(c *fiber.Ctx, src *app.Source) bool {
	in := &app.Inbound{Body: c.Request().Body(), Header: make([]app.HeaderField, 0, c.Request().Header.Len())}
	c.Request().Header.VisitAll(func(k, v []byte) {
		in.Header = append(in.Header, app.HeaderField{Name: string(k), Value: string(v)})
	})
	_, err := src.Verify(provider.Request{Body: in.Body, Header: in, URL: src.URL}, time.Now())
	return err == nil
}

// fiber is the Fiber config of a server bounded by l that reads bodies of
// up to bodyLimit bytes.
func (l ConnLimits) fiber(bodyLimit int) fiber.Config {
	return fiber.Config{BodyLimit: bodyLimit, ReadTimeout: l.ReadTimeout, WriteTimeout: l.WriteTimeout,
		IdleTimeout: l.IdleTimeout, ReadBufferSize: l.ReadBufferSize, DisableStartupMessage: true}
}
