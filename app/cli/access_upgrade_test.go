package cli

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

// TestAccess_Upgrade: a store as main leaves it (the status password's
// bcrypt hash under app.PasswordHashKey, written with SetMeta as the
// first start wrote it) opens; that password logs in as admin, who has the
// admin role, and no password is generated.
func TestAccess_Upgrade(t *testing.T) {
	const old = "the password of main"
	hash, err := bcrypt.GenerateFromPassword([]byte(old), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"", "pg"} {
		name := "bbolt"
		if url != "" {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			extra := ""
			if url != "" {
				url = pgtest.URL(t)
				extra = fmt.Sprintf("\n[storage]\nbackend = \"postgres\"\nurl = %q\n", url)
			}
			config := writeTestConfig(t, "", extra)
			ctx := context.Background()
			var st interface {
				SetMeta(context.Context, string, []byte) error
				LoadAccess(context.Context) (app.AccessData, error)
				Close() error
			}
			open := func() {
				if url == "" {
					db, err := bboltstore.Open(filepath.Join(filepath.Dir(config), "data"))
					if err != nil {
						t.Fatal(err)
					}
					st = db
					return
				}
				db, err := postgres.Open(ctx, url, postgres.Options{})
				if err != nil {
					t.Fatal(err)
				}
				st = db
			}
			open()
			if err := st.SetMeta(ctx, app.PasswordHashKey, hash); err != nil {
				t.Fatal(err)
			}
			st.Close()

			addr := freePort(t)
			srv := startServe(t, config, addr)
			if strings.Contains(srv.out.String(), "generated a status page password") {
				t.Fatalf("the upgrade generated a password:\n%s", srv.out)
			}
			if got := userStatus(t, addr, "admin", old); got != http.StatusOK {
				t.Fatalf("admin with main's password: %d", got)
			}
			srv.stop()
			open()
			defer st.Close()
			d, err := st.LoadAccess(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Users) != 1 || d.Users[0].Name != "admin" || d.Users[0].Role != app.RoleAdmin {
				t.Fatalf("users after the upgrade: %+v", d.Users)
			}
		})
	}
}

// TestAccess_TwoNodesOneAdmin: two PostgreSQL nodes started together on an
// empty schema, 20 times: exactly one generated password across both, and
// it logs in on both.
func TestAccess_TwoNodesOneAdmin(t *testing.T) {
	t.Parallel() // 40 starts of the binary: it mostly waits on them, measures nothing
	start := time.Now()
	for i := range 20 {
		url := pgtest.URL(t)
		config := writeTestConfig(t, "", fmt.Sprintf("\n[storage]\nbackend = \"postgres\"\nurl = %q\n", url))
		addrs := []string{freePort(t), freePort(t)}
		srvs := make([]*running, 2)
		var wg sync.WaitGroup
		for n := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); srvs[n] = startServeNoFatal(t, config, addrs[n]) }()
		}
		wg.Wait()
		var pw string
		count := 0
		for _, s := range srvs {
			if s == nil {
				t.FailNow()
			}
			count += strings.Count(s.out.String(), "generated a status page password")
			if m := passwordLine.FindStringSubmatch(s.out.String()); m != nil {
				pw = m[1]
			}
		}
		if count != 1 {
			t.Fatalf("round %d: %d generated passwords:\n%s\n---\n%s", i, count, srvs[0].out, srvs[1].out)
		}
		for n, s := range srvs {
			if got := userStatus(t, s.addr, "admin", pw); got != http.StatusOK {
				t.Fatalf("round %d: node %d refused the password: %d", i, n, got)
			}
			s.stop()
		}
	}
	t.Logf("20 rounds of two nodes took %v", time.Since(start).Round(time.Millisecond))
}

// startServeNoFatal is startServe for another goroutine than the test's:
// it reports with Errorf and returns nil when serve did not start.
func startServeNoFatal(t *testing.T, config, addr string) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{addr: addr, out: &buffer{}, cancel: cancel, code: make(chan int, 1)}
	go func() { r.code <- Run(ctx, []string{"serve", "-config", config, "-listen", addr}, r.out, r.out) }()
	t.Cleanup(r.stop)
	var ended *int
	started := apptest.Within(30*time.Second, func() bool {
		select {
		case code := <-r.code:
			ended = &code
			return true
		default:
		}
		return strings.Contains(r.out.String(), "hookbox started")
	})
	switch {
	case ended != nil:
		t.Errorf("serve ended with %d:\n%s", *ended, r.out)
		return nil
	case !started:
		t.Errorf("serve did not start:\n%s", r.out)
		return nil
	}
	return r
}
