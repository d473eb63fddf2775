package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hookbox/app/config"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

const testConfig = `
[server]
max_body_bytes = 1024
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
`

func newServer(t *testing.T, health web.Health) (*web.Server, *bboltstore.DB) {
	t.Helper()
	cfg, err := config.Parse("t.toml", testConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if health == nil {
		health = db.Ping
	}
	return web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: health}), db
}

// request sends one request through the Fiber app and decodes the JSON answer.
func request(t *testing.T, s *web.Server, method, path string, body []byte, h http.Header) (int, map[string]string) {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := s.App().Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: answer %d is not JSON: %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, m
}

func signShop(t *testing.T, body []byte, id string) http.Header {
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("s3cret-shop")}}, body, "", id, "orders/create", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestServer_Inbound(t *testing.T) {
	s, _ := newServer(t, nil)
	body := []byte(`{"id": 1}`)
	for _, tt := range []struct {
		name, method, path string
		body               []byte
		header             http.Header
		code               int
		status, msg        string
	}{
		{"Accepted", "POST", "/in/shop", body, signShop(t, body, "w1"), 200, "accepted", ""},
		{"Duplicate", "POST", "/in/shop", body, signShop(t, body, "w1"), 200, "duplicate", ""},
		{"BadSignature", "POST", "/in/shop", []byte(`{"id": 2}`), signShop(t, body, "w2"), 401, "error", "signature does not match"},
		{"UnknownSource", "POST", "/in/nope", body, signShop(t, body, "w3"), 404, "error", "unknown source"},
		{"WrongMethod", "GET", "/in/shop", nil, nil, 405, "error", "method not allowed"},
		{"UnknownRoute", "GET", "/nowhere", nil, nil, 404, "error", "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, m := request(t, s, tt.method, tt.path, tt.body, tt.header)
			if code != tt.code || m["status"] != tt.status || !strings.Contains(m["error"], tt.msg) {
				t.Fatalf("answer = %d %v; want %d %q %q", code, m, tt.code, tt.status, tt.msg)
			}
		})
	}
}

func TestServer_Unavailable(t *testing.T) {
	s, db := newServer(t, nil)
	db.Close()
	body := []byte(`{"id": 1}`)
	code, m := request(t, s, "POST", "/in/shop", body, signShop(t, body, "w1"))
	if code != 503 || m["error"] != "storage unavailable, retry later" {
		t.Fatalf("answer = %d %v; want 503", code, m)
	}
	if strings.Contains(m["error"], "closed") {
		t.Fatalf("internal error text leaked: %v", m)
	}
}

func TestServer_Health(t *testing.T) {
	s, _ := newServer(t, nil)
	if code, m := request(t, s, "GET", "/healthz", nil, nil); code != 200 || m["status"] != "ok" {
		t.Fatalf("healthz = %d %v", code, m)
	}
	s, _ = newServer(t, func(context.Context) error { return errors.New("disk on fire") })
	code, m := request(t, s, "GET", "/healthz", nil, nil)
	if code != 503 || m["status"] != "unavailable" {
		t.Fatalf("healthz = %d %v; want 503", code, m)
	}
}

// The body limit is enforced while reading, so it is tested over a real
// connection rather than through app.Test.
func TestServer_TooLarge(t *testing.T) {
	s, db := newServer(t, nil)
	addr := serve(t, s.App())
	body := bytes.Repeat([]byte("a"), 2000)
	resp, err := http.Post("http://"+addr+"/in/shop", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !strings.Contains(string(raw), "body larger than max_body_bytes") {
		t.Fatalf("answer = %d %s; want 413", resp.StatusCode, raw)
	}
	if _, events, _ := db.Counts(context.Background()); events != 0 {
		t.Fatalf("events = %d, want 0", events)
	}
}
