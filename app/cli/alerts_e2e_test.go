package cli_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/mail/mailtest"
	"hookbox/storage/postgres/pgtest"
)

// alertBody is one alert as the alert URL received it.
type alertBody struct {
	Kind        string `json:"kind"`
	Destination string `json:"destination"`
	Text        string `json:"text"`
	at          time.Time
}

// alertURL is a Slack-style alert URL on 127.0.0.1 that records the JSON
// bodies posted to it.
type alertURL struct {
	mu     sync.Mutex
	alerts []alertBody
	url    string
}

func newAlertURL(t *testing.T) *alertURL {
	a := &alertURL{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b alertBody
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("alert body %q: %v", raw, err)
		}
		b.at = time.Now()
		a.mu.Lock()
		a.alerts = append(a.alerts, b)
		a.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	a.url = srv.URL + "/slack"
	return a
}

func (a *alertURL) got() []alertBody {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]alertBody(nil), a.alerts...)
}

// failingSinceRE finds what the overview says of a failing destination:
// the time in its <time> element (UTC, which the browser shows in its zone).
var failingSinceRE = regexp.MustCompile(`failing since <time datetime="([^"]+)"`)

// Issue 29, end to end on both stores: a destination that answers 500
// until the test lets it answer 200, with failing_for = "5s". One WARN
// line at its first failure however many attempts fail; one
// destination_failing alert at the alert URL once it has failed for 5 s;
// a restart during the outage keeps "failing since" (the same time) on
// the page and in GET /api/v1/destinations, and sends neither the WARN
// line nor the alert again; once it answers, one INFO line and one
// destination_recovered alert. Each alert also arrives as one email at a
// real SMTP server on 127.0.0.1 (a local relay: smtp+insecure://; the
// TLS forms are tested in app/mail).
func TestEndToEnd_DestinationAlerts(t *testing.T) {
	t.Parallel() // mostly waiting for failing_for: overlaps the other waiting tests
	eachStore(t, testDestinationAlerts)
}

func testDestinationAlerts(t *testing.T, st storeCase) {
	var status, requests atomic.Int32
	status.Store(500)
	pos := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		requests.Add(1)
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(pos.Close)
	alerts := newAlertURL(t)
	relay := mailtest.Start(t, mailtest.Options{Mode: mailtest.Plain})
	env := []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e", "E2E_SMTP_URL=smtp+insecure://" + relay.Addr}
	dir := t.TempDir()
	config := writeConfigServer(t, dir, `public_url = "http://hooks.shop.example"`, fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[alerts]
url = %q
failing_for = "5s"
email_to = ["ops@shop.example"]
email_from = "hookbox <hookbox@shop.example>"
smtp_url_env = "E2E_SMTP_URL"

[[destination]]
name = "pos"
url = %q
timeout = "2s"
retry = ["1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s"]

[[route]]
source = "gh"
to = ["pos"]
`, alerts.url, pos.URL), st.config(2*time.Second))

	p := startWith(t, config, env)
	body := []byte(`{"order": 1004}`)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "order-1004")); r.code != 200 {
		t.Fatalf("post: %d %v", r.code, r.body)
	}
	waitLog(t, p, "destination failing", 10*time.Second) // the WARN line at the first failure
	warn := lineWith(p.logText(), "destination failing")
	for _, want := range []string{"level=WARN", "destination=pos", "status=500", "event=order-1004", "next_try="} {
		if !strings.Contains(warn, want) {
			t.Errorf("the first-failure line lacks %s: %s", want, warn)
		}
	}
	apptest.Until(t, 15*time.Second, func() error {
		if len(alerts.got()) == 0 {
			return errors.New("no destination_failing alert:\n" + p.logText())
		}
		return nil
	})
	failing := alerts.got()[0]
	if failing.Kind != "destination_failing" || failing.Destination != "pos" ||
		!strings.Contains(failing.Text, "http://hooks.shop.example/") || !strings.Contains(failing.Text, "HTTP 500") {
		t.Fatalf("first alert = %+v; want destination_failing of pos, with the last error and the page's URL", failing)
	}

	var dests struct {
		Destinations []struct {
			Name         string     `json:"name"`
			FailingSince *time.Time `json:"failing_since"`
		} `json:"destinations"`
	}
	failingSince := func(addr string) (time.Time, string) {
		t.Helper()
		if err := json.Unmarshal([]byte(adminGet(t, addr, "/api/v1/destinations")), &dests); err != nil {
			t.Fatal(err)
		}
		if len(dests.Destinations) != 1 || dests.Destinations[0].FailingSince == nil {
			t.Fatalf("/api/v1/destinations = %+v; want pos failing", dests)
		}
		m := failingSinceRE.FindStringSubmatch(adminGet(t, addr, "/?partial=1"))
		if m == nil {
			t.Fatalf("the overview does not say pos is failing since a time")
		}
		return *dests.Destinations[0].FailingSince, m[1]
	}
	since, shown := failingSince(p.addr)
	email := nextEmail(t, relay)
	if !strings.Contains(email, "Subject: hookbox: destination pos failing since") || !strings.Contains(email, "http://hooks.shop.example/") {
		t.Errorf("the failing alert's email lacks its subject or the page's URL:\n%s", email)
	}
	if d := failing.at.Sub(since); d < 5*time.Second {
		t.Errorf("the failing alert came %v after the first failure; want failing_for (5s) or more", d)
	}
	attempts := requests.Load()
	if attempts < 3 {
		t.Errorf("%d attempts before the alert; want several (retry 1s), to show one line per episode", attempts)
	}
	p.stop(t)
	firstLog := p.logText()

	p = startWith(t, config, env)
	since2, shown2 := failingSince(p.addr)
	if !since2.Equal(since) || shown2 != shown {
		t.Errorf("after the restart: failing since %v (%q); want %v (%q) as before", since2, shown2, since, shown)
	}
	status.Store(200)
	apptest.Until(t, 15*time.Second, func() error {
		if len(alerts.got()) < 2 || !strings.Contains(p.logText(), "destination answers again") {
			return fmt.Errorf("alerts %+v; no recovery alert or line:\n%s", alerts.got(), p.logText())
		}
		return nil
	})
	p.stop(t)
	secondLog := p.logText()

	got := alerts.got()
	if len(got) != 2 || got[1].Kind != "destination_recovered" || got[1].Destination != "pos" {
		t.Fatalf("alerts = %+v; want one destination_failing, then one destination_recovered", got)
	}
	if email := nextEmail(t, relay); !strings.Contains(email, "Subject: hookbox: destination pos delivers again") {
		t.Errorf("the recovered alert's email lacks its subject:\n%s", email)
	}
	select { // the server has stopped: every email it sent has arrived
	case m := <-relay.Messages:
		t.Errorf("a third email; want one per alert:\n%s", m.Data)
	default:
	}
	if n := strings.Count(firstLog+secondLog, "destination failing"); n != 1 {
		t.Errorf("%d first-failure lines for one episode (%d attempts); want 1:\n%s\n%s", n, requests.Load(), firstLog, secondLog)
	}
	if n := strings.Count(secondLog, "destination answers again"); n != 1 {
		t.Errorf("%d recovery lines; want 1:\n%s", n, secondLog)
	}
	info := lineWith(secondLog, "destination answers again")
	for _, want := range []string{"level=INFO", "destination=pos", "failed_for=", "waiting="} {
		if !strings.Contains(info, want) {
			t.Errorf("the recovery line lacks %s: %s", want, info)
		}
	}
	t.Logf("%d attempts; failing alert %v after the first failure; recovered alert %v after it",
		requests.Load(), got[0].at.Sub(since).Round(100*time.Millisecond), got[1].at.Sub(since).Round(100*time.Millisecond))
}

// nextEmail waits for the next message the relay takes, sent to the
// configured address, and returns it as received.
func nextEmail(t *testing.T, relay *mailtest.Server) string {
	t.Helper()
	select {
	case m := <-relay.Messages:
		if len(m.To) != 1 || m.To[0] != "ops@shop.example" || m.From != "hookbox@shop.example" {
			t.Errorf("email from %q to %q; want hookbox@shop.example to ops@shop.example", m.From, m.To)
		}
		return string(m.Data)
	case <-time.After(15 * time.Second):
		t.Fatal("no email at the SMTP server")
		return ""
	}
}

// lineWith returns the first line of log that contains s.
func lineWith(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// Two nodes on one PostgreSQL database, both sending to a destination
// that fails: both pages and APIs show the same stored "failing since";
// one destination_failing alert and one destination_recovered go out for
// the cluster, not one per node.
func TestCluster_DestinationAlertsOnce(t *testing.T) {
	t.Parallel() // mostly waiting for failing_for: overlaps the other waiting tests
	dbURL := pgtest.URL(t)
	var status atomic.Int32
	status.Store(500)
	pos := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(pos.Close)
	alerts := newAlertURL(t)
	config := writeConfig(t, t.TempDir(), fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[alerts]
url = %q
failing_for = "2s"

[[destination]]
name = "pos"
url = %q
timeout = "2s"
retry = ["300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms"]

[[route]]
source = "gh"
to = ["pos"]
`, alerts.url, pos.URL), storeCase{url: dbURL}.config(2*time.Second))
	nodes := []*proc{start(t, config), start(t, config)}
	for i := range 6 { // on both nodes: each has deliveries of its own to fail
		body := []byte(fmt.Sprintf(`{"order": %d}`, i))
		if r := post(t, nodes[i%2].addr, "gh", body, githubHeaders(body, e2eSecret, fmt.Sprint("order-", i))); r.code != 200 {
			t.Fatalf("post: %d %v", r.code, r.body)
		}
	}
	apptest.Until(t, 15*time.Second, func() error {
		if len(alerts.got()) == 0 {
			return errors.New("no destination_failing alert:\n" + nodes[0].logText() + nodes[1].logText())
		}
		return nil
	})
	since := func(p *proc) string {
		var dests struct {
			Destinations []struct {
				FailingSince *time.Time `json:"failing_since"`
			} `json:"destinations"`
		}
		if err := json.Unmarshal([]byte(adminGet(t, p.addr, "/api/v1/destinations")), &dests); err != nil {
			t.Fatal(err)
		}
		if len(dests.Destinations) != 1 || dests.Destinations[0].FailingSince == nil {
			return ""
		}
		return dests.Destinations[0].FailingSince.String()
	}
	if a, b := since(nodes[0]), since(nodes[1]); a == "" || a != b {
		t.Errorf("failing since on the two nodes: %q and %q; want the same stored time", a, b)
	}
	status.Store(200)
	apptest.Eventually(t, 15*time.Second, "two alerts and recovered on both nodes", func() bool {
		return len(alerts.got()) >= 2 && since(nodes[0]) == "" && since(nodes[1]) == ""
	})
	for _, p := range nodes {
		p.stop(t)
	}
	got := alerts.got()
	if len(got) != 2 || got[0].Kind != "destination_failing" || got[1].Kind != "destination_recovered" {
		t.Fatalf("alerts = %+v; want one destination_failing and one destination_recovered for the cluster", got)
	}
	if n := strings.Count(nodes[0].logText()+nodes[1].logText(), "destination failing"); n > 2 {
		t.Errorf("%d first-failure lines on two nodes; want at most one per node", n)
	}
}
