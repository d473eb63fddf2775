package cli

import (
	"log/slog"
	"testing"

	"github.com/robfig/cron/v3"

	"hookbox/app"
)

// Each source's upstream check is scheduled by its check spec; a reload
// schedules again a source whose spec changed and only it, adds a new
// one, and takes off one whose table (or source) is gone.
func TestUpstreamCrons_Apply(t *testing.T) {
	sched := newCron(slog.New(slog.DiscardHandler))
	u := &upstreamCrons{sched: sched, logger: slog.New(slog.DiscardHandler), ids: map[string]cron.EntryID{}, specs: map[string]string{},
		run: func(string) func() { return func() {} }}
	src := func(name, check string) *app.Source {
		s := &app.Source{Name: name}
		if check != "" {
			s.Upstream = &app.Upstream{Check: check}
		}
		return s
	}
	cfg := &app.Config{Path: "c.toml", Sources: []*app.Source{src("pay", "@every 10m"), src("gh", "@every 5m"), src("shop", "")}}
	if err := u.apply(cfg); err != nil {
		t.Fatal(err)
	}
	if n := len(sched.Entries()); n != 2 {
		t.Fatalf("%d entries; want 2 (pay, gh)", n)
	}
	pay, gh := u.ids["pay"], u.ids["gh"]
	next := &app.Config{Path: "c.toml", Sources: []*app.Source{src("pay", "@every 10m"), src("gh", "@every 1m"), src("shop", "@hourly")}}
	if err := u.apply(next); err != nil {
		t.Fatal(err)
	}
	if u.ids["pay"] != pay || u.ids["gh"] == gh || u.ids["shop"] == 0 || len(sched.Entries()) != 3 || sched.Entry(gh).ID != 0 {
		t.Fatalf("after the reload: ids %v (were pay %d, gh %d), %d entries; want pay kept, gh replaced, shop added", u.ids, pay, gh, len(sched.Entries()))
	}
	if err := u.apply(&app.Config{Path: "c.toml", Sources: []*app.Source{src("pay", "")}}); err != nil {
		t.Fatal(err)
	}
	if len(sched.Entries()) != 0 || len(u.ids) != 0 {
		t.Fatalf("%d entries, ids %v; want none left", len(sched.Entries()), u.ids)
	}
	if err := u.apply(&app.Config{Path: "c.toml", Sources: []*app.Source{src("pay", "every ten")}}); err == nil {
		t.Fatal("a spec cron cannot read was taken")
	}
}
