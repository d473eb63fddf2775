package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
)

// walkthrough returns the toml block and the commands (comments removed)
// of README's "Connect your store" walkthrough for one platform, as a
// reader copies them.
func walkthrough(t *testing.T, platform string) (toml string, cmds []string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(clitest.Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(readme), "\n## Connect your store\n")
	if !ok {
		t.Fatal(`README.md has no "## Connect your store" section`)
	}
	_, text, ok = strings.Cut(text, "\n### "+platform+"\n")
	if !ok {
		t.Fatalf(`README.md has no "### %s" under "Connect your store"`, platform)
	}
	if end := strings.Index(text, "\n### "); end >= 0 {
		text = text[:end]
	}
	block := func(lang string) string {
		_, b, ok := strings.Cut(text, "```"+lang+"\n")
		b, _, ok2 := strings.Cut(b, "```")
		if !ok || !ok2 {
			t.Fatalf("the %s walkthrough has no ```%s block", platform, lang)
		}
		return b
	}
	for _, line := range strings.Split(block("sh"), "\n") {
		if j := strings.Index(line, "  # "); j >= 0 {
			line = line[:j]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	return block("toml"), cmds
}

// TestShopifyWalkthrough walks README's "Connect your store → Shopify" as
// written, after the quick start's build: the source, destination and route
// added to config.toml, the secret exported, check, a sink standing in for
// the app, the server, and a signed Shopify test event, which reaches the
// sink and is shown delivered on the page and in the API. It also sends
// from a terminal without the export, which README says fails. It logs how
// long the path took. Only the ports differ from what a reader runs.
func TestShopifyWalkthrough(t *testing.T) {
	walk(t, "Shopify", "shop", "orders/create", "app")
}

// TestStripeWalkthrough walks README's Stripe walkthrough the same way.
func TestStripeWalkthrough(t *testing.T) {
	walk(t, "Stripe", "stripe", "checkout.session.completed", "billing")
}

// TestWooCommerceWalkthrough walks README's WooCommerce walkthrough the
// same way.
func TestWooCommerceWalkthrough(t *testing.T) {
	walk(t, "WooCommerce", "woo", "order.created", "fulfilment")
}

// walk follows one platform's walkthrough: its test event, from source,
// must reach the sink with topic and be shown delivered to dest.
func walk(t *testing.T, platform, source, topic, dest string) {
	if testing.Short() {
		t.Skip("builds the binary and runs it")
	}
	began := time.Now()
	toml, cmds := walkthrough(t, platform)
	if len(cmds) != 5 {
		t.Fatalf("the %s walkthrough has %d commands, the test knows 5 (export, check, sink, serve, send): %q", platform, len(cmds), cmds)
	}
	export, check, sinkCmd, serveCmd, send := cmds[0], cmds[1], cmds[2], cmds[3], cmds[4]
	m := regexp.MustCompile(`^export ([A-Z_][A-Z0-9_]*)=`).FindStringSubmatch(export)
	switch {
	case m == nil:
		t.Fatalf("export command %q", export)
	case !strings.Contains(toml, `secret_env = "`+m[1]+`"`):
		t.Fatalf("the walkthrough exports %s but its source does not name it:\n%s", m[1], toml)
	case check != "./hookbox check":
		t.Fatalf("check command %q", check)
	case !strings.HasPrefix(sinkCmd, "./hookbox sink -listen "):
		t.Fatalf("sink command %q", sinkCmd)
	case serveCmd != "./hookbox":
		t.Fatalf("serve command %q", serveCmd)
	case !strings.Contains(send, "./hookbox sign -source "+source+" ") || !strings.HasSuffix(send, "-send -"):
		t.Fatalf("send command %q", send)
	}
	secretVar := m[1]
	readmeApp := strings.TrimPrefix(sinkCmd, "./hookbox sink -listen ")
	if !strings.Contains(toml, `"http://`+readmeApp+`/"`) {
		t.Fatalf("the walkthrough's destination is not the sink on %s:\n%s", readmeApp, toml)
	}

	// The quick start's checkout: its build, its config.toml, to which the
	// reader adds the walkthrough's tables.
	dir := t.TempDir()
	root := clitest.Root(t)
	build := quickStart(t)[0]
	b := exec.Command("sh", "-c", strings.Replace(build, "-o hookbox", "-o "+filepath.Join(dir, "hookbox"), 1))
	b.Dir = root
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	built := time.Since(began)
	config, err := os.ReadFile(filepath.Join(root, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	appAddr, demoSink, serverAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	config = []byte(strings.ReplaceAll(string(config), "127.0.0.1:9000", demoSink) + "\n" +
		strings.ReplaceAll(toml, readmeApp, appAddr))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), config, 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, secretVar+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOOKBOX_LISTEN="+serverAddr, "HOOKBOX_PASSWORD=", "CI=")
	// terminal runs line as a reader's terminal would, after the export.
	terminal := func(line string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", export+"\n"+line)
		cmd.Dir, cmd.Env = dir, env
		return cmd
	}

	if out, err := terminal(check).CombinedOutput(); err != nil || !strings.Contains(string(out), "/in/"+source) {
		t.Fatalf("%s: %v\n%s", check, err, out)
	}
	start := func(line string) *output { return startInTerminal(t, terminal("exec "+line)) }
	sinkOut := start(strings.ReplaceAll(sinkCmd, readmeApp, appAddr))
	apptest.Eventually(t, time.Minute, "the sink listening", func() bool { return strings.Contains(sinkOut.String(), "listening") })
	serverOut := start(serveCmd)
	apptest.Eventually(t, time.Minute, "the server started", func() bool { return strings.Contains(serverOut.String(), "hookbox started") })
	pm := regexp.MustCompile(`generated a status page password.* user=(\S+) password=(\S+)`).FindStringSubmatch(serverOut.String())
	if pm == nil {
		t.Fatalf("the server printed no password:\n%s", serverOut)
	}
	user, password := pm[1], pm[2]

	// A terminal without the export: README says sign fails, naming the
	// variable.
	bare := exec.Command("sh", "-c", send)
	bare.Dir, bare.Env = dir, env
	if out, err := bare.CombinedOutput(); err == nil || !strings.Contains(string(out), secretVar) {
		t.Fatalf("sign without %s: %v\n%s", secretVar, err, out)
	}

	answer, err := terminal(send).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s\nserver:\n%s", send, err, answer, serverOut)
	}
	am := regexp.MustCompile(`^200 \{"status":"accepted","id":"([^"]+)"\}`).FindSubmatch(answer)
	if am == nil {
		t.Fatalf("send answered %q", answer)
	}
	id := string(am[1])
	apptest.Eventually(t, time.Minute, "the sink printing the delivery", func() bool { return strings.Contains(sinkOut.String(), "event="+id) })
	if line := sinkOut.String(); !strings.Contains(line, "source="+source+" event="+id+" topic="+topic+" attempt=1") {
		t.Fatalf("the sink printed %q", line)
	}

	// The API and the page show it delivered to the walkthrough's destination.
	get := func(path string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, "http://"+serverAddr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	var seq int64
	apptest.Eventually(t, time.Minute, "the API listing the event delivered", func() bool {
		code, body := get("/api/v1/events?source=" + source + "&status=delivered")
		var list struct {
			Items []struct {
				Seq   int64  `json:"seq"`
				ID    string `json:"id"`
				Topic string `json:"topic"`
			} `json:"items"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil {
			return false
		}
		for _, e := range list.Items {
			if e.ID == id && e.Topic == topic {
				seq = e.Seq
			}
		}
		return seq != 0
	})
	code, page := get(fmt.Sprintf("/events/%d", seq))
	if code != http.StatusOK || !strings.Contains(page, id) || !regexp.MustCompile(`(?s)>`+dest+`\b.{0,200}delivered`).MatchString(page) {
		t.Fatalf("the event's page (%d) does not show %s and its delivery to %s:\n%s", code, id, dest, page)
	}
	t.Logf("README's %s walkthrough: build %v, then the event delivered and on the page %v later (%v in all)",
		platform, built.Round(100*time.Millisecond), (time.Since(began) - built).Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
}
