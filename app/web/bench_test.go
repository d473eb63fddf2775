package web_test

import (
	"bytes"
	"context"
	"maps"

	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

const benchConfig = `
[server]
listen = "127.0.0.1:0"
[[source]]
name = "shop"
provider = "shopify"
secret = "bench-secret"
`

// shopifyBody is a 2 KiB JSON body and its headers, signed once: every
// request reuses them with its own X-Shopify-Webhook-Id.
func shopifyBody(tb testing.TB) ([]byte, map[string]string) {
	body := []byte(`{"id": 820982911946154508, "email": "jon@example.com", "note": "`)
	body = append(body, bytes.Repeat([]byte("x"), 2048-len(body)-2)...)
	body = append(body, `"}`...)
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("bench-secret")}}, body, "", "x", "orders/create", time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]string{}
	for k := range h {
		m[k] = h.Get(k)
	}
	delete(m, "X-Shopify-Event-Id") // it would win over the per-request webhook id
	return body, m
}

// serve runs handler-bearing app on 127.0.0.1 and returns its address.
func serve(tb testing.TB, a *fiber.App) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go a.Listener(ln)
	tb.Cleanup(func() { a.Shutdown() })
	return ln.Addr().String()
}

// load sends b.N requests from 64 concurrent connections and reports the
// accepted requests per second.
func load(b *testing.B, addr string, body []byte, hdr map[string]string) {
	client := &fasthttp.HostClient{Addr: addr, MaxConns: 64}
	var seq, bad atomic.Int64
	b.SetParallelism(32) // 32 × GOMAXPROCS(2) = 64 connections
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://" + addr + "/in/shop")
		req.Header.SetMethod("POST")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		req.SetBody(body)
		for pb.Next() {
			req.Header.Set("X-Shopify-Webhook-Id", strconv.FormatInt(seq.Add(1), 10))
			if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
				bad.Add(1)
			}
		}
	})
	b.StopTimer()
	if n := bad.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkIngest compares, in one run, a Fiber server that only verifies
// the Shopify HMAC (the ceiling) with hookbox's full durable path: verify,
// identify, one group-committed fsync'd bbolt transaction, answer. The
// ratio of their req/s is the figure that counts; absolute numbers move
// with the machine.
func BenchmarkIngest(b *testing.B) {
	body, hdr := shopifyBody(b)
	cfg, err := config.Parse("bench.toml", benchConfig, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("verify-only", func(b *testing.B) {
		verify := cfg.Sources[0].Verify
		a := fiber.New(fiber.Config{BodyLimit: cfg.Server.MaxBodyBytes, ReadTimeout: web.ReadTimeout,
			WriteTimeout: web.WriteTimeout, IdleTimeout: web.IdleTimeout, ReadBufferSize: web.ReadBufferSize,
			DisableStartupMessage: true})
		a.Post("/in/:source", func(c *fiber.Ctx) error {
			in := &app.Inbound{Body: c.Request().Body()}
			c.Request().Header.VisitAll(func(k, v []byte) {
				in.Header = append(in.Header, app.HeaderField{Name: string(k), Value: string(v)})
			})
			v, err := verify(provider.Request{Body: in.Body, Header: in}, time.Now())
			if err != nil {
				return c.SendStatus(401)
			}
			return c.JSON(fiber.Map{"status": "accepted", "id": v.ID})
		})
		load(b, serve(b, a), body, hdr)
	})
	const routed = `
[[destination]]
name = "sink"
url = "http://127.0.0.1:9/unused"
[[route]]
source = "shop"
to = ["sink"]
`
	const debounced = `
[[destination]]
name = "sink"
url = "http://127.0.0.1:9/unused"
[[route]]
source = "shop"
to = ["sink"]
key = "{header.X-Shopify-Shop-Domain}:{header.X-Shopify-Webhook-Id}"
debounce = "1h"
`
	for _, mode := range []struct {
		name  string
		extra string // config added to benchConfig
	}{
		{"durable", ""},
		{"durable-routed", routed},
		{"durable-debounced", debounced},
	} {
		b.Run(mode.name, func(b *testing.B) {
			cfg, err := config.Parse("bench.toml", benchConfig+mode.extra, nil)
			if err != nil {
				b.Fatal(err)
			}
			db, err := bboltstore.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping})
			hdr := maps.Clone(hdr)
			hdr["X-Shopify-Shop-Domain"] = "shop1.myshopify.com"
			load(b, serve(b, srv.App()), body, hdr)
			if _, events, _ := db.Counts(context.Background()); events < b.N {
				b.Fatalf("stored %d events for %d requests", events, b.N)
			}
		})
	}
}
