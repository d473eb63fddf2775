package cli_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/cli/clitest"
)

// The providers' official SDKs (pinned in testdata/interop/package.json)
// and hookbox must agree in both directions, against the built binary:
// what an SDK signs, a running hookbox accepts (and refuses once the body
// changes by one byte); what `hookbox sign` sends, the SDK's verify side
// accepts (and refuses once tampered). The figures go to the test log.
// Shopify, Square and Paddle ship no signing side (they only verify), so
// they are checked in the second direction only; for Shopify the running
// hookbox and the library also judge the same mixed-form requests.
// Helpers here are prefixed sdk: other interop files share the package.

// Secrets of the interop config's sources, one per provider.
const (
	sdkStripeSecret   = "whsec_interop_stripe_0123456789"
	sdkStandardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	sdkBigCSecret     = "bigcommerce-interop-client-secret"
	sdkGitHubSecret   = "github interop secret"
	sdkShopifySecret  = "shpss_interop_0123456789abcdef"
	sdkSquareSecret   = "square-interop-signature-key"
	sdkPaddleSecret   = "pdl_ntfset_01interop_0123456789abcdef"
	sdkPublicURL      = "https://hooks.example.test"
)

// sdkConfig is the config of the interop suite: one source per provider.
func sdkConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
public_url = %q
data_dir = %q
`, sdkPublicURL, filepath.Join(dir, "data"))
	for _, s := range [][2]string{
		{"stripe", sdkStripeSecret}, {"standard", sdkStandardSecret}, {"bigcommerce", sdkBigCSecret},
		{"github", sdkGitHubSecret}, {"shopify", sdkShopifySecret}, {"square", sdkSquareSecret}, {"paddle", sdkPaddleSecret},
	} {
		cfg += fmt.Sprintf("\n[[source]]\nname = %q\nprovider = %q\nsecret = %q\n", s[0], s[0], s[1])
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sdkBodies are the bodies every case is tried with, unique per tag: each
// carries the id and topic fields of every provider that reads them from
// the body. One is compact, one is written the way Shopify writes (spaces,
// escaped slashes, \u escapes) with characters outside ASCII and a final
// newline, one is 64 KiB.
func sdkBodies(tag string) []sdkBody {
	fields := func(name string) string {
		return fmt.Sprintf(`"id":"evt_%[1]s","object":"event","type":"test.event","event_id":"ev_%[1]s","event_type":"test.event",`+
			`"hash":"h_%[1]s","scope":"store/order/created"`, tag+"-"+name)
	}
	return []sdkBody{
		{"compact", []byte(`{` + fields("compact") + `,"note":"plain"}`)},
		{"escaped", []byte(`{` + strings.ReplaceAll(fields("escaped"), `":"`, `": "`) + `, "note": "a\/b \u0026 <c> Grüße 🛒 \"q\" 100%"}` + "\n")},
		{"64KiB", []byte(`{` + fields("64KiB") + `,"note":"` + strings.Repeat("x", 64<<10) + `"}`)},
	}
}

// sdkBody is one body of the suite.
type sdkBody struct {
	name string
	b    []byte
}

// sdkTamper returns body with one byte changed.
func sdkTamper(body []byte) []byte {
	return bytes.Replace(body, []byte(`"note"`), []byte(`"nota"`), 1)
}

// sdkTally counts, per SDK and direction, the cases in which the SDK and
// hookbox agreed.
type sdkTally struct {
	mu   sync.Mutex
	rows map[[2]string]*[2]int // (sdk, direction) → agreed, cases
}

func (ty *sdkTally) add(sdk, direction string, agreed bool) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	if ty.rows == nil {
		ty.rows = map[[2]string]*[2]int{}
	}
	r := ty.rows[[2]string{sdk, direction}]
	if r == nil {
		r = &[2]int{}
		ty.rows[[2]string{sdk, direction}] = r
	}
	if agreed {
		r[0]++
	}
	r[1]++
}

// table renders the figures for the log.
func (ty *sdkTally) table() string {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	keys := make([][2]string, 0, len(ty.rows))
	for k := range ty.rows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	var b strings.Builder
	fmt.Fprintf(&b, "\n| SDK | direction | agree | disagree | cases |\n|---|---|---|---|---|\n")
	total := [2]int{}
	for _, k := range keys {
		r := ty.rows[k]
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |\n", k[0], k[1], r[0], r[1]-r[0], r[1])
		total[0] += r[0]
		total[1] += r[1]
	}
	fmt.Fprintf(&b, "| all | both | %d | %d | %d |\n", total[0], total[1]-total[0], total[1])
	return b.String()
}

// sdkVersions reads the pinned versions from the interop package.json.
func sdkVersions(t *testing.T, dir string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	return pkg.Dependencies
}

// sdkScript is one of the sdk-*.mjs scripts, running for the whole test:
// one JSON request per line in, one answer per line out (sdk-rpc.mjs).
type sdkScript struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	mu    sync.Mutex // one call at a time: answers come in order
	err   sdkLog     // what it printed on stderr
}

// startSDKScript starts script in dir with node and waits until it has
// loaded its SDKs.
func startSDKScript(t *testing.T, node, dir, script string) *sdkScript {
	t.Helper()
	n := &sdkScript{name: script, lines: make(chan string, 1)}
	n.cmd = exec.Command(node, script)
	n.cmd.Dir = dir
	n.cmd.Stderr = &n.err
	var err error
	if n.in, err = n.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(n.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			n.lines <- sc.Text()
		}
		n.cmd.Wait() // after the last read, as os/exec asks
		close(done)
	}()
	t.Cleanup(func() {
		n.in.Close() // the script ends when its input does
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			n.cmd.Process.Kill()
			<-done
		}
	})
	var ready struct{ Ready bool }
	n.read(t, &ready)
	if !ready.Ready {
		t.Fatalf("%s did not start", script)
	}
	return n
}

// read decodes the script's next answer into v.
func (n *sdkScript) read(t *testing.T, v any) {
	t.Helper()
	select {
	case line, ok := <-n.lines:
		if !ok {
			t.Fatalf("%s ended:\n%s", n.name, n.stderr())
		}
		var e struct{ Error string }
		if json.Unmarshal([]byte(line), &e); e.Error != "" {
			t.Fatalf("%s: %s", n.name, e.Error)
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			t.Fatalf("%s answered %q: %v", n.name, line, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not answer:\n%s", n.name, n.stderr())
	}
}

// call sends req and decodes the answer into v.
func (n *sdkScript) call(t *testing.T, req map[string]any, v any) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.in.Write(append(line, '\n')); err != nil {
		t.Fatalf("%s: %v\n%s", n.name, err, n.stderr())
	}
	n.read(t, v)
}

func (n *sdkScript) stderr() string { return n.err.String() }

// sdkLog is a buffer that a process writes while the test reads it.
type sdkLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *sdkLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *sdkLog) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// sdkVerdict is sdk-verify.mjs's answer.
type sdkVerdict struct {
	OK         bool     `json:"ok"`
	Reason     string   `json:"reason"`
	Missing    []string `json:"missing"`
	Type       string   `json:"type"`
	Topic      string   `json:"topic"`
	Domain     string   `json:"domain"`
	APIVersion string   `json:"api_version"`
	WebhookID  string   `json:"webhook_id"`
}

// sdkCaptured is a request `hookbox sign -send` made.
type sdkCaptured struct {
	path   string
	header http.Header
	body   []byte
}

// sdkHeaders is h as Node's http module gives it: lower-case names, the
// first value each.
func sdkHeaders(h http.Header) map[string]string {
	m := map[string]string{}
	for k, vs := range h {
		m[strings.ToLower(k)] = vs[0]
	}
	return m
}

func TestInterop_SDK(t *testing.T) {
	node := clitest.Node(t)
	dir := clitest.InteropDir(t)
	versions := sdkVersions(t, dir)
	label := func(pkg string) string { return pkg + " " + versions[pkg] }
	var ty sdkTally
	t.Cleanup(func() { t.Log("SDK agreement, both directions, real hookbox binary:" + ty.table()) })

	config := sdkConfig(t)
	p := startWith(t, config, nil)
	signer := startSDKScript(t, node, dir, "sdk-sign.mjs")
	verifier := startSDKScript(t, node, dir, "sdk-verify.mjs")

	const toHookbox, fromSign = "SDK signs → hookbox verifies", "hookbox sign → SDK verifies"

	// An SDK signs; the running hookbox must accept the genuine request
	// and refuse it with one byte of the body changed.
	t.Run("SDKSigns", func(t *testing.T) {
		for _, c := range []struct{ op, pkg, source, secret string }{
			{"stripe", "stripe", "stripe", sdkStripeSecret},
			{"svix", "svix", "standard", sdkStandardSecret},
			{"standardwebhooks", "standardwebhooks", "standard", sdkStandardSecret},
			{"standardwebhooks-raw", "standardwebhooks", "bigcommerce", sdkBigCSecret},
			{"octokit", "@octokit/webhooks-methods", "github", sdkGitHubSecret},
		} {
			t.Run(c.op+"/"+c.source, func(t *testing.T) {
				for _, b := range sdkBodies(c.op + "-" + c.source) {
					id := "msg_" + c.op + "_" + b.name
					var signed struct{ Headers map[string]string }
					signer.call(t, map[string]any{"sdk": c.op, "secret": c.secret, "body": base64.StdEncoding.EncodeToString(b.b), "id": id}, &signed)
					signed.Headers["Content-Type"] = "application/json"
					name := label(c.pkg) + " (" + c.source + ")"
					got := post(t, p.addr, c.source, b.b, signed.Headers)
					ok := got.code == 200 && got.body["status"] == "accepted"
					ty.add(name, toHookbox, ok)
					if !ok {
						t.Errorf("%s: hookbox answered %d %v to what %s signed", b.name, got.code, got.body, c.op)
					}
					got = post(t, p.addr, c.source, sdkTamper(b.b), signed.Headers)
					ty.add(name, toHookbox, got.code == 401)
					if got.code != 401 {
						t.Errorf("%s tampered: hookbox answered %d %v, want 401", b.name, got.code, got.body)
					}
				}
			})
		}
	})

	// hookbox sign sends (to a server that records what came); the SDK's
	// verify side must accept it, and refuse it tampered.
	caps := make(chan sdkCaptured, 1)
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 2<<20))
		caps <- sdkCaptured{path: r.URL.Path, header: r.Header.Clone(), body: body}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"accepted","id":"captured"}`)
	}))
	t.Cleanup(capture.Close)
	captureAddr := strings.TrimPrefix(capture.URL, "http://")
	sign := func(t *testing.T, source string, body []byte, args ...string) sdkCaptured {
		t.Helper()
		a := append([]string{"sign", "-config", config, "-listen", captureAddr, "-source", source}, args...)
		out, errOut, code := hookbox(t, body, append(a, "-send", "-")...)
		if code != 0 {
			t.Fatalf("hookbox %v: exit %d\n%s%s", a, code, out, errOut)
		}
		select {
		case c := <-caps:
			if !bytes.Equal(c.body, body) {
				t.Fatalf("sign sent a body of %d bytes, not the %d given", len(c.body), len(body))
			}
			return c
		case <-time.After(30 * time.Second):
			t.Fatal("sign -send reached no server")
		}
		return sdkCaptured{}
	}
	verify := func(t *testing.T, op, secret string, c sdkCaptured, body []byte) sdkVerdict {
		t.Helper()
		var v sdkVerdict
		verifier.call(t, map[string]any{"sdk": op, "secret": secret, "body": base64.StdEncoding.EncodeToString(body),
			"headers": sdkHeaders(c.header), "url": sdkPublicURL + c.path}, &v)
		return v
	}

	t.Run("HookboxSigns", func(t *testing.T) {
		for _, c := range []struct {
			op, pkg, source, secret string
			args                    []string
		}{
			{"shopify", "@shopify/shopify-api", "shopify", sdkShopifySecret, []string{"-shopify-headers", "legacy"}},
			{"shopify", "@shopify/shopify-api", "shopify", sdkShopifySecret, []string{"-shopify-headers", "new"}},
			{"shopify", "@shopify/shopify-api", "shopify", sdkShopifySecret, []string{"-shopify-headers", "both"}},
			{"square", "square", "square", sdkSquareSecret, nil},
			{"paddle", "@paddle/paddle-node-sdk", "paddle", sdkPaddleSecret, nil},
			{"stripe", "stripe", "stripe", sdkStripeSecret, nil},
			{"svix", "svix", "standard", sdkStandardSecret, nil},
			{"standardwebhooks", "standardwebhooks", "standard", sdkStandardSecret, nil},
			{"standardwebhooks-raw", "standardwebhooks", "bigcommerce", sdkBigCSecret, nil},
			{"octokit", "@octokit/webhooks-methods", "github", sdkGitHubSecret, nil},
		} {
			name := label(c.pkg) + " (" + c.source + ")"
			sub := c.op + "/" + c.source
			if len(c.args) > 0 {
				name = label(c.pkg) + " (" + c.source + ", " + c.args[1] + " headers)"
				sub += "/" + c.args[1]
			}
			t.Run(sub, func(t *testing.T) {
				for _, b := range sdkBodies("sign-" + strings.ReplaceAll(sub, "/", "-")) {
					req := sign(t, c.source, b.b, c.args...)
					v := verify(t, c.op, c.secret, req, b.b)
					ty.add(name, fromSign, v.OK)
					if !v.OK {
						t.Errorf("%s: %s refused what hookbox sign made: %+v\nheaders: %v", b.name, c.op, v, req.header)
					}
					if c.op == "shopify" {
						wantType := map[string]string{"legacy": "webhooks", "new": "events", "both": "events"}[c.args[1]]
						if v.Type != wantType || v.Topic != "ORDERS_CREATE" || v.Domain == "" || v.APIVersion == "" || v.WebhookID == "" {
							t.Errorf("%s: Shopify read %+v, want a %s webhook with every field", b.name, v, wantType)
						}
					}
					bad := verify(t, c.op, c.secret, req, sdkTamper(b.b))
					ty.add(name, fromSign, !bad.OK)
					if bad.OK {
						t.Errorf("%s: %s accepted a tampered body", b.name, c.op)
					}
				}
			})
		}
	})

	// The same request, one header form or the other, one HMAC wrong or
	// empty: hookbox and Shopify's library must give the same verdict (the
	// new form decides whenever present and not empty).
	t.Run("ShopifySameVerdict", func(t *testing.T) {
		name := label("@shopify/shopify-api") + " (shopify, headers mixed or wrong)"
		other := sign(t, "shopify", []byte(`{"other":true}`)).header.Get("X-Shopify-Hmac-Sha256") // well-formed, of another body
		drop := func(prefix string) func(http.Header) {
			return func(h http.Header) {
				for k := range h {
					if strings.HasPrefix(k, prefix) {
						h.Del(k)
					}
				}
			}
		}
		set := func(k, v string) func(http.Header) { return func(h http.Header) { h.Set(k, v) } }
		for _, tc := range []struct {
			name   string
			change func(http.Header)
			want   bool
		}{
			{"Both", func(http.Header) {}, true},
			{"LegacyOnly", drop("Shopify-"), true},
			{"NewOnly", drop("X-Shopify-"), true},
			{"LegacyWrong", set("X-Shopify-Hmac-Sha256", other), true},
			{"LegacyMalformed", set("X-Shopify-Hmac-Sha256", "not base64!"), true},
			{"NewEmpty", set("Shopify-Hmac-Sha256", ""), true},
			{"NewWrong", set("Shopify-Hmac-Sha256", other), false},
			{"NewMalformed", set("Shopify-Hmac-Sha256", "not base64!"), false},
			{"NewOnlyWrong", func(h http.Header) { drop("X-Shopify-")(h); h.Set("Shopify-Hmac-Sha256", other) }, false},
			{"NoHMAC", func(h http.Header) { h.Del("X-Shopify-Hmac-Sha256"); h.Del("Shopify-Hmac-Sha256") }, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := sdkBodies("same-" + tc.name)[1].b
				req := sign(t, "shopify", body, "-shopify-headers", "both")
				for _, k := range []string{"Accept-Encoding", "Content-Length", "User-Agent"} {
					req.header.Del(k) // the client's, not sign's
				}
				tc.change(req.header)
				v := verify(t, "shopify", sdkShopifySecret, req, body)
				h := map[string]string{}
				for k := range req.header {
					h[k] = req.header.Get(k)
				}
				got := post(t, p.addr, "shopify", body, h)
				ours := got.code == 200 && got.body["status"] == "accepted"
				ty.add(name, "hookbox and SDK verify the same request", ours == v.OK)
				if ours != v.OK || ours != tc.want {
					t.Errorf("hookbox %d %v, Shopify's library %+v; want both %v", got.code, got.body, v, tc.want)
				}
			})
		}
	})
}
