package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
)

// sendWith posts a webhook signed for shop with extra header lines, each
// name with all its values in order (Content-Type replaces the signer's).
func (f *fixture) sendWith(id, body string, extra [][2]string) uint64 {
	f.t.Helper()
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("s3cret-shop")}}, []byte(body), "", id, "orders/create", time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(body))
	req.Header = h
	for _, kv := range extra {
		if kv[0] == "Content-Type" { // in place of the signer's application/json
			req.Header.Set(kv[0], kv[1])
			continue
		}
		req.Header.Add(kv[0], kv[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		f.t.Fatalf("send %s: %d", id, resp.StatusCode)
	}
	_, seq, _, _ := f.db.LookupID(context.Background(), "shop", id)
	return seq
}

type eventAnswer struct {
	Headers    map[string]string `json:"headers"`
	HeaderList []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"header_list"`
	Body       *string `json:"body"`
	BodyBase64 *string `json:"body_base64"`
}

// The event API gives the exact bytes: body when they are UTF-8,
// body_base64 when not (never U+FFFD in place of a byte), and every copy
// of a repeated header in header_list, while headers keeps one value per
// name as before.
func TestAPI_EventExactBytes(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	binary := "{\"id\": 1, \"n\": \"\xff\xfe\x00\"}"
	text := `{"id": 2, "note": "é a/b & <c>"}`
	repeated := [][2]string{{"X-Note", "first"}, {"X-Note", "second"}, {"X-Note", "third"}, {"Content-Type", "application/json; charset=utf-8"}}
	seqs := map[string]uint64{binary: f.sendWith("bin-1", binary, repeated), text: f.sendWith("text-1", text, nil)}
	for body, seq := range seqs {
		status, raw := f.get("/api/v1/events/" + itoa(seq))
		var a eventAnswer
		if err := json.Unmarshal(raw, &a); status != 200 || err != nil {
			t.Fatalf("event %d: %d %v %s", seq, status, err, raw)
		}
		if body == binary {
			if a.Body != nil || a.BodyBase64 == nil {
				t.Fatalf("body not UTF-8: body %v, body_base64 %v; want only body_base64", a.Body, a.BodyBase64)
			}
			if got, err := base64.StdEncoding.DecodeString(*a.BodyBase64); err != nil || string(got) != body {
				t.Errorf("body_base64 decodes to %q, %v; want %q", got, err, body)
			}
			var notes []string
			for _, h := range a.HeaderList {
				if h.Name == "X-Note" {
					notes = append(notes, h.Value)
				}
			}
			if strings.Join(notes, ",") != "first,second,third" {
				t.Errorf("header_list X-Note values %q; want first, second, third", notes)
			}
			if a.Headers["X-Note"] != "third" {
				t.Errorf("headers X-Note %q; want the last value, as before", a.Headers["X-Note"])
			}
			for _, h := range a.HeaderList {
				if strings.Contains(strings.ToLower(h.Name), "hmac") && !strings.Contains(h.Value, "masked") {
					t.Errorf("header_list shows %s unmasked: %q", h.Name, h.Value)
				}
			}
		} else if a.Body == nil || *a.Body != body || a.BodyBase64 != nil {
			t.Errorf("UTF-8 body: body %v, body_base64 %v; want body %q only", a.Body, a.BodyBase64, body)
		}
	}

	t.Run("Download", func(t *testing.T) {
		for body, seq := range seqs {
			req, _ := http.NewRequest("GET", f.base+"/api/v1/events/"+itoa(seq)+"/body", nil)
			req.SetBasicAuth("ops", "pw-1234")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(got) != body {
				t.Fatalf("download of %d: %d %q; want %q", seq, resp.StatusCode, got, body)
			}
			want := "application/json" // the signer's
			if body == binary {
				want = "application/json; charset=utf-8"
			}
			if ct := resp.Header.Get("Content-Type"); ct != want {
				t.Errorf("Content-Type %q; want %q", ct, want)
			}
			if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="event-`) {
				t.Errorf("Content-Disposition %q", cd)
			}
			if v := resp.Header.Get("X-Content-Type-Options"); v != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", v)
			}
		}
	})
	t.Run("DownloadNeedsLogin", func(t *testing.T) {
		resp, err := http.Get(f.base + "/api/v1/events/" + itoa(seqs[text]) + "/body")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("without a login: %d; want 401", resp.StatusCode)
		}
	})
	t.Run("StoredContentTypeNotAMediaType", func(t *testing.T) {
		seq := f.sendWith("odd-ct", "<b>x</b>", [][2]string{{"Content-Type", "text/html; <script>"}})
		req, _ := http.NewRequest("GET", f.base+"/api/v1/events/"+itoa(seq)+"/body", nil)
		req.SetBasicAuth("ops", "pw-1234")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("Content-Type %q; want application/octet-stream", ct)
		}
	})
	t.Run("PageLinksTheDownload", func(t *testing.T) {
		status, page := f.get("/events/" + itoa(seqs[binary]))
		if link := `href="/api/v1/events/` + itoa(seqs[binary]) + `/body"`; status != 200 || !strings.Contains(string(page), link) {
			t.Fatalf("event page: %d, no %s", status, link)
		}
	})
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// The event page shows the latest 50 attempts of a delivery, and says how
// many it leaves out: replays add attempts without end.
func TestUI_EventPageAttemptsBounded(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	seq := f.sendWith("many-attempts", `{"id": 7}`, nil)
	ds, err := f.db.EventDeliveries(context.Background(), seq)
	if err != nil || len(ds) == 0 {
		t.Fatalf("deliveries: %v %v", ds, err)
	}
	for i := range 60 {
		a := &app.Attempt{Start: f.now.Add(time.Duration(i) * time.Second), Duration: time.Millisecond, Status: 500, Error: "HTTP 500",
			Response: []byte(fmt.Sprintf("answer-%03d", i))}
		if err := f.db.RecordAttempt(context.Background(), ds[0].ID, a, app.Pending, f.now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	status, page := f.get("/events/" + itoa(seq))
	if status != 200 {
		t.Fatalf("event page: %d", status)
	}
	if n := strings.Count(string(page), "answer-0"); n != 50 {
		t.Errorf("%d attempts shown; want the latest 50", n)
	}
	if strings.Contains(string(page), "answer-009") || !strings.Contains(string(page), "answer-059") {
		t.Error("not the latest attempts shown")
	}
	if !strings.Contains(string(page), "10 earlier attempts are not shown") {
		t.Error("the page does not say 10 attempts are left out")
	}
}
