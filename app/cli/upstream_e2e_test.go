package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// idSink is a destination that notes each delivery's event id (the
// body's id, else X-Hookbox-Event-Id) and its headers.
type idSink struct {
	*httptest.Server
	mu   sync.Mutex
	got  map[string]int
	head map[string]http.Header
}

func newIDSink(t *testing.T) *idSink {
	s := &idSink{got: map[string]int{}, head: map[string]http.Header{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Hookbox-Event-Id")
		io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.got[id]++
		s.head[id] = r.Header.Clone()
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *idSink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.got {
		out[k] = v
	}
	return out
}

const upstreamKey = "rk_test_e2e0upstream0key"

// Nothing lost upstream (issue 45), end to end with the built binary: a
// Stripe account holds two events hookbox never got behind a disabled
// endpoint, a GitHub hook is inactive with two failed deliveries; hookbox
// upstream check turns both on again, takes Stripe's events in as fetched
// and has GitHub send its deliveries again (signed, same
// X-GitHub-Delivery); every event reaches the destination exactly once,
// and a second check finds nothing more to do.
func TestUpstreamCheck_EndToEnd(t *testing.T) {
	now := time.Now()
	var (
		mu       sync.Mutex
		disabled = true
		active   = false
		hookbox  string // the server's address, once started
	)
	stripeEvent := func(id string, ago time.Duration) string {
		return fmt.Sprintf(`{"id":%q,"object":"event","created":%d,"type":"charge.succeeded","data":{"object":{"id":"ch_1"}}}`, id, now.Add(-ago).Unix())
	}
	events := []string{stripeEvent("evt_3", time.Hour), stripeEvent("evt_2", 2*time.Hour), stripeEvent("evt_1", 3*time.Hour)}
	stripe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+upstreamKey {
			w.WriteHeader(401)
			return
		}
		switch {
		case r.URL.Path == "/v1/webhook_endpoints/we_1":
			if r.Method == http.MethodPost {
				r.ParseForm()
				disabled = r.PostForm.Get("disabled") != "false"
			}
			status := map[bool]string{true: "disabled", false: "enabled"}[disabled]
			fmt.Fprintf(w, `{"id":"we_1","object":"webhook_endpoint","status":%q,"enabled_events":["*"]}`, status)
		case r.URL.Path == "/v1/events" && r.URL.Query().Get("starting_after") == "":
			fmt.Fprintf(w, `{"object":"list","data":[%s,%s],"has_more":true}`, events[0], events[1])
		case r.URL.Path == "/v1/events" && r.URL.Query().Get("starting_after") == "evt_2":
			fmt.Fprintf(w, `{"object":"list","data":[%s],"has_more":false}`, events[2])
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(stripe.Close)
	github := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+upstreamKey || r.Header.Get("X-GitHub-Api-Version") != "2022-11-28" {
			w.WriteHeader(401)
			return
		}
		const hook = "/repos/acme/shop/hooks/7"
		mu.Lock()
		defer mu.Unlock()
		at := now.Add(-time.Hour).UTC().Format(time.RFC3339)
		switch {
		case r.URL.Path == hook && r.Method == http.MethodPatch:
			active = true
			fallthrough
		case r.URL.Path == hook:
			fmt.Fprintf(w, `{"id":7,"active":%v}`, active)
		case r.URL.Path == hook+"/deliveries":
			fmt.Fprintf(w, `[{"id":2,"guid":"gh-lost-2","delivered_at":%q,"status_code":502,"event":"push"},{"id":1,"guid":"gh-lost-1","delivered_at":%q,"status_code":0,"event":"push"}]`, at, at)
		case strings.HasPrefix(r.URL.Path, hook+"/deliveries/") && r.Method == http.MethodPost:
			guid := map[string]string{"1": "gh-lost-1", "2": "gh-lost-2"}[strings.Split(r.URL.Path, "/")[7]]
			w.WriteHeader(http.StatusAccepted)
			body := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","after":%q}`, guid))
			go func() { // GitHub sends it again, signed, with the same delivery id
				req, _ := http.NewRequest("POST", "http://"+hookbox+"/in/gh", strings.NewReader(string(body)))
				for k, v := range githubHeaders(body, e2eSecret, guid) {
					req.Header.Set(k, v)
				}
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(github.Close)
	sink := newIDSink(t)
	dir := t.TempDir()
	config := writeConfig(t, dir, fmt.Sprintf(`
[source.upstream]
api_key = %[1]q
endpoint = "repos/acme/shop/hooks/7"
api_url = %[2]q
check = "@every 24h"
repair = true

[[source]]
name = "pay"
provider = "stripe"
secret = "whsec_e2e"

[source.upstream]
api_key = %[1]q
endpoint = "we_1"
api_url = %[3]q
check = "@every 24h"
repair = true

[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "sink"
url = %[4]q
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

[[route]]
source = "gh"
to = ["sink"]

[[route]]
source = "pay"
to = ["sink"]
`, upstreamKey, github.URL, stripe.URL, sink.URL))
	p := start(t, config)
	mu.Lock()
	hookbox = p.addr
	mu.Unlock()
	// evt_3 did arrive as a webhook.
	in := apptest.Signed(t, "stripe", "whsec_e2e", []byte(events[0]), "", "evt_3", "charge.succeeded", time.Now())
	h := map[string]string{}
	for _, f := range in.Header {
		h[f.Name] = f.Value
	}
	if r := post(t, p.addr, "pay", []byte(events[0]), h); r.code != 200 {
		t.Fatalf("evt_3: %d %v", r.code, r.body)
	}

	out := hookboxCLI(t, config, p.addr, "upstream", "check")
	for _, want := range []string{
		"gh (github repos/acme/shop/hooks/7): was disabled, turned on again; 2 deliveries looked at, 0 failed ones held already, 2 asked again\n",
		"pay (stripe we_1): was disabled, turned on again; 3 events looked at, 1 held already, 2 fetched\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hookbox upstream check printed:\n%s\nwant a line %q", out, want)
		}
	}
	want := map[string]int{"evt_1": 1, "evt_2": 1, "evt_3": 1, "gh-lost-1": 1, "gh-lost-2": 1}
	apptest.Until(t, 30*time.Second, func() error {
		if got := sink.counts(); len(got) != len(want) {
			return fmt.Errorf("the sink got %v; want %v", got, want)
		}
		return nil
	})
	again := hookboxCLI(t, config, p.addr, "upstream", "check", "-json", "pay")
	var res struct {
		Checks []struct {
			Fetched int    `json:"fetched"`
			Held    int    `json:"held"`
			Sub     string `json:"subscription"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(again), &res); err != nil || len(res.Checks) != 1 || res.Checks[0].Fetched != 0 || res.Checks[0].Held != 3 || res.Checks[0].Sub != "enabled" {
		t.Errorf("second check -json = %s (%v); want nothing fetched, 3 held", again, err)
	}
	if again := hookboxCLI(t, config, p.addr, "upstream", "check", "gh"); !strings.Contains(again, "2 failed ones held already, 0 asked again") {
		t.Errorf("second check of gh = %q; want nothing asked again", again)
	}
	// Everything delivered: each exactly once.
	apptest.Until(t, 30*time.Second, func() error {
		code, raw := apiDo(t, p.addr, "GET", "/events?status=delivered", nil)
		if code != 200 || strings.Count(string(raw), `"seq"`) != 5 {
			return fmt.Errorf("delivered events: %d %s", code, raw)
		}
		return nil
	})
	if got := sink.counts(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the sink got %v; want each once: %v", got, want)
	}
	for id, h := range sink.head {
		fetched := id == "evt_1" || id == "evt_2"
		if got := h.Get("X-Hookbox-Origin"); (got == "fetched") != fetched || h.Get("Webhook-Signature") == "" ||
			(fetched && h.Get("Stripe-Signature") != "") {
			t.Errorf("%s went with X-Hookbox-Origin %q, Webhook-Signature %q, Stripe-Signature %q", id, got, h.Get("Webhook-Signature"), h.Get("Stripe-Signature"))
		}
	}
	code, raw := apiDo(t, p.addr, "GET", "/sources/pay/upstream", nil)
	if code != 200 || !strings.Contains(string(raw), `"held":3`) || strings.Contains(string(raw), upstreamKey) {
		t.Errorf("GET /api/v1/sources/pay/upstream = %d %s", code, raw)
	}
	if log := p.logText(); strings.Contains(log, upstreamKey) || !strings.Contains(log, "upstream: event fetched and taken in") {
		t.Errorf("the log shows the key, or not what the check did:\n%s", log)
	}
}
