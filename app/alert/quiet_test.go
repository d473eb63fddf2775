package alert_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/alert"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
)

// A source with quiet_after = "6h": one source_quiet when it has accepted
// nothing for 6 hours, one source_active when an event comes, however
// often the alerter looks and across restarts (a new alerter over the
// reopened data file), and a new episode alerts again. The clock is the
// test's.
func TestAlerter_QuietSource(t *testing.T) {
	ctx := context.Background()
	sink := newJSONSink(t)
	cfg, err := config.Parse("t.toml", "[server]\npublic_url = \"https://hooks.shop.example\"\n[alerts]\nurl = \""+sink.url+"\"\n"+
		"[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"s\"\nquiet_after = \"6h\"\n"+
		"[[source]]\nname = \"loud\"\nprovider = \"shopify\"\nsecret = \"s\"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	now := t0
	var db *bboltstore.DB
	var a *alert.Alerter
	open := func() {
		if db != nil {
			db.Close()
		}
		db, err = bboltstore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		a = alert.New(cfg, db)
		a.Quiet, a.Now = db, func() time.Time { return now }
	}
	open()
	t.Cleanup(func() { db.Close() })
	accept := func(id string) {
		t.Helper()
		e := &app.Event{Source: "shop", ID: id, Topic: "orders/create", ReceivedAt: now, Body: []byte(`{}`)}
		if dup, err := db.Accept(ctx, e, now.Add(24*time.Hour), nil); err != nil || dup {
			t.Fatalf("accept %s: %v, %v", id, dup, err)
		}
	}
	kinds := func() []string {
		var out []string
		for _, b := range sink.got() {
			out = append(out, b["kind"].(string)+"/"+b["source"].(string))
		}
		return out
	}
	look := func(at time.Duration, want ...string) {
		t.Helper()
		now = t0.Add(at)
		a.CheckCluster(ctx)
		if got := strings.Join(kinds(), " "); got != strings.Join(want, " ") {
			t.Fatalf("at +%s alerts %q; want %q", at, got, strings.Join(want, " "))
		}
	}
	accept("a-1")
	look(5 * time.Hour)
	look(6*time.Hour, "source_quiet/shop")
	look(7*time.Hour, "source_quiet/shop")
	open() // a restart
	look(8*time.Hour, "source_quiet/shop")
	now = t0.Add(9 * time.Hour)
	accept("a-2")
	look(9*time.Hour+time.Minute, "source_quiet/shop", "source_active/shop")
	look(10*time.Hour, "source_quiet/shop", "source_active/shop")
	open()
	look(11*time.Hour, "source_quiet/shop", "source_active/shop")
	look(15*time.Hour, "source_quiet/shop", "source_active/shop", "source_quiet/shop")
	if text := sink.got()[0]["text"].(string); !strings.Contains(text, "source shop accepted nothing for 6h0m0s") || !strings.Contains(text, "hookbox quarantine list shop") {
		t.Errorf("quiet text %q", text)
	}
}
