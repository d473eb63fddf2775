package cli_test

import (
	"encoding/json"
	"os"
	"os/user"
	"strings"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// `hookbox reload` puts an edited file in force in the running server
// and prints what changed, with no pid to find; the audit log names the
// caller. Before it, `sign -send` to a source only the file has says
// that the server does not know it and that reload applies the file;
// after it the source takes events. A file with mistakes is refused:
// reload prints every mistake as check prints them, exits 1, and the
// config in force keeps serving.
func TestEndToEnd_ReloadCommand(t *testing.T) {
	dir := t.TempDir()
	oldSink, newSink := newStartSink(t, nil), newStartSink(t, nil)
	config := reloadConfig(t, dir, storeCase{}, oldSink.url, "")
	p := start(t, config)

	// A source added to the file, not yet loaded.
	newSource := `
[[source]]
name = "gh2"
provider = "github"
secret_env = "E2E_GH_SECRET"
`
	editReloadConfig(t, dir, storeCase{}, oldSink.url, newSink.url, newSource)
	body := []byte(`{"n": 1}`)
	out, errOut, code := hookboxAt(t, config, p.addr, body, "sign", "-source", "gh2", "-send", "-")
	if code != 1 || !strings.HasPrefix(out, "404 ") {
		t.Fatalf("sign -send to gh2 before the reload: exit %d, %q %q; want 1 and the 404", code, out, errOut)
	}
	for _, want := range []string{`the running server does not know source "gh2"`, "it is in " + config, "hookbox reload applies the file"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("sign -send to gh2 before the reload says %q; want %q in it", errOut, want)
		}
	}

	// A source in neither: the file says so before anything is sent.
	_, errOut, code = hookboxAt(t, config, p.addr, body, "sign", "-source", "gh3", "-send", "-")
	if code != 1 || !strings.Contains(errOut, `has no [[source]] named "gh3" (it has: gh, gh2)`) {
		t.Errorf("sign -send to gh3, in no file: exit %d, %q", code, errOut)
	}

	out, errOut, code = hookboxAt(t, config, p.addr, nil, "reload")
	if code != 0 {
		t.Fatalf("hookbox reload: exit %d\n%s%s\n%s", code, out, errOut, p.logText())
	}
	want := "reloaded " + config + "\n" +
		"  source added: gh2\n" +
		"  destination added: new\n" +
		"  route added: to-new\n" +
		"  waits for a restart (the running value stays): server.max_body_bytes\n"
	if out != want {
		t.Errorf("hookbox reload printed:\n%s\nwant:\n%s", out, want)
	}
	t.Logf("hookbox reload:\n%s", out)
	// The same log line as SIGHUP's.
	line := logLine(p.logText(), "config reloaded")
	for _, w := range []string{"sources_added=1", "destinations_added=1", "routes_added=1", "restart_to_apply=server.max_body_bytes"} {
		if !strings.Contains(line, w) {
			t.Errorf("the reload's log line lacks %s: %s", w, line)
		}
	}
	// In force: gh's events reach the new destination, gh2 takes events.
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "after-reload")); r.code != 200 {
		t.Fatalf("after the reload: %d %v", r.code, r.body)
	}
	newSink.waitFor(t, 1, 30*time.Second)
	out, errOut, code = hookboxAt(t, config, p.addr, body, "sign", "-source", "gh2", "-send", "-")
	if code != 0 || !strings.Contains(out, `"accepted"`) {
		t.Errorf("sign -send to gh2 after the reload: exit %d, %q %q", code, out, errOut)
	}
	// The audit log names who reloaded: on the box, the Unix user, through
	// the local socket.
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	_, raw := apiDo(t, p.addr, "GET", "/audit?action=config.reload", nil)
	var audit struct {
		Items []struct {
			Actor  string `json:"actor"`
			Target string `json:"target"`
			Result string `json:"result"`
			Detail string `json:"detail"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &audit); err != nil || len(audit.Items) != 1 || audit.Items[0].Actor != "local:"+me.Username ||
		audit.Items[0].Target != config || audit.Items[0].Result != "ok" || !strings.Contains(audit.Items[0].Detail, "destination added: new") {
		t.Errorf("GET /api/v1/audit?action=config.reload: %s (%v); want one entry by local:%s", raw, err, me.Username)
	}

	// Two mistakes: both printed as check prints them, exit 1, the
	// running config stays.
	good, _ := os.ReadFile(config)
	bad := strings.Replace(string(good), "concurrency = 16", "concurency = 16", 1)
	bad = strings.Replace(bad, `to = ["new"]`, `to = ["nwe"]`, 1)
	os.WriteFile(config, []byte(bad), 0o600)
	_, checkErr, checkCode := hookboxAt(t, config, p.addr, nil, "check")
	checkLines := strings.Split(strings.TrimSpace(checkErr), "\n")
	if checkCode != 1 || len(checkLines) != 2 {
		t.Fatalf("hookbox check on the broken file: exit %d, %q; want its two mistakes", checkCode, checkErr)
	}
	out, errOut, code = hookboxAt(t, config, p.addr, nil, "reload")
	if code != 1 || out != "" {
		t.Errorf("hookbox reload of a broken file: exit %d, stdout %q; want 1 and nothing", code, out)
	}
	if first := strings.SplitN(errOut, "\n", 2)[0]; !strings.Contains(first, "refused") || !strings.Contains(first, "the running config stays in force") {
		t.Errorf("hookbox reload's first line: %q", first)
	}
	t.Logf("hookbox reload of the broken file (exit %d):\n%s", code, errOut)
	for _, l := range checkLines {
		if !strings.Contains(errOut, l+"\n") {
			t.Errorf("hookbox reload does not print %q as check does:\n%s", l, errOut)
		}
	}
	waitLog(t, p, "config refused", 10*time.Second)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "after-refusal")); r.code != 200 {
		t.Fatalf("after the refusal: %d %v", r.code, r.body)
	}
	newSink.waitFor(t, 2, 30*time.Second) // to-new still routes: the reloaded config serves
	_, raw = apiDo(t, p.addr, "GET", "/audit?action=config.reload", nil)
	if err := json.Unmarshal(raw, &audit); err != nil || len(audit.Items) != 2 || audit.Items[0].Result != "failed" ||
		!strings.Contains(audit.Items[0].Detail, ".concurency: unknown key") {
		t.Errorf("the refused reload's audit entry: %s (%v)", raw, err)
	}
	apptest.Eventually(t, 5*time.Second, "the old sink has both events", func() bool { return oldSink.count() >= 2 })

	// kill -HUP still works, and logs the same.
	os.WriteFile(config, good, 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	apptest.Eventually(t, 10*time.Second, "a second config reloaded line", func() bool {
		return strings.Count(p.logText(), "config reloaded") == 2
	})
	p.stop(t)
}
