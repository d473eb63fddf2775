package dispatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/app/alert"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/metrics"
	"hookbox/app/receive"
	"hookbox/storage/bboltstore"
)

// One event record of a destination's backlog cannot be decoded (a
// layout a newer build wrote): the others are delivered, the record is
// set aside with its key and reason, counted in a metric and alerted.
func TestDispatcher_PoisonIsolated(t *testing.T) {
	s := newSink(t, 200)
	alerts := apptest.NewAlertSink(t)
	toml := destsConfig(`["1h"]`, s.URL) + fmt.Sprintf("[alerts]\nurl = %q\n", alerts.URL)
	dir := t.TempDir()

	// Accept a backlog while nothing dispatches, then garble one event.
	cfg, err := config.Parse("test.toml", toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	recv := receive.New(cfg, db)
	for i := range 20 {
		in := apptest.Signed(t, "github", "gh-secret", []byte(fmt.Sprintf(`{"n": %d}`, i)), "", fmt.Sprint("bl-", i), "push", time.Now())
		if _, err := recv.Receive(context.Background(), "gh", in); err != nil {
			t.Fatal(err)
		}
	}
	_, bad, _, _ := db.LookupID(context.Background(), "gh", "bl-7")
	db.Close()
	bdb, err := bolt.Open(dir+"/"+bboltstore.FileName, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("events"))
		k := []byte{0, 0, 0, 0, 0, 0, 0, byte(bad)}
		v := append([]byte(nil), b.Get(k)...)
		v[0] = 9 // a layout this build does not know (2 is now known: events with an unrouted reason)
		return b.Put(k, v)
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()

	h := newHarnessAt(t, toml, dir, time.Now)
	for i := range 20 {
		if i != 7 {
			h.waitState(t, fmt.Sprint("bl-", i), 0, app.Delivered)
		}
	}
	d := h.waitState(t, "bl-7", 0, app.Dead)
	if !strings.Contains(d.LastError, "cannot be read") {
		t.Fatalf("delivery of the unreadable event: %+v", d)
	}
	poison, total, err := h.db.Poisoned(context.Background(), 10)
	if err != nil || total != 1 || poison[0].Kind != "event" || poison[0].Key != fmt.Sprint(bad) || !strings.Contains(poison[0].Reason, "version 9") {
		t.Fatalf("Poisoned = %+v, %d, %v", poison, total, err)
	}
	prom := metrics.New(app.NewStats(h.cfg, h.db, time.Now), h.db)
	if got := gaugeValue(t, prom, "hookbox_poison_records"); got != 1 {
		t.Fatalf("hookbox_poison_records = %v, want 1", got)
	}
	alerter := alert.New(h.cfg, h.db)
	alerter.Check(context.Background())
	alerter.Check(context.Background()) // once per new record, not once per check
	msgs := alerts.Messages()
	var poisonMsgs []string
	for _, m := range msgs {
		if strings.Contains(m, "cannot be read") {
			poisonMsgs = append(poisonMsgs, m)
		}
	}
	if len(poisonMsgs) != 1 || !strings.Contains(poisonMsgs[0], fmt.Sprintf("event %d", bad)) {
		t.Fatalf("alerts = %q; want one naming event %d", msgs, bad)
	}
}

// gaugeValue reads the value of a gauge without labels from prom.
func gaugeValue(t *testing.T, prom *metrics.Prometheus, name string) float64 {
	t.Helper()
	mfs, err := prom.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
