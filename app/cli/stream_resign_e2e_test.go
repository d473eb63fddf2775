package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
)

// repostSource is a source of TestStream_RepostRefused and how a genuine
// sender signs for it.
type repostSource struct {
	name, provider string
	settings       provider.Settings
	config         string // its [[source]] lines besides name and provider
	body           string
	// fresh sets a new delivery id on a re-post, as the red team did
	// (X-GitHub-Delivery): hookbox would otherwise answer it as a duplicate.
	fresh func(h http.Header)
}

// TestStream_RepostRefused: a viewer token reads genuine events of every
// kind of source from GET /api/v1/stream and from the event API, and posts
// each back to /in/SOURCE with a fresh delivery id, as a red team did with
// a GitHub push: every re-post is refused 401, because nothing a viewer
// reads carries what made the request genuine (the stream leaves the
// signature and credential headers out; the API masks them, the header an
// hmac source names whatever it is called included).
func TestStream_RepostRefused(t *testing.T) {
	dir := t.TempDir()
	sources := []repostSource{
		{name: "gh", provider: "github", settings: provider.Settings{Secrets: [][]byte{[]byte(e2eSecret)}}, body: `{"ref":"refs/heads/main"}`,
			fresh: func(h http.Header) { h.Set("X-GitHub-Delivery", "red-team-2") }},
		{name: "shop", provider: "shopify", config: `secret = "shpss_repost"`, body: `{"id":820982911946154508}`,
			fresh: func(h http.Header) {
				h.Set("X-Shopify-Webhook-Id", "red-team-2")
				h.Set("X-Shopify-Event-Id", "red-team-2")
			}},
		{name: "pay", provider: "stripe", config: `secret = "whsec_repost_stripe"`, body: `{"id":"evt_repost","type":"invoice.paid"}`},
		{name: "std", provider: "standard", config: `secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`, body: `{"type":"user.created"}`,
			fresh: func(h http.Header) { h.Set("Webhook-Id", "msg_red_team_2") }},
		{name: "erp", provider: "hmac", config: `secret = "erp-repost-secret"
signature_header = "X-Checksum"
signature_prefix = "sha256="
id = "{body.n}"`, body: `{"n":"erp-1"}`},
		{name: "ops", provider: "token", config: `secret = "ops-repost-token-123"`, body: `{"job":1}`,
			fresh: func(h http.Header) { h.Set("Idempotency-Key", "red-team-2") }},
	}
	var cfg strings.Builder
	cfg.WriteString("[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n")
	for i, s := range sources {
		if i > 0 { // gh is writeConfigServer's
			fmt.Fprintf(&cfg, "\n[[source]]\nname = %q\nprovider = %q\n%s\n", s.name, s.provider, s.config)
		}
	}
	secrets := map[string][]byte{"shop": []byte("shpss_repost"), "pay": []byte("whsec_repost_stripe"),
		"std": []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "erp": []byte("erp-repost-secret"), "ops": []byte("ops-repost-token-123")}
	for i := range sources {
		if sec := secrets[sources[i].name]; sec != nil {
			sources[i].settings.Secrets = [][]byte{sec}
		}
	}
	sources[4].settings.SignatureHeader, sources[4].settings.SignaturePrefix = "X-Checksum", "sha256="

	t.Setenv("E2E_STATUS_PASSWORD", "pw-e2e")
	config := writeConfigServer(t, dir, "", cfg.String())
	env := []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e"}
	t.Setenv("E2E_GH_SECRET", e2eSecret)
	out, errOut, code := hookbox(t, nil, "token", "create", "-name", "red-team", "-role", "viewer", "-config", config)
	if code != 0 || !viewerTokenLine.MatchString(out) {
		t.Fatalf("token create: %d\n%s%s", code, out, errOut)
	}
	token := viewerTokenLine.FindStringSubmatch(out)[1]
	p := startWith(t, config, env)
	base := "http://" + p.addr
	client := &http.Client{Timeout: 30 * time.Second}

	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the viewer's stream: %d", res.StatusCode)
	}
	msgs := make(chan string, 16)
	go func() {
		defer close(msgs)
		r := bufio.NewReaderSize(res.Body, 1<<20)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasPrefix(l, "data: ") {
				msgs <- strings.TrimPrefix(l, "data: ")
			}
		}
	}()
	next := func() string {
		select {
		case m := <-msgs:
			return m
		case <-time.After(time.Minute):
			t.Fatal("no stream message for a minute")
		}
		return ""
	}
	if m := next(); !strings.Contains(m, `"kind":"`+app.StreamNoticeReady+`"`) {
		t.Fatalf("first message %q; want ready", m)
	}

	post := func(source string, body []byte, h http.Header) int {
		t.Helper()
		r, _ := http.NewRequest(http.MethodPost, base+"/in/"+source, bytes.NewReader(body))
		r.Header = h
		ans, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, ans.Body)
		ans.Body.Close()
		return ans.StatusCode
	}
	for _, s := range sources {
		t.Run(s.name, func(t *testing.T) {
			body := []byte(s.body)
			genuine, err := provider.Sign(s.provider, s.settings, body, base+"/in/"+s.name, "genuine-1", "push", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if code := post(s.name, body, genuine.Clone()); code != http.StatusOK {
				t.Fatalf("the genuine request: %d", code)
			}
			// What made it genuine: the signature's (or token's) value.
			var proofs []string
			for k, v := range genuine {
				if provider.SignatureHeader(k) || k == "Webhook-Signature" || strings.EqualFold(k, s.settings.SignatureHeader) {
					proofs = append(proofs, v...)
				}
			}
			if len(proofs) == 0 {
				t.Fatalf("no signature in %v", genuine)
			}

			data := next()
			var ev app.StreamEvent
			var named struct {
				Provider string `json:"provider"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Source != s.name || json.Unmarshal([]byte(data), &named) != nil {
				t.Fatalf("stream event %+v (%v); want one of %s", ev, err, s.name)
			}
			if named.Provider != s.provider { // what hookbox listen signs in
				t.Errorf("the stream names provider %q; want %q", named.Provider, s.provider)
			}
			streamed := http.Header{}
			for _, f := range ev.Header {
				streamed.Add(f[0], f[1])
				for _, proof := range proofs {
					if strings.Contains(f[1], proof) {
						t.Errorf("the stream carries the signature in %s: %s", f[0], f[1])
					}
				}
			}

			// The event API, with the same viewer token.
			r, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/events/%d", base, ev.Seq), nil)
			r.Header.Set("Authorization", "Bearer "+token)
			ans, err := client.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			var detail struct {
				HeaderList []struct{ Name, Value string } `json:"header_list"`
			}
			err = json.NewDecoder(ans.Body).Decode(&detail)
			ans.Body.Close()
			if err != nil || ans.StatusCode != http.StatusOK || len(detail.HeaderList) == 0 {
				t.Fatalf("event API: %d %v %+v", ans.StatusCode, err, detail)
			}
			shown := http.Header{}
			for _, f := range detail.HeaderList {
				shown.Add(f.Name, f.Value)
				for _, proof := range proofs {
					if strings.Contains(f.Value, proof) {
						t.Errorf("the event API shows the signature in %s: %s", f.Name, f.Value)
					}
				}
			}

			for what, h := range map[string]http.Header{"the stream's headers": streamed, "the event API's headers": shown} {
				for k := range h {
					if k != textproto.CanonicalMIMEHeaderKey(k) {
						h[textproto.CanonicalMIMEHeaderKey(k)] = h[k]
						delete(h, k)
					}
				}
				h.Del("Content-Length")
				if s.fresh != nil {
					s.fresh(h)
				}
				if code := post(s.name, ev.Body, h); code != http.StatusUnauthorized {
					t.Errorf("a re-post of the event with %s and a fresh delivery id: %d; want 401", what, code)
				}
			}
		})
	}
}
