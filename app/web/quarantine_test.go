package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// GET /api/v1/sources/{name}/quarantine lists what the source refused for
// its signature, the signature masked and the body cut short; recheck
// leaves what the secret still refuses; DELETE clears it.
func TestAPI_Quarantine(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	body := `{"forged": "` + strings.Repeat("x", 5000) + `"}`
	req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(body))
	req.Header.Set("X-Shopify-Hmac-Sha256", "c2VjcmV0LWxvb2tpbmctc2lnbmF0dXJlLTMyYnl0ZXM=")
	req.Header.Set("X-Shopify-Topic", "orders/create")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("forged request: %v, %v; want 401", resp, err)
	}
	resp.Body.Close()
	type list struct {
		Requests int `json:"requests"`
		Entries  []struct {
			Reason  string `json:"reason"`
			Headers []struct {
				Name, Value string
				Masked      bool
			} `json:"headers"`
			Body          string `json:"body"`
			BodyBytes     int    `json:"body_bytes"`
			BodyTruncated bool   `json:"body_truncated"`
		} `json:"entries"`
	}
	var l list
	apptest.Eventually(t, 10*time.Second, "the forged request listed", func() bool {
		status, b := f.get("/api/v1/sources/shop/quarantine")
		if status != 200 {
			t.Fatalf("list: %d %s", status, b)
		}
		l = list{}
		return json.Unmarshal(b, &l) == nil && l.Requests == 1 && len(l.Entries) == 1
	})
	e := l.Entries[0]
	if e.Reason != "signature does not match" || e.BodyBytes != len(body) || !e.BodyTruncated || len(e.Body) != 4096 {
		t.Errorf("entry: reason %q, %d bytes, truncated %v, shown %d; want the reason, %d bytes cut at 4096", e.Reason, e.BodyBytes, e.BodyTruncated, len(e.Body), len(body))
	}
	masked := false
	for _, h := range e.Headers {
		if strings.EqualFold(h.Name, "X-Shopify-Hmac-Sha256") {
			masked = h.Masked && !strings.Contains(h.Value, "c2VjcmV0")
		}
	}
	if !masked {
		t.Errorf("the signature header is not masked: %+v", e.Headers)
	}
	status, b := f.postJSON("/api/v1/sources/shop/quarantine/recheck", "")
	if status != 200 || !strings.Contains(string(b), `"remaining":1`) {
		t.Errorf("recheck: %d %s; want the forged one remaining", status, b)
	}
	dreq, _ := http.NewRequest("DELETE", f.base+"/api/v1/sources/shop/quarantine", nil)
	dreq.SetBasicAuth("ops", "pw-1234")
	dresp, err := http.DefaultClient.Do(dreq)
	if err != nil || dresp.StatusCode != 200 {
		t.Fatalf("clear: %v, %v", dresp, err)
	}
	dresp.Body.Close()
	if n, _, _ := f.db.QuarantineUsage(context.Background(), "shop"); n != 0 {
		t.Errorf("after clear: %d; want 0", n)
	}
	if status, _ := f.get("/api/v1/sources/nope/quarantine"); status != 404 {
		t.Errorf("unknown source: %d; want 404", status)
	}
}

// The Quarantine page (operators) shows each source's kept requests, the
// signature masked; a viewer gets neither the page nor its link.
func TestPage_Quarantine(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	sig := "c2VjcmV0LWxvb2tpbmctc2lnbmF0dXJlLTMyYnl0ZXM="
	req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(`{"forged": "<b>page</b>"}`))
	req.Header.Set("X-Shopify-Hmac-Sha256", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("forged request: %v, %v; want 401", resp, err)
	}
	resp.Body.Close()
	var page string
	apptest.Eventually(t, 10*time.Second, "the page lists the forged request", func() bool {
		status, b := f.get("/quarantine")
		if status != 200 {
			t.Fatalf("page: %d %s", status, b)
		}
		page = string(b)
		return strings.Contains(page, "1 request kept")
	})
	for _, want := range []string{`data-source="shop"`, "signature does not match", "X-Shopify-Hmac-Sha256", "masked", `&lt;b&gt;page&lt;/b&gt;`, `href="/quarantine"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, sig) {
		t.Error("the page shows the signature")
	}
}
