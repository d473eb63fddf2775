package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/metrics"
	"hookbox/storage/bboltstore"
)

const testConfig = `
[[source]]
name = "demo"
provider = "github"
secret = "demo-secret-change-me"

[[destination]]
name = "sink"
url = "http://127.0.0.1:9/"

[[destination]]
name = "down"
url = "http://127.0.0.1:9/"

[[route]]
name = "demo-to-sink"
source = "demo"
to = ["sink", "down"]
`

// newMetrics builds Stats over a bbolt store in a temporary directory,
// with Prometheus metrics that report a certificate valid for a day.
func newMetrics(t *testing.T) (*app.Stats, *metrics.Prometheus) {
	t.Helper()
	cfg, err := config.Parse("test.toml", testConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	stats := app.NewStats(cfg, db, time.Now)
	prom := metrics.New(stats, db)
	expiry := time.Now().Add(24 * time.Hour)
	prom.Registry.MustRegister(metrics.CertificateExpiry(func() time.Time { return expiry }))
	return stats, prom
}

// scrape fetches /metrics from prom's handler over a real connection and
// returns the lines of hookbox's own metrics.
func scrape(t *testing.T, prom *metrics.Prometheus) []string {
	t.Helper()
	srv := httptest.NewServer(prom.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "hookbox_") || strings.HasPrefix(l, "# HELP hookbox_") || strings.HasPrefix(l, "# TYPE hookbox_") {
			out = append(out, l)
		}
	}
	return out
}

// record makes stats hear what the snapshot in testdata saw: webhooks
// accepted, a duplicate, a rejected one and one to an unknown source,
// deliveries to one destination and failed attempts at another, a sweep,
// and an event a route's filter turned away and one it failed on.
func record(stats *app.Stats) {
	stats.Inbound("demo", app.Accepted, 2*time.Millisecond)
	stats.Inbound("demo", app.Accepted, 3*time.Millisecond)
	stats.Inbound("demo", app.Duplicate, time.Millisecond)
	stats.Inbound("demo", app.Rejected, 0)
	stats.Unknown()
	stats.Attempt("sink", app.Delivered, 2*time.Millisecond)
	stats.Attempt("down", app.Pending, time.Millisecond)
	stats.Swept(nil)
	stats.Filtered([]app.FilterNote{{Route: "demo-to-sink"}, {Route: "demo-to-sink", Err: "no such key: amount"}})
}

// The names, types, help strings, labels and buckets of every hookbox
// metric are those of the server before the metrics left the domain:
// testdata/exposition.txt is its /metrics after the same events, with
// each sample's value replaced by V. Dashboards and alerts depend on them.
func TestPrometheus_Exposition(t *testing.T) {
	stats, prom := newMetrics(t)
	record(stats)
	value := regexp.MustCompile(` \S+$`)
	var got []string
	for _, l := range scrape(t, prom) {
		if !strings.HasPrefix(l, "#") {
			l = value.ReplaceAllString(l, " V")
		}
		got = append(got, l)
	}
	want, err := os.ReadFile("testdata/exposition.txt")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(got, "\n")+"\n", string(want); g != w {
		t.Errorf("/metrics differs from testdata/exposition.txt:\n got:\n%s\nwant:\n%s", g, w)
	}
}

// Each event stats hears is counted once, under the domain's names for
// its outcome; the storage gauges follow the commits.
func TestPrometheus_Values(t *testing.T) {
	stats, prom := newMetrics(t)
	record(stats)
	stats.Swept(errors.New("disk full"))
	stats.Storage.Committed(errors.New("no space left on device"))
	has := func(want string) {
		t.Helper()
		for _, l := range scrape(t, prom) {
			if l == want {
				return
			}
		}
		t.Errorf("/metrics lacks %q", want)
	}
	for _, want := range []string{
		`hookbox_requests_total{outcome="accepted",source="demo"} 2`,
		`hookbox_requests_total{outcome="duplicate",source="demo"} 1`,
		`hookbox_requests_total{outcome="rejected",source="demo"} 1`,
		`hookbox_requests_total{outcome="not_found",source="_unknown"} 1`,
		`hookbox_ingest_seconds_count 3`,
		`hookbox_ingest_seconds_sum 0.006`,
		`hookbox_delivery_attempts_total{destination="sink",outcome="delivered"} 1`,
		`hookbox_delivery_attempts_total{destination="down",outcome="retrying"} 1`,
		`hookbox_delivery_seconds_sum{destination="sink"} 0.002`,
		`hookbox_sweeps_total{result="ok"} 1`,
		`hookbox_sweeps_total{result="failed"} 1`,
		`hookbox_storage_failing 1`,
		`hookbox_storage_failed_commits_total 1`,
		`hookbox_dead_deliveries 0`,
		`hookbox_route_filtered_total{route="demo-to-sink"} 1`,
		`hookbox_route_filter_errors_total{route="demo-to-sink"} 1`,
	} {
		has(want)
	}
	stats.Storage.Committed(nil)
	has(`hookbox_storage_failing 0`)
	has(`hookbox_storage_failed_commits_total 1`)
}
