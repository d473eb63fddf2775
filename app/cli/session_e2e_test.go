package cli_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"hookbox/app/access"
	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
)

// Issue 44: a restart logged everyone out (the sessions were in memory).
// The real binary, on bbolt and on PostgreSQL: three people log in (the
// config's admin, dana and eve, users made with hookbox user add), the
// server restarts, and their cookies still work. Then hookbox passwd dana
// ends dana's session, hookbox user role eve ends eve's, each within the
// bound (at once on bbolt through the running server; on PostgreSQL the
// command writes the database and the server sees it within access.Poll,
// its cached session within access.SessionCache), and the others go on.
// A restart with another config password ends the admin's. On today's
// main the first restart sent every cookie to the login page.
func TestSessions_SurviveRestart(t *testing.T) {
	t.Parallel() // mostly waits on restarts and polls: it overlaps the other waiting tests
	eachStore(t, testSessionsSurviveRestart)
}

func testSessionsSurviveRestart(t *testing.T, st storeCase) {
	dir := t.TempDir()
	config := writeConfig(t, dir, "\n[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n", st.config(2*time.Second))
	cmd := func(stdin string, want string, args ...string) {
		t.Helper()
		// hookbox user and passwd read the config, which names both variables.
		c := exec.Command(clitest.Binary(t), append(args, "-config", config)...)
		c.Env = append(os.Environ(), "E2E_STATUS_PASSWORD=pw-e2e", "E2E_GH_SECRET="+e2eSecret)
		c.Stdin = strings.NewReader(stdin)
		out, err := c.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("hookbox %v: %v\n%s", args, err, out)
		}
	}
	cmd("dana-password-1\n", "user dana added", "user", "add", "dana", "-role", "admin")
	cmd("eve-password-1\n", "user eve added", "user", "add", "eve", "-role", "viewer")

	p := start(t, config)
	cookies := map[string]string{
		"admin": logInAs(t, p.addr, "admin", "pw-e2e"),
		"dana":  logInAs(t, p.addr, "dana", "dana-password-1"),
		"eve":   logInAs(t, p.addr, "eve", "eve-password-1"),
	}
	want := func(t *testing.T, addr string, in time.Duration, codes map[string]int) {
		t.Helper()
		apptest.Until(t, in, func() error {
			var wrong []string
			for who, code := range codes {
				if got := sessionStatus(t, addr, cookies[who]); got != code {
					wrong = append(wrong, fmt.Sprintf("%s's cookie: %d, want %d", who, got, code))
				}
			}
			if len(wrong) > 0 {
				return fmt.Errorf("%s", strings.Join(wrong, "; "))
			}
			return nil
		})
	}
	want(t, p.addr, time.Second, map[string]int{"admin": 200, "dana": 200, "eve": 200})

	p.stop(t)
	p = start(t, config)
	want(t, p.addr, time.Second, map[string]int{"admin": 200, "dana": 200, "eve": 200})

	// The bound: at once through the running server (bbolt); from the
	// database on PostgreSQL within a poll, or a cached session's life.
	bound := time.Second + max(access.Poll, access.SessionCache)
	cmd("dana-password-2\n", "password of dana changed", "passwd", "dana")
	want(t, p.addr, bound, map[string]int{"admin": 200, "dana": 303, "eve": 200})
	cmd("", "eve now has role operator", "user", "role", "eve", "operator")
	want(t, p.addr, bound, map[string]int{"admin": 200, "dana": 303, "eve": 303})
	p.stop(t)

	p = startWith(t, config, []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e-changed"})
	want(t, p.addr, time.Second, map[string]int{"admin": 303})
	p.stop(t)
}

// logInAs logs user in through the login form at addr and returns the
// session cookie's value.
func logInAs(t *testing.T, addr, user, password string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm("http://"+addr+"/login", url.Values{"user": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "hookbox_session" && ck.Value != "" {
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("login of %s: %d", user, resp.StatusCode)
			}
			return ck.Value
		}
	}
	t.Fatalf("login of %s: %d and no session cookie", user, resp.StatusCode)
	return ""
}

// sessionStatus GETs the overview at addr with the session cookie: 200
// while the session holds, 303 (to the login page) once it ended.
func sessionStatus(t *testing.T, addr, cookie string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.AddCookie(&http.Cookie{Name: "hookbox_session", Value: cookie})
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther && !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("the overview redirects to %q", resp.Header.Get("Location"))
	}
	return resp.StatusCode
}
