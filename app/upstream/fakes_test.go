package upstream_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStripe answers as Stripe's API documents it
// (https://docs.stripe.com/api/webhook_endpoints, /api/events): a webhook
// endpoint, its update by form (disabled=false), and the events list,
// newest first, {object: "list", data, has_more}, limit 1-100, created[gte],
// starting_after; errors as {"error": {"message", "type"}}.
type fakeStripe struct {
	*httptest.Server
	key string

	mu      sync.Mutex
	status  string   // the endpoint's
	enabled []string // its enabled_events
	events  []stripeEv
	calls   []string // method and path of each call
	updates int
	// fail, when set, answers every call with it.
	fail func(w http.ResponseWriter) bool
}

type stripeEv struct {
	ID      string
	Type    string
	Created time.Time
}

func (e stripeEv) body() []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2024-06-20","created":%d,"data":{"object":{"id":"ch_%s","object":"charge","amount":1200}},"livemode":false,"pending_webhooks":1,"type":%q}`,
		e.ID, e.Created.Unix(), e.ID[4:], e.Type)
}

func newFakeStripe(t *testing.T, key string) *fakeStripe {
	f := &fakeStripe{key: key, status: "enabled", enabled: []string{"*"}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func stripeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, msg)
}

func (f *fakeStripe) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	if f.fail != nil && f.fail(w) {
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		stripeError(w, 401, "Invalid API Key provided: rk_test_****")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v1/webhook_endpoints/we_1" && r.Method == http.MethodGet:
		f.writeEndpoint(w)
	case r.URL.Path == "/v1/webhook_endpoints/we_1" && r.Method == http.MethodPost:
		if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			stripeError(w, 400, "form expected")
			return
		}
		r.ParseForm()
		if v := r.PostForm.Get("disabled"); v == "false" {
			f.status = "enabled"
		} else if v == "true" {
			f.status = "disabled"
		}
		f.updates++
		f.writeEndpoint(w)
	case strings.HasPrefix(r.URL.Path, "/v1/webhook_endpoints/"):
		stripeError(w, 404, "No such webhook endpoint")
	case r.URL.Path == "/v1/events" && r.Method == http.MethodGet:
		f.listEvents(w, r.URL.Query())
	default:
		stripeError(w, 404, "Unrecognized request URL")
	}
}

func (f *fakeStripe) writeEndpoint(w http.ResponseWriter) {
	json.NewEncoder(w).Encode(map[string]any{"id": "we_1", "object": "webhook_endpoint", "status": f.status,
		"enabled_events": f.enabled, "url": "https://hooks.example/in/pay", "api_version": nil})
}

func (f *fakeStripe) listEvents(w http.ResponseWriter, q url.Values) {
	limit := 10
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			stripeError(w, 400, "Invalid integer: limit")
			return
		}
		limit = n
	}
	var gte int64
	if s := q.Get("created[gte]"); s != "" {
		gte, _ = strconv.ParseInt(s, 10, 64)
	}
	evs := slices.Clone(f.events)
	slices.SortFunc(evs, func(a, b stripeEv) int { return b.Created.Compare(a.Created) }) // newest first
	start := 0
	if after := q.Get("starting_after"); after != "" {
		start = -1
		for i, e := range evs {
			if e.ID == after {
				start = i + 1
			}
		}
		if start < 0 {
			stripeError(w, 400, "No such event: "+after)
			return
		}
	}
	var data []json.RawMessage
	more := false
	for _, e := range evs[start:] {
		if e.Created.Unix() < gte {
			continue
		}
		if len(data) == limit {
			more = true
			break
		}
		data = append(data, e.body())
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": "/v1/events", "has_more": more, "data": data})
}

// fakeGitHub answers as GitHub's REST API documents it
// (https://docs.github.com/en/rest/repos/webhooks): a repository hook,
// its update (PATCH {"active": true}), its deliveries newest first,
// per_page up to 100, paged by a Link header's cursor, and a redelivery
// (POST …/attempts, 202), which calls redeliver with the delivery.
type fakeGitHub struct {
	*httptest.Server
	token string

	mu         sync.Mutex
	active     bool
	deliveries []ghDelivery // newest first
	nextID     int64
	asked      []string // the guids asked again
	patches    int
	redeliver  func(d ghDelivery) int // the status hookbox answered the redelivery
}

type ghDelivery struct {
	ID          int64
	GUID        string
	At          time.Time
	Status      int
	Redelivery  bool
	Event, Body string
}

func newFakeGitHub(t *testing.T, token string) *fakeGitHub {
	f := &fakeGitHub{token: token, nextID: 1000}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

const ghHook = "/repos/acme/shop/hooks/7"

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if r.Header.Get("Authorization") != "Bearer "+f.token || r.Header.Get("X-GitHub-Api-Version") != "2022-11-28" {
		f.mu.Unlock()
		w.WriteHeader(401)
		fmt.Fprint(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	switch {
	case r.URL.Path == ghHook && r.Method == http.MethodGet:
		json.NewEncoder(w).Encode(map[string]any{"id": 7, "type": "Repository", "name": "web", "active": f.active,
			"events": []string{"push"}, "config": map[string]any{"url": "https://hooks.example/in/gh", "content_type": "json"}})
	case r.URL.Path == ghHook && r.Method == http.MethodPatch:
		var body struct{ Active *bool }
		if json.NewDecoder(r.Body).Decode(&body) != nil || body.Active == nil {
			w.WriteHeader(422)
			fmt.Fprint(w, `{"message":"Invalid request."}`)
			break
		}
		f.active = *body.Active
		f.patches++
		json.NewEncoder(w).Encode(map[string]any{"id": 7, "active": f.active})
	case r.URL.Path == ghHook+"/deliveries" && r.Method == http.MethodGet:
		f.listDeliveries(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, ghHook+"/deliveries/"):
		var id int64
		var tail string
		fmt.Sscanf(r.URL.Path[len(ghHook+"/deliveries/"):], "%d/%s", &id, &tail)
		i := slices.IndexFunc(f.deliveries, func(d ghDelivery) bool { return d.ID == id })
		if i < 0 || tail != "attempts" {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"message":"Not Found"}`)
			break
		}
		d := f.deliveries[i]
		f.asked = append(f.asked, d.GUID)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{}`)
		redeliver := f.redeliver
		f.mu.Unlock()
		status := redeliver(d) // GitHub sends it again, signed, with the same guid
		f.mu.Lock()
		f.nextID++
		f.deliveries = slices.Insert(f.deliveries, 0, ghDelivery{ID: f.nextID, GUID: d.GUID, At: time.Now(), Status: status, Redelivery: true, Event: d.Event, Body: d.Body})
	default:
		w.WriteHeader(404)
		fmt.Fprint(w, `{"message":"Not Found"}`)
	}
	f.mu.Unlock()
}

func (f *fakeGitHub) listDeliveries(w http.ResponseWriter, r *http.Request) {
	per := 30
	if s := r.URL.Query().Get("per_page"); s != "" {
		per, _ = strconv.Atoi(s)
		per = min(max(per, 1), 100)
	}
	start := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		start, _ = strconv.Atoi(c[1:]) // "v1_" would be GitHub's; any opaque text does
	}
	end := min(start+per, len(f.deliveries))
	if end < len(f.deliveries) {
		w.Header().Set("Link", fmt.Sprintf(`<%s%s/deliveries?per_page=%d&cursor=c%d>; rel="next"`, f.URL, ghHook, per, end))
	}
	out := []map[string]any{}
	for _, d := range f.deliveries[start:end] {
		status := "OK"
		if d.Status < 200 || d.Status > 299 {
			status = "Invalid HTTP Response: " + strconv.Itoa(d.Status)
		}
		out = append(out, map[string]any{"id": d.ID, "guid": d.GUID, "delivered_at": d.At.UTC().Format(time.RFC3339),
			"redelivery": d.Redelivery, "duration": 0.27, "status": status, "status_code": d.Status, "event": d.Event,
			"action": nil, "installation_id": nil, "repository_id": 42})
	}
	json.NewEncoder(w).Encode(out)
}
