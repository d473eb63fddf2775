package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/provider"
	"hookbox/storage/bboltstore"
)

// closedPort returns a local address nothing listens on; its port is
// outside the range the kernel hands to other tests' listeners on port 0.
func closedPort(t *testing.T) string {
	return "127.0.0.1:" + strconv.Itoa(freePort(t))
}

// Secret values a run of hookbox knows. The destination secret's key is
// also checked without its whsec_ prefix.
var runSecrets = []string{
	"status-pw-Secret-1a2b", "gh-old-Secret-3c4d", "gh-new-Secret-5e6f", "whsec_stripeSecret7g8h",
	"token-Secret-9i0j", "hmac-env-Secret-k1l2", "dest-query-Secret-m3n4", "dest-header-Secret-o5p6",
	"whsec_ZGVzdGluYXRpb24tU2VjcmV0LXM5dDA=", "ZGVzdGluYXRpb24tU2VjcmV0LXM5dDA=", "alert-url-Secret-q7r8",
	"erring-query-Secret-u1v2", "smtp-pw-Secret-w3e4",
}

// A full run, at debug level, with secrets for sources, destinations, the
// status login, the alert URL and the SMTP server; valid and forged
// requests, failed logins, deliveries that fail until dead, an alert that
// cannot be sent: no secret value appears in the log or in any answer, in
// either format of the log, and every line has the documented fields.
func TestSecurity_NoSecretsInLog(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			noSecretsInLog(t, format)
		})
	}
}

func noSecretsInLog(t *testing.T, format string) {
	erring := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(500)
		io.WriteString(w, "internal trouble")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go erring.Serve(ln)
	t.Cleanup(func() { erring.Close() })

	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	toml := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q
max_body_bytes = 4096

[status]
user = "ops"
password = "status-pw-Secret-1a2b"

[[source]]
name = "gh"
provider = "github"
secrets = ["gh-old-Secret-3c4d", "gh-new-Secret-5e6f"]

[[source]]
name = "stripe"
provider = "stripe"
secret = "whsec_stripeSecret7g8h"

[[source]]
name = "own"
provider = "token"
secret = "token-Secret-9i0j"

[[source]]
name = "hm"
provider = "hmac"
secret_env = "SEC_HMAC_SECRET"
signature_header = "X-Sig"
id = "{header.X-Id}"

[[destination]]
name = "down"
url = "http://%s/hook?token=dest-query-Secret-m3n4"
secret = "whsec_ZGVzdGluYXRpb24tU2VjcmV0LXM5dDA="
headers = { Authorization = "Bearer dest-header-Secret-o5p6" }
timeout = "1s"
retry = ["10ms", "10ms"]

[[destination]]
name = "erring"
url = "http://%s/hook?key=erring-query-Secret-u1v2"
retry = ["10ms"]

[[route]]
source = "gh"
to = ["down", "erring"]

[[route]]
source = "own"
to = ["down"]

[alerts]
dead_letters_over = 0
url = "http://%s/services/alert-url-Secret-q7r8"
check = "@every 1s"
email_to = ["ops@shop.example"]
email_from = "hookbox <hookbox@shop.example>"
smtp_url_env = "SEC_SMTP_URL"

[log]
format = %q
`, filepath.Join(dir, "data"), closedPort(t), ln.Addr(), closedPort(t), format)
	if err := os.WriteFile(config, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, config, []string{"SEC_HMAC_SECRET=hmac-env-Secret-k1l2",
		"SEC_SMTP_URL=smtp://hookbox:smtp-pw-Secret-w3e4@" + closedPort(t)}, "-log-level", "debug")

	var answers bytes.Buffer
	do := func(method, path string, body []byte, h http.Header) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+p.addr+path, bytes.NewReader(body))
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		fmt.Fprintf(&answers, "%s %s: %d %v\n", method, path, resp.StatusCode, resp.Header)
		io.Copy(&answers, resp.Body)
		return resp.StatusCode
	}
	sign := func(source, secret string, s provider.Settings, body []byte, id string, at time.Time) http.Header {
		t.Helper()
		s.Secrets = [][]byte{[]byte(secret)}
		h, err := provider.Sign(map[string]string{"gh": "github", "stripe": "stripe", "own": "token", "hm": "hmac"}[source],
			s, body, "", id, "push", at)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	now := time.Now()
	body := []byte(`{"id": "evt_sec_1", "type": "charge.succeeded"}`)
	hm := provider.Settings{SignatureHeader: "X-Sig"}
	for _, tt := range []struct {
		source string
		h      http.Header
		code   int
	}{
		{"gh", sign("gh", "gh-new-Secret-5e6f", hm, body, "gh-1", now), 200},
		{"gh", sign("gh", "gh-old-Secret-3c4d", hm, body, "gh-2", now), 200},
		{"gh", sign("gh", "not-the-secret", hm, body, "gh-3", now), 401},
		{"gh", http.Header{"X-Github-Delivery": {"gh-4"}}, 401},
		{"stripe", sign("stripe", "whsec_stripeSecret7g8h", hm, body, "", now), 200},
		{"stripe", sign("stripe", "whsec_stripeSecret7g8h", hm, body, "", now.Add(-time.Hour)), 401},
		{"own", sign("own", "token-Secret-9i0j", hm, body, "own-1", now), 200},
		{"own", http.Header{"Authorization": {"Bearer token-Secret-9i0X"}}, 401},
		{"hm", func() http.Header {
			h := sign("hm", "hmac-env-Secret-k1l2", hm, body, "", now)
			h.Set("X-Id", "hm-1")
			return h
		}(), 200},
		{"hm", http.Header{"X-Sig": {"00"}, "X-Id": {"hm-2"}}, 401},
	} {
		if code := do("POST", "/in/"+tt.source, body, tt.h); code != tt.code {
			t.Fatalf("POST /in/%s: %d, want %d", tt.source, code, tt.code)
		}
	}
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	if code := do("POST", "/login", []byte(url.Values{"user": {"ops"}, "password": {"status-pw-Secret-1a2X"}}.Encode()), form); code != 401 {
		t.Fatalf("failed login: %d", code)
	}
	if code := do("POST", "/login", []byte(url.Values{"user": {"ops"}, "password": {"status-pw-Secret-1a2b"}}.Encode()), form); code != 303 {
		t.Fatalf("login: %d", code)
	}
	basic := func(user, pass string) http.Header {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(user, pass)
		return r.Header
	}
	if code := do("GET", "/api/v1/stats", nil, basic("ops", "wrong")); code != 401 {
		t.Fatalf("API with a wrong password: %d", code)
	}
	if code := do("GET", "/api/v1/dead-letters", nil, basic("ops", "status-pw-Secret-1a2b")); code != 200 {
		t.Fatalf("API: %d", code)
	}

	// Wait for the deliveries to die and for the alert to fail.
	apptest.Until(t, 20*time.Second, func() error {
		if !(strings.Contains(p.logText(), "delivery dead") && strings.Contains(p.logText(), "send alert")) {
			return fmt.Errorf("no dead delivery or alert in the log:\n%s", p.logText())
		}
		return nil
	})
	do("GET", "/api/v1/dead-letters", nil, basic("ops", "status-pw-Secret-1a2b"))
	p.stop(t)

	log := p.logText()
	for _, want := range []string{"webhook rejected", "failed login", "delivery dead", "send alert", "delivery will retry"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q: the run did not cover it", want)
		}
	}
	for _, secret := range runSecrets {
		if strings.Contains(log, secret) {
			t.Errorf("the log contains the secret %q", secret)
		}
		if strings.Contains(answers.String(), secret) {
			t.Errorf("an answer contains the secret %q", secret)
		}
	}
	checkLogFields(t, format, log)
	if t.Failed() {
		t.Logf("log:\n%s", log)
	}
}

// checkLogFields reads every line of log as its format says and checks
// the fields README's "Logs" promises: time, level, msg and component on
// every line, and the names of what a line is about where it applies.
func checkLogFields(t *testing.T, format, log string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	if len(lines) < 10 {
		t.Fatalf("%d lines in the log", len(lines))
	}
	byMsg := map[string][]map[string]any{}
	for i, line := range lines {
		fields := map[string]any{}
		if format == "json" {
			if err := json.Unmarshal([]byte(line), &fields); err != nil {
				t.Errorf("line %d is not JSON (%v): %s", i+1, err, line)
				continue
			}
			if n := strings.Count(line, `"component":`); n != 1 {
				t.Errorf("line %d has %d components: %s", i+1, n, line)
			}
		} else {
			fields = logfmt(line)
			if n := strings.Count(line, " component="); n != 1 {
				t.Errorf("line %d has %d components: %s", i+1, n, line)
			}
		}
		for _, k := range []string{"time", "level", "msg", "component"} {
			if s, _ := fields[k].(string); s == "" {
				t.Errorf("line %d has no %s: %s", i+1, k, line)
			}
		}
		if ts, _ := fields["time"].(string); ts != "" {
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				t.Errorf("line %d: time %q is not RFC 3339", i+1, ts)
			}
		}
		msg, _ := fields["msg"].(string)
		byMsg[msg] = append(byMsg[msg], fields)
	}
	for msg, keys := range map[string][]string{
		"webhook accepted": {"source", "event"},
		"webhook rejected": {"source", "client"},
		"failed login":     {"client"},
		"delivery dead":    {"delivery", "destination", "event"},
		"hookbox started":  {"listen"},
	} {
		if len(byMsg[msg]) == 0 {
			t.Errorf("no line %q", msg)
		}
		for _, f := range byMsg[msg] {
			for _, k := range keys {
				if _, ok := f[k]; !ok {
					t.Errorf("a line %q has no %s: %v", msg, k, f)
				}
			}
		}
	}
}

// logfmt reads a line of slog's text handler: key=value pairs, a value
// quoted when it holds a space, a quote or an equals sign.
func logfmt(line string) map[string]any {
	out := map[string]any{}
	for line != "" {
		eq := strings.IndexByte(line, '=')
		if eq < 0 {
			break
		}
		key := line[:eq]
		line = line[eq+1:]
		var val string
		if strings.HasPrefix(line, `"`) {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return out
			}
			val, _ = strconv.Unquote(q)
			line = line[len(q):]
		} else if sp := strings.IndexByte(line, ' '); sp >= 0 {
			val, line = line[:sp], line[sp:]
		} else {
			val, line = line, ""
		}
		out[key] = val
		line = strings.TrimPrefix(line, " ")
	}
	return out
}

// The data directory and file are created private (0700, 0600) whatever
// the umask says.
func TestSecurity_DataFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := start(t, writeConfig(t, dir))
	p.stop(t)
	for path, want := range map[string]os.FileMode{
		filepath.Join(dir, "data"):                      0o700 | os.ModeDir,
		filepath.Join(dir, "data", bboltstore.FileName): 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
}
