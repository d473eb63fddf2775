package web_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// BenchmarkPages renders the overview and the first page of the event list
// over a store holding HOOKBOX_BENCH_EVENTS events (default 1,000,000; the
// fill takes about a minute and is not timed).
func BenchmarkPages(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("HOOKBOX_BENCH_EVENTS")); err == nil {
		n = v
	}
	cfg := mustConfig(b, uiSecrets)
	db, err := bboltstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now().Add(-time.Duration(n) * time.Millisecond)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				e := &app.Event{Source: "shop", ID: fmt.Sprint("e", i), Topic: "orders/create",
					ReceivedAt: start.Add(time.Duration(i) * time.Millisecond), Body: []byte(`{"id": 1}`)}
				if _, err := db.Accept(context.Background(), e, start.Add(time.Hour), nil); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	login := access.Fixed("ops", "pw-status-77")
	srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping, Access: login})
	addr := serve(b, srv.App())
	for _, page := range []string{"/", "/events", "/events?source=shop&topic=orders/*", "/api/v1/stats"} {
		b.Run(page, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest("GET", "http://"+addr+page, nil)
				req.SetBasicAuth("ops", "pw-status-77")
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%s: %v %v", page, resp.StatusCode, err)
				}
				resp.Body.Close()
			}
		})
	}
}
