package receive_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/receive"
	"hookbox/storage/bboltstore"
)

const quarantineConfig = `
[server]
public_url = "https://hooks.example.com"
[[source]]
name = "gh"
provider = "github"
secret = "%s"
[[source]]
name = "pay"
provider = "stripe"
secret = "%s"
[[destination]]
name = "app"
url = "http://127.0.0.1:1/"
[[route]]
source = "gh"
to = ["app"]
[[route]]
source = "pay"
to = ["app"]
`

func quarantineCfg(t *testing.T, gh, pay string) *app.Config {
	t.Helper()
	cfg, err := config.Parse("q.toml", fmt.Sprintf(quarantineConfig, gh, pay), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func openDisk(t *testing.T) *bboltstore.DB {
	t.Helper()
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func from(in *app.Inbound, client string) *app.Inbound { in.Client = client; return in }

// A flood of 10,000 forged requests from one address, an hour and more of
// it, keeps that address within its share of the quarantine (a tenth) and
// pushes out none of what other addresses left there; the quarantine stays
// within its bounds, and no refused request is written before its answer.
func TestReceiver_QuarantineFlood(t *testing.T) {
	ctx := context.Background()
	now := now0
	db := openDisk(t)
	cfg := quarantineCfg(t, "right", "whsec_right")
	cfg.Quarantine = app.QuarantineLimits{Requests: 1000, Bytes: 16 << 20, Keep: 7 * 24 * time.Hour}
	r := receive.New(cfg, db)
	r.Now = func() time.Time { return now }
	r.KeepQuarantine(db)

	body := func(i int) []byte { return []byte(fmt.Sprintf(`{"zen":"%d"}`, i)) }
	for i := range 20 {
		in := from(apptest.Signed(t, "github", "wrong", body(i), "", fmt.Sprint("d-", i), "push", now), fmt.Sprintf("192.0.2.%d", i))
		if _, err := r.Receive(ctx, "gh", in); app.ErrorCode(err) != app.EUNAUTHORIZED {
			t.Fatalf("Receive = %v; want 401", err)
		}
		now = now.Add(time.Second)
	}
	// Nothing is written on the answer's way.
	if n, _, _ := db.QuarantineUsage(ctx, "gh"); n != 0 {
		t.Fatalf("the quarantine holds %d before its writer ran; want 0: the 401 must not wait for a write", n)
	}
	if n := receive.WriteQuarantine(ctx, r); n != 20 {
		t.Fatalf("wrote %d; want 20", n)
	}
	for i := range 10000 {
		in := from(apptest.Signed(t, "github", "forged", body(i), "", fmt.Sprint("f-", i), "push", now), "203.0.113.9")
		if _, err := r.Receive(ctx, "gh", in); app.ErrorCode(err) != app.EUNAUTHORIZED {
			t.Fatalf("Receive = %v; want 401", err)
		}
		now = now.Add(time.Second)
		if i%50 == 0 {
			receive.WriteQuarantine(ctx, r)
		}
	}
	receive.WriteQuarantine(ctx, r)

	n, size, err := db.QuarantineUsage(ctx, "gh")
	if err != nil {
		t.Fatal(err)
	}
	held, err := db.Quarantined(ctx, "gh", 0, 2000)
	if err != nil {
		t.Fatal(err)
	}
	others, flood := 0, 0
	for _, q := range held {
		if q.Client == "203.0.113.9" {
			flood++
		} else {
			others++
		}
	}
	t.Logf("after 10,000 forged requests: %d held (%d bytes), %d of the flood, %d of the others", n, size, flood, others)
	if others != 20 {
		t.Errorf("%d of the 20 others' requests are left; want all 20", others)
	}
	if flood != 100 {
		t.Errorf("the flooding address holds %d; want its share, 100", flood)
	}
	if n > cfg.Quarantine.Requests || size > cfg.Quarantine.Bytes {
		t.Errorf("%d requests, %d bytes: past the bounds", n, size)
	}
}

// A rate of 60 a minute per source and 10 per address: past it, refused
// requests are only counted.
func TestReceiver_QuarantineRate(t *testing.T) {
	ctx := context.Background()
	now := now0
	db := openDisk(t)
	r := receive.New(quarantineCfg(t, "right", "whsec_right"), db)
	r.Now = func() time.Time { return now }
	r.KeepQuarantine(db)
	for i := range 200 {
		in := from(apptest.Signed(t, "github", "wrong", []byte(fmt.Sprint(i)), "", fmt.Sprint("d-", i), "push", now), fmt.Sprintf("198.51.100.%d", i%20))
		r.Receive(ctx, "gh", in)
	}
	if n := receive.WriteQuarantine(ctx, r); n != 60 {
		t.Errorf("in one minute %d entered; want 60", n)
	}
	// Unsigned (no X-Hub-Signature-256) and malformed ones are not kept.
	now = now.Add(time.Minute)
	r.Receive(ctx, "gh", apptest.Inbound([]byte(`{}`), http.Header{"X-Github-Delivery": {"x"}}))
	r.Receive(ctx, "gh", apptest.Inbound([]byte(`{}`), http.Header{"X-Hub-Signature-256": {"md5=zz"}}))
	if n := receive.WriteQuarantine(ctx, r); n != 0 {
		t.Errorf("kept %d without a signature or with a malformed one; want 0", n)
	}
}

// A secret typed wrong: genuine requests are refused and kept; a reload
// with the right secret takes them in through dedup and routes, with
// their arrival time, without the provider's signature, and a Stripe
// request's timestamp is checked against when it arrived (an hour ago).
func TestReceiver_QuarantineRecovers(t *testing.T) {
	ctx := context.Background()
	now := now0
	db := openDisk(t)
	r := receive.New(quarantineCfg(t, "typo", "whsec_typo"), db)
	r.Now = func() time.Time { return now }
	r.KeepQuarantine(db)
	at := now
	r.Receive(ctx, "gh", from(apptest.Signed(t, "github", "right", []byte(`{"n":1}`), "", "d-1", "push", now), "192.0.2.1"))
	r.Receive(ctx, "gh", from(apptest.Signed(t, "github", "forged", []byte(`{"n":2}`), "", "d-2", "push", now), "192.0.2.2"))
	r.Receive(ctx, "pay", from(apptest.Signed(t, "stripe", "whsec_right", []byte(`{"id":"evt_1","type":"charge.succeeded"}`), "", "", "", now), "192.0.2.3"))
	if n := receive.WriteQuarantine(ctx, r); n != 3 {
		t.Fatalf("kept %d; want 3", n)
	}
	now = now.Add(time.Hour)
	// The same request again, before the fix: dedup makes it once.
	r.Receive(ctx, "gh", from(apptest.Signed(t, "github", "right", []byte(`{"n":1}`), "", "d-1", "push", at), "192.0.2.1"))
	receive.WriteQuarantine(ctx, r)

	r.Apply(quarantineCfg(t, "right", "whsec_right"))
	gh, err := r.Recheck(ctx, "gh")
	if err != nil || gh.Checked != 3 || gh.Recovered != 2 || gh.Duplicate != 1 || gh.Remaining != 1 {
		t.Errorf("Recheck(gh) = %+v, %v; want 3 checked, 2 recovered (1 a duplicate), the forged one remaining", gh, err)
	}
	pay, err := r.Recheck(ctx, "pay")
	if err != nil || pay.Recovered != 1 || pay.Remaining != 0 {
		t.Errorf("Recheck(pay) = %+v, %v; want 1 recovered (its timestamp an hour old, checked at its arrival)", pay, err)
	}
	for _, id := range [][2]string{{"gh", "d-1"}, {"pay", "evt_1"}} {
		_, seq, ok, err := db.LookupID(ctx, id[0], id[1])
		if !ok || err != nil {
			t.Fatalf("%s/%s not accepted: %v", id[0], id[1], err)
		}
		e, err := db.Event(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if e.Origin != app.OriginQuarantine {
			t.Errorf("%s origin %q; want %q", id[1], e.Origin, app.OriginQuarantine)
		}
		if !e.ReceivedAt.Equal(at) {
			t.Errorf("%s received at %s; want its first arrival %s", id[1], e.ReceivedAt, at)
		}
		for _, h := range e.Header {
			if h.Name == "X-Hub-Signature-256" || h.Name == "Stripe-Signature" {
				t.Errorf("%s kept its provider's signature header %s", id[1], h.Name)
			}
		}
		if n, _ := db.CountPending(ctx); n == 0 {
			t.Errorf("no delivery opened for %s", id[1])
		}
	}
	if n, _, _ := db.QuarantineUsage(ctx, "gh"); n != 1 {
		t.Errorf("gh's quarantine holds %d; want the forged one", n)
	}
	if n, _, _ := db.QuarantineUsage(ctx, "pay"); n != 0 {
		t.Errorf("pay's quarantine holds %d; want none", n)
	}
}

// RunQuarantine rechecks a source after a reload changed its secrets.
func TestReceiver_QuarantineReloadRechecks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	db := openDisk(t)
	r := receive.New(quarantineCfg(t, "typo", "whsec_typo"), db)
	r.KeepQuarantine(db)
	done := make(chan struct{})
	go func() { r.RunQuarantine(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	r.Receive(ctx, "gh", from(apptest.Signed(t, "github", "right", []byte(`{"n":1}`), "", "d-1", "push", time.Now()), "192.0.2.1"))
	apptest.Eventually(t, 10*time.Second, "the refused request is kept", func() bool {
		n, _, _ := db.QuarantineUsage(ctx, "gh")
		return n == 1
	})
	r.Apply(quarantineCfg(t, "right", "whsec_typo"))
	apptest.Eventually(t, 10*time.Second, "the reload's recheck takes it in", func() bool {
		_, _, ok, _ := db.LookupID(ctx, "gh", "d-1")
		n, _, _ := db.QuarantineUsage(ctx, "gh")
		return ok && n == 0
	})
}

// While the writer is held up (a slow disk), the copies waiting for it
// are bounded in bytes, whatever max_body_bytes allows; once written,
// their room is free again.
func TestReceiver_QuarantineQueueBounded(t *testing.T) {
	ctx := context.Background()
	now := now0
	db := openDisk(t)
	r := receive.New(quarantineCfg(t, "right", "whsec_right"), db)
	r.Now = func() time.Time { return now }
	r.KeepQuarantine(db)
	big := make([]byte, 100<<10)
	offer := func(n int) {
		for i := range n {
			in := from(apptest.Signed(t, "github", "wrong", big, "", fmt.Sprint("d-", i), "push", now), fmt.Sprintf("198.51.100.%d", i%250))
			r.Receive(ctx, "gh", in)
			if i%60 == 59 {
				now = now.Add(time.Minute) // past the source's rate
			}
		}
	}
	offer(300)
	n := receive.WriteQuarantine(ctx, r)
	t.Logf("%d copies waited", n)
	if n == 0 || n*len(big) > 8<<20 {
		t.Errorf("%d copies of 100 KiB waited for the writer; want some, within 8 MiB", n)
	}
	offer(60)
	if m := receive.WriteQuarantine(ctx, r); m != 60 {
		t.Errorf("after the writer ran, %d of 60 waited; want all: the room was given back", m)
	}
}
