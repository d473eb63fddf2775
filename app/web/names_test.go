package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"hookbox/app"
)

// hostileName is what the red team sent as a user name (issue 42, weak
// 6): 1,000 bytes with a right-to-left override, markup and a newline.
var hostileName = func() string {
	s := "eve\u202e<b>gnp.exe</b>\n\u2066x"
	return s + strings.Repeat("y", 1000-len(s))
}()

// A user name from a request, at a failed login (the form and Basic auth)
// and in API calls naming no such user or token, is stored and shown cut
// to 64 bytes with its control and format characters replaced by U+FFFD:
// in the audit API, on the audit page (escaped), and in the answers.
func TestAudit_NamesFromRequests(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	// The override, the newline and the isolate replaced; cut to 64 bytes.
	want := "eve\ufffd<b>gnp.exe</b>\ufffd\ufffdx" + strings.Repeat("y", 34) + "…"

	// Failed logins: the form, then Basic auth.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.PostForm(f.base+"/login", url.Values{"user": {hostileName}, "password": {"wrong-password"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || strings.ContainsRune(string(page), '\u202e') {
		t.Fatalf("login form: %d, override on the page %v", res.StatusCode, strings.ContainsRune(string(page), '\u202e'))
	}
	req, _ := http.NewRequest("GET", f.base+"/api/v1/stats", nil)
	req.SetBasicAuth(hostileName, "wrong-password")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Basic auth: %d; want 401", res.StatusCode)
	}

	// API calls naming no such user or token: the name in the answer
	// and the audit entry is the cleaned one.
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/users", `{"name": ` + jsonString(hostileName) + `, "role": "viewer", "password": "a-long-enough-password"}`},
		{"POST", "/api/v1/users/" + url.PathEscape(hostileName) + "/role", `{"role": "viewer"}`},
		{"POST", "/api/v1/users/" + url.PathEscape(hostileName) + "/password", `{"password": "a-long-enough-password"}`},
		{"DELETE", "/api/v1/users/" + url.PathEscape(hostileName), ""},
		{"DELETE", "/api/v1/tokens/" + url.PathEscape(hostileName), ""},
		{"POST", "/api/v1/destinations/" + url.PathEscape(hostileName) + "/pause", ""},
	} {
		req, _ := http.NewRequest(c.method, f.base+c.path, strings.NewReader(c.body))
		req.SetBasicAuth("ops", "pw-1234")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var ans struct{ Error string }
		json.NewDecoder(res.Body).Decode(&ans)
		res.Body.Close()
		if res.StatusCode < 400 || strings.ContainsRune(ans.Error, '\u202e') || strings.Contains(ans.Error, hostileName[len(hostileName)-100:]) {
			t.Errorf("%s %.40s…: %d %q; want a refusal with the name cleaned", c.method, c.path, res.StatusCode, ans.Error)
		}
	}

	// The audit API.
	code, body := f.get("/api/v1/audit?limit=1000")
	if code != 200 {
		t.Fatalf("audit: %d %s", code, body)
	}
	var got struct {
		Items []struct{ Actor, Action, Target, Detail, Result string }
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	logins, targets := 0, 0
	for _, e := range got.Items {
		for _, v := range []string{e.Actor, e.Target, e.Detail} {
			if strings.ContainsAny(v, "\u202e\u2066\n") || !utf8.ValidString(v) || strings.Contains(v, hostileName[len(hostileName)-100:]) {
				t.Errorf("audit entry %+v holds the name as sent", e)
			}
		}
		if e.Action == app.AuditLogin && e.Result == app.AuditFailed {
			logins++
			if e.Actor != want {
				t.Errorf("failed login's actor %q (%d bytes); want %q", e.Actor, len(e.Actor), want)
			}
		}
		if e.Actor == "ops" && e.Target != "" && len(e.Target) <= 64 && strings.HasPrefix(e.Target, "eve") {
			targets++
		}
	}
	if logins != 2 || targets != 6 {
		t.Errorf("%d failed logins, %d entries naming the cleaned name as target; want 2 and 6: %+v", logins, targets, got.Items)
	}

	// The audit page: escaped, never the override or the markup as sent.
	code, body = f.get("/audit")
	if code != 200 {
		t.Fatalf("audit page: %d", code)
	}
	if s := string(body); strings.ContainsRune(s, '\u202e') || strings.Contains(s, "<b>gnp") || !strings.Contains(s, "eve\ufffd&lt;b&gt;gnp.exe&lt;/b&gt;\ufffd\ufffdx") {
		i := strings.Index(s, "eve")
		t.Errorf("audit page shows %q", s[max(0, i):min(len(s), i+120)])
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
