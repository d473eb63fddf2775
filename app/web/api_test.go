package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/config"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

const apiConfig = `
[status]
user = "ops"
password = "pw-1234"
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
[[destination]]
name = "pos"
url = "http://127.0.0.1:1/never"
retry = []
[[route]]
source = "shop"
to = ["pos"]
`

// newAPIServer returns a server whose store holds one dead delivery.
func newAPIServer(t *testing.T, toml string) (*web.Server, *bboltstore.DB, uint64) {
	t.Helper()
	cfg, err := config.Parse("t.toml", toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	recv := receive.New(cfg, db)
	body := []byte(`{"id": 1}`)
	in := &app.Inbound{Body: body}
	for k, v := range signShop(t, body, "w-dead") {
		in.Header = append(in.Header, app.HeaderField{Name: k, Value: v[0]})
	}
	if _, err := recv.Receive(context.Background(), "shop", in); err != nil {
		t.Fatal(err)
	}
	_, seq, _, _ := db.LookupID(context.Background(), "shop", "w-dead")
	ds, _ := db.EventDeliveries(context.Background(), seq)
	if len(ds) != 1 {
		t.Fatalf("deliveries = %+v", ds)
	}
	err = db.RecordAttempt(context.Background(), ds[0].ID, &app.Attempt{Start: time.Now(), Duration: time.Millisecond, Error: "connection refused"}, app.Dead, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	login := testAccess(t, cfg, db)
	return web.New(cfg, web.Deps{Receiver: recv, Store: db, Health: db.Ping, Access: login}), db, ds[0].ID
}

func apiCall(t *testing.T, s *web.Server, method, path string, h http.Header) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	// No time limit of its own (-1): a wrong user's login costs two
	// bcrypt hashes, about 4 s under -race on a loaded machine, which
	// Fiber's default 1 s and the 5 s given before both cut; go test's
	// -timeout still bounds a request that hangs.
	resp, err := s.App().Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: answer %d is not JSON: %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, m
}

func login(user, pass string) http.Header {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pass)
	return req.Header
}

func TestAPI_Auth(t *testing.T) {
	s, _, _ := newAPIServer(t, apiConfig)
	for _, tt := range []struct {
		name   string
		method string
		path   string
		h      http.Header
		code   int
	}{
		{"NoLogin", "GET", "/api/v1/dead-letters", nil, 401},
		{"WrongPassword", "GET", "/api/v1/dead-letters", login("ops", "nope"), 401},
		{"WrongUser", "GET", "/api/v1/dead-letters", login("admin", "pw-1234"), 401},
		{"ReplayNoLogin", "POST", "/api/v1/dead-letters/replay", nil, 401},
		{"OK", "GET", "/api/v1/dead-letters", login("ops", "pw-1234"), 200},
		{"CrossSite", "POST", "/api/v1/dead-letters/replay", func() http.Header {
			h := login("ops", "pw-1234")
			h.Set("Origin", "https://evil.example")
			return h
		}(), 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, m := apiCall(t, s, tt.method, tt.path, tt.h); code != tt.code {
				t.Fatalf("%s %s = %d %v; want %d", tt.method, tt.path, code, m, tt.code)
			}
		})
	}
	t.Run("GeneratedPassword", func(t *testing.T) {
		s, db, _ := newAPIServer(t, strings.Replace(apiConfig, `password = "pw-1234"`, "", 1))
		_ = db
		for _, pw := range []string{"", "pw-1234", "admin"} {
			if code, m := apiCall(t, s, "GET", "/api/v1/dead-letters", login("ops", pw)); code != 401 {
				t.Fatalf("password %q: answer = %d %v", pw, code, m)
			}
		}
		if _, ok := any(db).(app.AccessStore); !ok {
			t.Skip("the store keeps no users yet")
		}
		if users := s.Access().Users(); len(users) != 1 || users[0].Role != app.RoleAdmin {
			t.Fatalf("users = %+v; want the generated admin", users)
		}
	})
}

func TestAPI_DeadLettersAndReplay(t *testing.T) {
	s, db, id := newAPIServer(t, apiConfig)
	auth := login("ops", "pw-1234")
	code, m := apiCall(t, s, "GET", "/api/v1/dead-letters", auth)
	items, _ := m["items"].([]any)
	if code != 200 || m["total"] != float64(1) || len(items) != 1 {
		t.Fatalf("dead letters = %d %v", code, m)
	}
	if first := items[0].(map[string]any); first["id"] != float64(id) || first["state"] != "dead" || first["last_error"] != "connection refused" {
		t.Fatalf("item = %v", first)
	}
	code, m = apiCall(t, s, "GET", "/api/v1/deliveries/"+strconv.FormatUint(id, 10), auth)
	if hist, _ := m["attempts_detail"].([]any); code != 200 || len(hist) != 1 {
		t.Fatalf("delivery = %d %v", code, m)
	}
	if code, m := apiCall(t, s, "GET", "/api/v1/deliveries/999", auth); code != 404 {
		t.Fatalf("unknown delivery = %d %v", code, m)
	}
	if code, m := apiCall(t, s, "POST", "/api/v1/dead-letters/"+strconv.FormatUint(id, 10)+"/replay", auth); code != 200 || m["replayed"] != float64(1) {
		t.Fatalf("replay = %d %v", code, m)
	}
	d, attempts, _ := db.Delivery(context.Background(), id)
	if d.State != app.Pending || len(attempts) != 1 {
		t.Fatalf("after replay: %+v with %d attempts; want pending, history kept", d, len(attempts))
	}
	if n, _ := db.CountDead(context.Background()); n != 0 {
		t.Fatalf("dead = %d after replay", n)
	}
	// Replay all: make it dead again first.
	db.RecordAttempt(context.Background(), id, &app.Attempt{Start: time.Now(), Status: 500}, app.Dead, time.Time{})
	if code, m := apiCall(t, s, "POST", "/api/v1/dead-letters/replay", auth); code != 200 || m["replayed"] != float64(1) {
		t.Fatalf("replay all = %d %v", code, m)
	}
}

func TestAPI_Backup(t *testing.T) {
	_, db, _ := newAPIServer(t, apiConfig)
	dir := t.TempDir()
	s := web.New(mustConfig(t, apiConfig), web.Deps{Store: db, Health: db.Ping,
		Access: access.Fixed("ops", "pw-1234"),
		Backup: func() (*os.File, int64, error) { return db.Backup(dir) }})
	addr := serve(t, s.App())
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/backup", nil)
	req.SetBasicAuth("ops", "pw-1234")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := filepath.Join(t.TempDir(), bboltstore.FileName)
	f, _ := os.Create(out)
	n, err := io.Copy(f, resp.Body)
	f.Close()
	if err != nil || resp.StatusCode != 200 || n == 0 {
		t.Fatalf("backup: %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	// The copy opens as a data file with the dead delivery in it.
	copyDB, err := bboltstore.Open(filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	defer copyDB.Close()
	if err := copyDB.Check(); err != nil {
		t.Fatal(err)
	}
	if n, _ := copyDB.CountDead(context.Background()); n != 1 {
		t.Fatalf("dead in the copy = %d, want 1", n)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

func mustConfig(t testing.TB, toml string) *app.Config {
	cfg, err := config.Parse("t.toml", toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
