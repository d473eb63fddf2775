package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// A record set aside because it cannot be decoded is on the overview with
// its key and the reason, behind the login.
func TestUI_ShowsRecordsSetAside(t *testing.T) {
	cfg := mustConfig(t, uiSecrets)
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	recv := receive.New(cfg, db)
	body := []byte(`{"id": 8}`)
	in := &app.Inbound{Body: body}
	for k, v := range signShopWith(t, "shpss_new_secret_22", body, "evt-garbled") {
		in.Header = append(in.Header, app.HeaderField{Name: k, Value: v[0]})
	}
	if _, err := recv.Receive(context.Background(), "shop", in); err != nil {
		t.Fatal(err)
	}
	_, seq, _, _ := db.LookupID(context.Background(), "shop", "evt-garbled")
	db.Close()
	bdb, err := bolt.Open(filepath.Join(dir, bboltstore.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("events"))
		k := []byte{0, 0, 0, 0, 0, 0, 0, byte(seq)}
		return b.Put(k, append([]byte{5}, b.Get(k)[1:]...))
	})
	bdb.Close()
	db, err = bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, _, err := db.DueDeliveries(context.Background(), "pos", time.Now(), 10, func(uint64) bool { return false }); err != nil {
		t.Fatal(err)
	}
	login := testAccess(t, cfg, db)
	srv := web.New(cfg, web.Deps{Receiver: recv, Store: db, Health: db.Ping, Access: login})
	c := logIn(t, serve(t, srv.App()))
	resp, page := c.do("GET", "/", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "1 record in the data file cannot be read") ||
		!strings.Contains(page, fmt.Sprintf("event %d", seq)) || !strings.Contains(page, "version 5") {
		t.Fatalf("overview: %d\n%s", resp.StatusCode, page)
	}
}

// While commits fail, /healthz answers 503 "degraded" with since when and
// how many webhooks were refused, and names no path.
func TestServer_HealthDegraded(t *testing.T) {
	since := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	failing := &app.StorageError{StorageEpisode: app.StorageEpisode{Since: since, Refused: 42,
		LastError: "write /var/lib/hookbox/hookbox.db: no space left on device"}}
	s, _ := newServer(t, func(context.Context) error { return failing })
	resp, err := s.App().Test(httptest.NewRequest("GET", "/healthz", nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	var m struct {
		Status, Error string
		Since         time.Time
		Refused       int
	}
	if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != 503 || m.Status != "degraded" || !m.Since.Equal(since) || m.Refused != 42 {
		t.Fatalf("healthz = %d %s (%v)", resp.StatusCode, body, err)
	}
	if strings.Contains(string(body), "/var/lib") {
		t.Fatalf("healthz names a path: %s", body)
	}
}

// A failing destination's row says since when, how many deliveries wait
// and when it is tried next.
func TestUI_FailingDestination(t *testing.T) {
	cfg := mustConfig(t, uiSecrets)
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	recv := receive.New(cfg, db)
	for i := range 3 {
		body := []byte(fmt.Sprintf(`{"id": %d}`, i))
		in := &app.Inbound{Body: body}
		for k, v := range signShopWith(t, "shpss_new_secret_22", body, fmt.Sprint("evt-wait-", i)) {
			in.Header = append(in.Header, app.HeaderField{Name: k, Value: v[0]})
		}
		if _, err := recv.Receive(context.Background(), "shop", in); err != nil {
			t.Fatal(err)
		}
	}
	stats := app.NewStats(cfg, db, time.Now)
	since := time.Now().Add(-90 * time.Second)
	stats.Attempt("pos", app.Pending, time.Millisecond)
	// The dispatcher stores its view; the page reads the store's.
	if err := db.SaveDestinationHealth(context.Background(), "pos", app.DestinationHealth{FailingSince: since, LastError: "HTTP 500",
		NextTry: time.Now().Add(4*time.Minute + 30*time.Second)}); err != nil {
		t.Fatal(err)
	}
	login := testAccess(t, cfg, db)
	srv := web.New(cfg, web.Deps{Receiver: recv, Store: db, Health: db.Ping, Access: login, Stats: stats})
	c := logIn(t, serve(t, srv.App()))
	_, page := c.do("GET", "/", nil)
	want := regexp.MustCompile(`failing since <time datetime="[^"]*" title="[^"]* UTC">[^<]* UTC</time> \(1m3\ds ago\)</span>, 3 waiting, next try in 4m[23]\ds`)
	if !want.MatchString(page) {
		t.Fatalf("overview lacks the failing destination's state:\n%s", page)
	}
}

// failingReads is the bbolt store with one of the overview's reads failing.
type failingReads struct {
	*bboltstore.DB
	fail string // the method that fails
}

var errReadFailed = errors.New("injected read failure")

func (f *failingReads) Backlog(ctx context.Context, dest string, limit int) (int, error) {
	if f.fail == "Backlog" {
		return 0, errReadFailed
	}
	return f.DB.Backlog(ctx, dest, limit)
}

func (f *failingReads) CountPending(ctx context.Context) (int, error) {
	if f.fail == "CountPending" {
		return 0, errReadFailed
	}
	return f.DB.CountPending(ctx)
}

func (f *failingReads) CountRetrying(ctx context.Context, limit int) (int, error) {
	if f.fail == "CountRetrying" {
		return 0, errReadFailed
	}
	return f.DB.CountRetrying(ctx, limit)
}

func (f *failingReads) Poisoned(ctx context.Context, limit int) ([]app.Poison, int, error) {
	if f.fail == "Poisoned" {
		return nil, 0, errReadFailed
	}
	return f.DB.Poisoned(ctx, limit)
}

// A store read the overview cannot do is named on the page in a line of
// its own, as the storage banner is, and the page is still served (200):
// with the database gone the banner that says what to check must show. The
// cause stays in the log, not on the page.
func TestUI_OverviewReadFails(t *testing.T) {
	for _, tc := range []struct{ fail, line string }{
		{"", ""},
		{"Backlog", "the backlog of pos"},
		{"CountPending", "the pending deliveries"},
		{"CountRetrying", "the deliveries waiting for a retry"},
		{"Poisoned", "the records set aside as unreadable"},
	} {
		name := tc.fail
		if name == "" {
			name = "OK"
		}
		t.Run(name, func(t *testing.T) {
			cfg := mustConfig(t, uiSecrets)
			db, err := bboltstore.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			login := testAccess(t, cfg, db)
			stats := app.NewStats(cfg, db, time.Now)
			recv := receive.New(cfg, db)
			srv := web.New(cfg, web.Deps{Receiver: recv, Store: &failingReads{db, tc.fail}, Health: db.Ping,
				Access: login, Stats: stats})
			c := logIn(t, serve(t, srv.App()))
			resp, page := c.do("GET", "/", nil)
			if resp.StatusCode != 200 || !strings.Contains(page, "pos") || strings.Contains(page, errReadFailed.Error()) {
				t.Fatalf("overview: %d\n%s", resp.StatusCode, page)
			}
			const banner = "Cannot be read from storage right now: "
			if tc.fail == "" {
				if strings.Contains(page, banner) {
					t.Fatalf("overview names a failed read with every read working:\n%s", page)
				}
				return
			}
			if want := banner + tc.line + ". "; !strings.Contains(page, want) {
				t.Fatalf("overview lacks %q:\n%s", want, page)
			}
		})
	}
}
