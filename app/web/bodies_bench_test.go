package web_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"hookbox/app/config"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// BenchmarkEdgeBodies measures the edge's own work on a webhook, without
// the store: the body read (bodies.go), the edge checks, the source's
// lookup and its HMAC over the body, answered 401 (a wrong signature), on
// 64 connections. Bodies of 2 KiB fit in fasthttp's first read; those of
// 32 KiB are read in pieces.
func BenchmarkEdgeBodies(b *testing.B) {
	cfg, err := config.Parse("bench.toml", benchConfig, nil)
	if err != nil {
		b.Fatal(err)
	}
	db, err := bboltstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping})
	addr := serve(b, srv.App())
	for _, size := range []int{2 << 10, 32 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			body := bytes.Repeat([]byte("x"), size)
			client := &fasthttp.HostClient{Addr: addr, MaxConns: 64}
			var bad atomic.Int64
			b.SetParallelism(32) // 32 × GOMAXPROCS(2) = 64 connections
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI("http://" + addr + "/in/shop")
				req.Header.SetMethod("POST")
				req.Header.Set("X-Shopify-Hmac-Sha256", "AAAA")
				req.Header.Set("X-Shopify-Webhook-Id", "w-1")
				req.SetBody(body)
				for pb.Next() {
					if err := client.Do(req, resp); err != nil || resp.StatusCode() != 401 {
						bad.Add(1)
					}
				}
			})
			b.StopTimer()
			if n := bad.Load(); n > 0 {
				b.Fatalf("%d of %d requests not answered 401", n, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
