package cli_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"hookbox/app"
)

// outboundSecret is the destinations' Standard Webhooks secret in these
// tests.
const outboundSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// received is one request a headerSink got: its header as net/http parsed
// it (one key per name, every copy a value) and its body.
type received struct {
	header http.Header
	body   []byte
}

// headerSink is a destination on 127.0.0.1 that answers 200 and keeps
// every request it got, telling each on got.
type headerSink struct {
	url string
	got chan received
	mu  sync.Mutex
	all []received
}

func newHeaderSink(t *testing.T) *headerSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &headerSink{url: "http://" + ln.Addr().String() + "/hook", got: make(chan received, 16)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rc := received{header: r.Header.Clone(), body: body}
		s.mu.Lock()
		s.all = append(s.all, rc)
		s.mu.Unlock()
		select {
		case s.got <- rc:
		default: // nobody waits for more than 16
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// next waits for the sink's next request, a few seconds at most.
func (s *headerSink) next(t *testing.T, what string) received {
	t.Helper()
	select {
	case r := <-s.got:
		return r
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: no delivery within 15 s", what)
	}
	return received{}
}

// nextOf waits for the sink's next delivery of event id (X-Hookbox-Event-Id),
// passing over others (what a failure elsewhere let through).
func (s *headerSink) nextOf(t *testing.T, what, id string) received {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case r := <-s.got:
			if r.header.Get("X-Hookbox-Event-Id") == id {
				return r
			}
			t.Logf("%s: passed over a delivery of %q", what, r.header.Get("X-Hookbox-Event-Id"))
		case <-deadline:
			t.Fatalf("%s: no delivery of %s within 15 s", what, id)
		}
	}
}

// outboundAuth is the [status] login of these tests (user admin,
// password_env E2E_STATUS_PASSWORD as start sets it).
var outboundAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:pw-e2e"))

// apiJSON GETs path from the API of the hookbox at addr and decodes its
// answer into v.
func apiJSON(t *testing.T, addr, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.Header.Set("Authorization", outboundAuth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, raw)
	}
}

// storedEvent is an event as /api/v1/events lists it.
type storedEvent struct {
	Seq uint64 `json:"seq"`
	ID  string `json:"id"`
}

// storedEvents lists the events of source hookbox at addr holds.
func storedEvents(t *testing.T, addr, source string) []storedEvent {
	t.Helper()
	var list struct {
		Items []storedEvent `json:"items"`
	}
	apiJSON(t, addr, "/api/v1/events?source="+source, &list)
	return list.Items
}

// verifyStandard checks that h signs body as Standard Webhooks says, with
// outboundSecret, under the names of prefix ("webhook-" or "svix-"), as a
// receiver with the standard-webhooks library would.
func verifyStandard(h http.Header, body []byte, prefix string) error {
	wh, err := standardwebhooks.NewWebhook(outboundSecret)
	if err != nil {
		return err
	}
	as := http.Header{}
	for _, n := range []string{"id", "timestamp", "signature"} {
		as["Webhook-"+strings.ToUpper(n[:1])+n[1:]] = h.Values(prefix + n)
	}
	return wh.Verify(body, as)
}

// Finding 4 of issue 24, on the real binary: a genuine GitHub webhook
// whose sender added copies, in mixed case, of every header name hookbox
// sets (X-Hookbox-*, webhook-*, svix-*, Idempotency-Key, User-Agent)
// reaches each destination with one copy of each, hookbox's; the
// destination verifies hookbox's Standard Webhooks signature with its
// secret (also under svix-* names with signature_headers = "svix", and
// there only); a destination's configured header replaces every copy of
// the sender's. The sender's other repeated header goes out in both
// copies, and the API's header_list shows every copy hookbox stored, in
// bbolt and in PostgreSQL.
func TestOutbound_OwnHeadersOnce(t *testing.T) {
	t.Parallel() // mostly waits for the deliveries
	eachStore(t, testOwnHeadersOnce)
}

func testOwnHeadersOnce(t *testing.T, st storeCase) {
	plain, svix := newHeaderSink(t), newHeaderSink(t)
	config := writeConfig(t, t.TempDir(), fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "plain"
url = %q
secret = %q
timeout = "2s"
retry = []
headers = { "X-Api-Key" = "dest-key" }

[[destination]]
name = "svix"
url = %q
secret = %q
timeout = "2s"
retry = []
signature_headers = "svix"

[[route]]
source = "gh"
to = ["plain", "svix"]
`, plain.url, outboundSecret, svix.url, outboundSecret), st.config(2*time.Second))
	p := start(t, config)

	const id = "own-headers-1"
	body := []byte(`{"ref":"refs/heads/main","note":"a/b & <c>"}`)
	var wire strings.Builder
	for k, v := range githubHeaders(body, e2eSecret, id) {
		fmt.Fprintf(&wire, "%s: %s\r\n", k, v)
	}
	// Two copies of each, the second in another case, as a sender (or a
	// proxy on its way) can write them.
	forged := [][2]string{
		{"X-Hookbox-Source", "stripe"}, {"x-hookbox-source", "stripe"},
		{"X-Hookbox-Topic", "charge.refunded"}, {"X-HOOKBOX-TOPIC", "charge.refunded"},
		{"X-Hookbox-Event-Id", "evt_forged"}, {"x-hookbox-event-id", "evt_forged"},
		{"X-Hookbox-Attempt", "9"}, {"x-Hookbox-attempt", "9"},
		{"webhook-id", "msg_forged"}, {"Webhook-Id", "msg_forged"},
		{"webhook-timestamp", "1700000000"}, {"WEBHOOK-TIMESTAMP", "1700000000"},
		{"webhook-signature", "v1,Zm9yZ2Vk"}, {"Webhook-Signature", "v1,Zm9yZ2Vk"},
		{"svix-id", "msg_forged"}, {"Svix-Id", "msg_forged"},
		{"svix-timestamp", "1700000000"}, {"SVIX-TIMESTAMP", "1700000000"},
		{"svix-signature", "v1,Zm9yZ2Vk"}, {"Svix-Signature", "v1,Zm9yZ2Vk"},
		{"Idempotency-Key", "forged-key"}, {"idempotency-key", "forged-key"},
		{"User-Agent", "GitHub-Hookshot/forged"}, {"user-agent", "GitHub-Hookshot/forged"},
		// Names in hookbox's own namespaces that it does not set: none of
		// them may go out either.
		{"X-Hookbox-Verified", "forged-true"}, {"x-hookbox-verified", "forged-true"},
		{"Webhook-Version", "forged-v2"}, {"svix-version", "forged-v2"},
		// The same names with underscores: CGI-style frameworks (Rack,
		// WSGI servers, PHP behind some servers) read X_Hookbox_Source and
		// X-Hookbox-Source as one variable, HTTP_X_HOOKBOX_SOURCE.
		{"X_Hookbox_Source", "stripe"}, {"x_hookbox_event_id", "evt_forged"},
		{"Webhook_Signature", "v1,Zm9yZ2Vk"}, {"svix_id", "msg_forged"},
		{"Idempotency_Key", "forged-key"}, {"User_Agent", "GitHub-Hookshot/forged"},
		// plain's configured header: its value replaces the sender's
		// there; svix has none, so the sender's go out to it.
		{"X-Api-Key", "sender-key"}, {"x-api-key", "sender-key"}, {"X_Api_Key", "sender-key"},
		{"X-Custom", "a"}, {"x-custom", "b"},
	}
	for _, f := range forged {
		fmt.Fprintf(&wire, "%s: %s\r\n", f[0], f[1])
	}
	resp, answer, _ := rawExchange(t, p.addr, fmt.Sprintf("POST /in/gh HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n%s",
		p.addr, len(body), wire.String(), body))
	if resp.StatusCode != 200 || !strings.Contains(answer, `"accepted"`) {
		t.Fatalf("POST the webhook: %d %s", resp.StatusCode, answer)
	}

	for _, dc := range []struct {
		name string
		sink *headerSink
		svix bool
	}{{"plain", plain, false}, {"svix", svix, true}} {
		t.Run(dc.name, func(t *testing.T) {
			r := dc.sink.next(t, dc.name)
			if !bytes.Equal(r.body, body) {
				t.Errorf("body %q; want the sender's bytes %q", r.body, body)
			}
			msgID := app.MessageID("gh", id, dc.name)
			want := map[string]string{
				"X-Hookbox-Source": "gh", "X-Hookbox-Topic": "push", "X-Hookbox-Event-Id": id, "X-Hookbox-Attempt": "1",
				"Webhook-Id": msgID, "Idempotency-Key": msgID,
				"Webhook-Timestamp": r.header.Get("Webhook-Timestamp"), "Webhook-Signature": r.header.Get("Webhook-Signature"),
			}
			if dc.svix {
				want["Svix-Id"], want["Svix-Timestamp"], want["Svix-Signature"] = msgID, want["Webhook-Timestamp"], want["Webhook-Signature"]
				if got := r.header.Values("X-Api-Key"); strings.Join(got, ",") != "sender-key,sender-key" || r.header.Get("X_api_key") != "sender-key" {
					t.Errorf("X-Api-Key %q, X_api_key %q; want the sender's, forwarded to a destination that sets neither", got, r.header.Values("X_api_key"))
				}
			} else {
				want["X-Api-Key"] = "dest-key"
			}
			for name, v := range want {
				if got := r.header.Values(name); len(got) != 1 || got[0] != v {
					t.Errorf("%s: %q; want hookbox's %q only", name, got, v)
				}
			}
			if got := r.header.Values("User-Agent"); len(got) != 1 || !strings.HasPrefix(got[0], "hookbox/") {
				t.Errorf("User-Agent: %q; want hookbox's only", got)
			}
			ts, err := strconv.ParseInt(r.header.Get("Webhook-Timestamp"), 10, 64)
			if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
				t.Errorf("Webhook-Timestamp %q; want hookbox's, now", r.header.Get("Webhook-Timestamp"))
			}
			for name, vs := range r.header {
				for _, v := range vs {
					if strings.Contains(v, "forged") || v == "stripe" || v == "1700000000" {
						t.Errorf("%s: %q went out: the sender's copy", name, v)
					}
				}
				if cgi := http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-")); cgi != name && (want[cgi] != "" || cgi == "User-Agent") {
					t.Errorf("%s: %q went out beside hookbox's %s: one variable to a CGI-style framework", name, vs, cgi)
				}
				if (strings.HasPrefix(name, "X-Hookbox-") || strings.HasPrefix(name, "Webhook-") || strings.HasPrefix(name, "Svix-")) && want[name] == "" {
					t.Errorf("%s: %q went out; want only the names hookbox sets in its namespaces", name, vs)
				}
			}
			if got := r.header.Values("X-Custom"); strings.Join(got, ",") != "a,b" {
				t.Errorf("X-Custom: %q; want the sender's two copies, in order", got)
			}
			if got := r.header.Get("X-Hub-Signature-256"); got != githubHeaders(body, e2eSecret, id)["X-Hub-Signature-256"] {
				t.Errorf("X-Hub-Signature-256 %q; want GitHub's, forwarded (forward_signatures defaults to true)", got)
			}
			if err := verifyStandard(r.header, r.body, "webhook-"); err != nil {
				t.Errorf("webhook-* headers do not verify with the destination's secret: %v", err)
			}
			if dc.svix {
				if err := verifyStandard(r.header, r.body, "svix-"); err != nil {
					t.Errorf("svix-* headers do not verify with the destination's secret: %v", err)
				}
			}
		})
	}

	t.Run("API", func(t *testing.T) {
		events := storedEvents(t, p.addr, "gh")
		if len(events) != 1 || events[0].ID != id {
			t.Fatalf("events %+v; want %s only", events, id)
		}
		var detail struct {
			HeaderList []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"header_list"`
		}
		apiJSON(t, p.addr, fmt.Sprintf("/api/v1/events/%d", events[0].Seq), &detail)
		copies := map[string][]string{}
		for _, h := range detail.HeaderList {
			n := http.CanonicalHeaderKey(h.Name)
			copies[n] = append(copies[n], h.Value)
		}
		sent := map[string]int{}
		for _, f := range forged {
			sent[http.CanonicalHeaderKey(f[0])]++
		}
		sent["User-Agent"] = 1 // the edge's HTTP parser (fasthttp) keeps the last User-Agent only
		for n, want := range sent {
			if got := copies[n]; len(got) != want {
				t.Errorf("header_list %s: %q; want %d copies", n, got, want)
			}
		}
		if got := strings.Join(copies["X-Custom"], ","); got != "a,b" {
			t.Errorf("header_list X-Custom: %q; want a,b", got)
		}
		if got := strings.Join(copies["X-Hookbox-Source"], ","); got != "stripe,stripe" {
			t.Errorf("header_list X-Hookbox-Source: %q; want the sender's two copies as stored", got)
		}
	})
	p.stop(t)
}

// repost posts r's body and header to /in/{source} of the hookbox at
// addr, as a destination that got them would post them back, with the
// headers in set replacing its own; it returns the answer's code and body.
func repost(t *testing.T, addr, source string, r received, set map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/in/"+source, bytes.NewReader(r.body))
	req.Header = r.header.Clone()
	for k, v := range set {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// shopifyHeaders are the headers of a Shopify webhook of body with event
// id, as Shopify sends them (both spellings, signed with secret).
func shopifyHeaders(body []byte, secret, id string) map[string]string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	sig := base64.StdEncoding.EncodeToString(m.Sum(nil))
	return map[string]string{
		"Content-Type":          "application/json",
		"X-Shopify-Topic":       "orders/create",
		"X-Shopify-Event-Id":    id,
		"X-Shopify-Webhook-Id":  id + "-w",
		"X-Shopify-Hmac-Sha256": sig,
		"shopify-topic":         "orders/create",
		"shopify-event-id":      id,
		"shopify-webhook-id":    id + "-w",
		"shopify-hmac-sha256":   sig,
	}
}

// Finding 5 of issue 24, on the real binary, for GitHub and Shopify,
// whose event ids are outside their signatures. By default a destination
// gets the provider's signature headers along (an app that checks them
// keeps working): it posts the body back with them under a new event id,
// and hookbox takes it as a genuine new event and delivers it again, to
// every destination. A destination with forward_signatures = false gets no
// provider signature header, so what it can post back is refused (401) and
// nothing is stored; it verifies hookbox's own signature instead.
func TestOutbound_ReinjectedEvent(t *testing.T) {
	t.Parallel() // mostly waits for the deliveries
	const shopSecret = "shpss_e2e_reinject_0123456789"
	appSink, partner := newHeaderSink(t), newHeaderSink(t)
	config := writeConfig(t, t.TempDir(), fmt.Sprintf(`
[[source]]
name = "shop"
provider = "shopify"
secret = %q

[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "app"
url = %q
secret = %q
retry = []

[[destination]]
name = "partner"
url = %q
secret = %q
retry = []
forward_signatures = false

[[route]]
source = "gh"
to = ["app", "partner"]

[[route]]
source = "shop"
to = ["app", "partner"]
`, shopSecret, appSink.url, outboundSecret, partner.url, outboundSecret))
	p := start(t, config)

	for _, pc := range []struct {
		source string
		// header is the genuine request's header for event id.
		header func(body []byte, id string) map[string]string
		// sigs are the signature headers it carries; ids, its event id
		// headers, which the re-injection sets to a new id.
		sigs, ids []string
	}{
		{"gh", func(body []byte, id string) map[string]string {
			h := githubHeaders(body, e2eSecret, id)
			h["X-Hub-Signature"] = "sha1=0123456789abcdef0123456789abcdef01234567" // GitHub sends both; only the name matters here
			return h
		}, []string{"X-Hub-Signature-256", "X-Hub-Signature"}, []string{"X-GitHub-Delivery"}},
		{"shop", func(body []byte, id string) map[string]string { return shopifyHeaders(body, shopSecret, id) },
			[]string{"X-Shopify-Hmac-Sha256", "Shopify-Hmac-Sha256"}, []string{"X-Shopify-Event-Id", "shopify-event-id"}},
	} {
		t.Run(pc.source, func(t *testing.T) {
			id := pc.source + "-reinject-1"
			newIDs := func(id string) map[string]string {
				m := map[string]string{}
				for _, n := range pc.ids {
					m[n] = id
				}
				return m
			}
			body := []byte(`{"id":820982911946154508,"note":"a/b & <c>","source":"` + pc.source + `"}`)
			genuine := pc.header(body, id)
			if r := post(t, p.addr, pc.source, body, genuine); r.code != 200 || r.body["status"] != "accepted" {
				t.Fatalf("POST the genuine webhook: %d %v", r.code, r.body)
			}
			fromApp, fromPartner := appSink.nextOf(t, "app", id), partner.nextOf(t, "partner", id)

			t.Run("Default", func(t *testing.T) {
				for _, n := range pc.sigs {
					if got := fromApp.header.Values(n); len(got) != 1 || got[0] != genuine[n] && got[0] != genuine[strings.ToLower(n)] {
						t.Fatalf("app got %s %q; want the provider's, forwarded", n, got)
					}
				}
				code, answer := repost(t, p.addr, pc.source, fromApp, newIDs(id+"-again"))
				if code != 200 || !strings.Contains(answer, `"accepted"`) {
					t.Fatalf("the app's copy posted back under a new event id: %d %s; want it accepted (the default forwards the signature)", code, answer)
				}
				for _, s := range []struct {
					name string
					sink *headerSink
				}{{"app", appSink}, {"partner", partner}} {
					if r := s.sink.nextOf(t, s.name+", the re-injected event", id+"-again"); !bytes.Equal(r.body, body) {
						t.Errorf("%s got the re-injected event with body %q; want the same body", s.name, r.body)
					}
				}
			})

			t.Run("ForwardSignaturesFalse", func(t *testing.T) {
				for _, n := range append(pc.sigs, "Authorization") {
					if got := fromPartner.header.Values(n); len(got) != 0 {
						t.Errorf("partner got %s: %q", n, got)
					}
				}
				for _, n := range pc.ids {
					if got := fromPartner.header.Get(n); got != id {
						t.Errorf("partner got %s %q; want the sender's other headers, %s among them", n, got, id)
					}
				}
				if err := verifyStandard(fromPartner.header, fromPartner.body, "webhook-"); err != nil {
					t.Errorf("partner: hookbox's signature does not verify with its secret: %v", err)
				}
				if code, answer := repost(t, p.addr, pc.source, fromPartner, newIDs(id+"-partner")); code != http.StatusUnauthorized {
					t.Errorf("the partner's copy posted back under a new event id: %d %s; want 401", code, answer)
				}
				// hookbox's signature, made with the destination's
				// secret, is no credential at any source either.
				own := strings.TrimPrefix(fromPartner.header.Get("Webhook-Signature"), "v1,")
				set := newIDs(id + "-partner-2")
				for _, n := range pc.sigs {
					set[n] = own
				}
				if pc.source == "gh" {
					set["X-Hub-Signature-256"] = "sha256=" + own
				}
				if code, answer := repost(t, p.addr, pc.source, fromPartner, set); code != http.StatusUnauthorized {
					t.Errorf("the partner's copy with hookbox's signature in the provider's header: %d %s; want 401", code, answer)
				}
			})

			// Stored: the genuine event and the app's re-injection, nothing
			// of the partner's.
			var ids []string
			for _, e := range storedEvents(t, p.addr, pc.source) {
				ids = append(ids, e.ID)
			}
			slices.Sort(ids)
			if got, want := strings.Join(ids, " "), id+" "+id+"-again"; got != want {
				t.Errorf("stored events %q; want %s", got, want)
			}
		})
	}

	// The partner's four attempts are counted as rejected, and it got the
	// two genuine events and the two re-injected ones, nothing more.
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/metrics", nil)
	req.Header.Set("Authorization", outboundAuth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, source := range []string{"gh", "shop"} {
		if want := `hookbox_requests_total{outcome="rejected",source="` + source + `"} 2`; !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	p.stop(t)
	partner.mu.Lock()
	defer partner.mu.Unlock()
	if n := len(partner.all); n != 4 {
		t.Errorf("partner got %d deliveries; want 4 (each genuine event and the app's re-injection of it)", n)
	}
}
