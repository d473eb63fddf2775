package cli_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app/cli/clitest"
	"hookbox/app/provider"
)

// The stream carries no provider's signature: `hookbox listen` re-signs
// each forward with its listen secret, in the source's own scheme, so that
// a local app verifies it with the provider's official SDK given the listen
// secret in place of the provider's. TestInterop_ListenSDK checks exactly
// that against the real binaries: a hookbox with one source per provider
// (sdkConfig), a genuine event posted to each, one `hookbox listen
// -secret` forwarding them to a server that records each request, and each
// recorded forward judged by the SDKs of sdk-verify.mjs: accepted with the
// listen secret, refused with one byte of the body changed, refused with
// the source's own secret (listen signs with its own, never passes the
// sender's on).

// listenSDKSecret is the listen secret of the test: whsec_ and the
// base64 of 32 bytes, as listen's own are.
var listenSDKSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("hookbox listen interop key 32 B!"))

// listenSDKReadyRE is listen's line once it is subscribed.
var listenSDKReadyRE = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d \S+  Ready, forwarding events of `)

// listenSDKCase is one genuine event and the SDKs that judge its forward.
type listenSDKCase struct {
	name, source string
	secret       string                // the source's, which the genuine sender signs with
	ops          []string              // sdk-verify.mjs operations, all of which must accept
	pkg          string                // the npm package, for the figures
	shopify      string                // the Shopify header form the sender uses
	signedAt     time.Duration         // how long before now the sender signed (Stripe: not fresh)
	rename       func(h http.Header)   // changes the genuine headers (Svix's names)
	carries      []string              // headers the forward must have, besides what the SDKs read
	check        func(sdkVerdict) bool // what the SDK must also have read, when set
}

func TestInterop_ListenSDK(t *testing.T) {
	node := clitest.Node(t)
	dir := clitest.InteropDir(t)
	versions := sdkVersions(t, dir)
	var ty sdkTally
	t.Cleanup(func() { t.Log("SDK verdicts on what hookbox listen forwards, real binaries:" + ty.table()) })
	verifier := startSDKScript(t, node, dir, "sdk-verify.mjs")

	config := sdkConfig(t)
	t.Setenv("E2E_STATUS_PASSWORD", "pw-e2e") // token create and serve read the config
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.WriteString(f, "\n[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := hookbox(t, nil, "token", "create", "-name", "laptop", "-role", "viewer", "-config", config)
	if code != 0 || !viewerTokenLine.MatchString(out) {
		t.Fatalf("token create: %d\n%s%s", code, out, errOut)
	}
	token := viewerTokenLine.FindStringSubmatch(out)[1]
	p := startWith(t, config, []string{"E2E_STATUS_PASSWORD=pw-e2e"})

	// The local app: records each request listen forwards.
	caps := make(chan sdkCaptured, 4)
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 2<<20))
		caps <- sdkCaptured{path: r.URL.RequestURI(), header: r.Header.Clone(), body: body}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(local.Close)
	// A query in it too: Square signs the whole notification URL.
	const forwardPath = "/webhooks/in?via=listen"
	forward := local.URL + forwardPath

	ln := startListen(t, []string{"HOOKBOX_TOKEN=" + token}, "http://"+p.addr, "-forward", forward, "-secret", listenSDKSecret)
	ln.wait(t, listenSecretRE, 1)
	if got := listenSecretRE.FindStringSubmatch(ln.text())[1]; got != listenSDKSecret {
		t.Fatalf("listen printed the secret %q; want the one given with -secret", got)
	}
	ln.wait(t, listenSDKReadyRE, 1)

	svixNames := func(h http.Header) {
		for _, k := range [][2]string{{"Webhook-Id", "Svix-Id"}, {"Webhook-Timestamp", "Svix-Timestamp"}, {"Webhook-Signature", "Svix-Signature"}} {
			h[k[1]] = h[k[0]]
			delete(h, k[0])
		}
	}
	shopifyRead := func(v sdkVerdict) bool {
		return v.Topic == "ORDERS_CREATE" && v.Domain != "" && v.APIVersion != "" && v.WebhookID != ""
	}
	cases := []listenSDKCase{
		// Paddle's SDK refuses a signature older than 5 s: judged first.
		{name: "paddle", source: "paddle", secret: sdkPaddleSecret, ops: []string{"paddle"}, pkg: "@paddle/paddle-node-sdk"},
		// Signed 4 minutes ago, within hookbox's 5: the forward passes a 60 s
		// tolerance only with a timestamp of listen's own.
		{name: "stripe", source: "stripe", secret: sdkStripeSecret, ops: []string{"stripe"}, pkg: "stripe", signedAt: 4 * time.Minute},
		{name: "standard", source: "standard", secret: sdkStandardSecret, ops: []string{"standardwebhooks", "svix"}, pkg: "standardwebhooks, svix"},
		{name: "standard-svix-names", source: "standard", secret: sdkStandardSecret, ops: []string{"svix"}, pkg: "svix", rename: svixNames,
			carries: []string{"Svix-Id", "Svix-Timestamp", "Svix-Signature"}}, // svix reads them first
		{name: "bigcommerce", source: "bigcommerce", secret: sdkBigCSecret, ops: []string{"standardwebhooks-raw"}, pkg: "standardwebhooks"},
		{name: "github", source: "github", secret: sdkGitHubSecret, ops: []string{"octokit"}, pkg: "@octokit/webhooks-methods"},
		{name: "shopify-legacy", source: "shopify", secret: sdkShopifySecret, ops: []string{"shopify"}, pkg: "@shopify/shopify-api",
			shopify: provider.ShopifyLegacy, check: func(v sdkVerdict) bool { return shopifyRead(v) && v.Type == "webhooks" }},
		{name: "shopify-new", source: "shopify", secret: sdkShopifySecret, ops: []string{"shopify"}, pkg: "@shopify/shopify-api",
			shopify: provider.ShopifyNew, check: func(v sdkVerdict) bool { return shopifyRead(v) && v.Type == "events" }},
		{name: "shopify-both", source: "shopify", secret: sdkShopifySecret, ops: []string{"shopify"}, pkg: "@shopify/shopify-api",
			shopify: provider.ShopifyBoth, check: func(v sdkVerdict) bool { return shopifyRead(v) && v.Type == "events" }},
		{name: "square", source: "square", secret: sdkSquareSecret, ops: []string{"square"}, pkg: "square"},
	}
	verify := func(t *testing.T, op, secret string, c sdkCaptured, body []byte) sdkVerdict {
		t.Helper()
		var v sdkVerdict
		req := map[string]any{"sdk": op, "secret": secret, "body": base64.StdEncoding.EncodeToString(body),
			"headers": sdkHeaders(c.header), "url": forward}
		if op == "stripe" {
			req["tolerance"] = 60
		}
		verifier.call(t, req, &v)
		return v
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := sdkBodies("listen-" + c.name)[1].b // Shopify's spelling, non-ASCII, a final newline
			id := fmt.Sprintf("listen-sdk-%d", i)
			genuine, err := provider.SignWith(c.source, provider.Settings{Secrets: [][]byte{[]byte(c.secret)}}, body,
				sdkPublicURL+"/in/"+c.source, id, "orders/create", time.Now().Add(-c.signedAt), provider.SignOptions{ShopifyHeaders: c.shopify})
			if err != nil {
				t.Fatal(err)
			}
			if c.rename != nil {
				c.rename(genuine)
			}
			h := map[string]string{}
			for k := range genuine {
				h[k] = genuine.Get(k)
			}
			if got := post(t, p.addr, c.source, body, h); got.code != http.StatusOK || got.body["status"] != "accepted" {
				t.Fatalf("hookbox answered %d %v to the genuine event", got.code, got.body)
			}
			var fw sdkCaptured
			select {
			case fw = <-caps:
			case <-ln.done:
				t.Fatalf("hookbox listen exited:\n%s\nstderr:\n%s", ln.text(), ln.errb.String())
			case <-time.After(60 * time.Second):
				t.Fatalf("listen forwarded nothing in a minute:\n%s", ln.text())
			}
			if fw.path != forwardPath || !bytes.Equal(fw.body, body) {
				t.Fatalf("listen forwarded %d bytes to %s; want the %d of the event to %s", len(fw.body), fw.path, len(body), forwardPath)
			}
			for _, k := range c.carries {
				if fw.header.Get(k) == "" {
					t.Errorf("the forward has no %s, which the sender sent: %v", k, fw.header)
				}
			}
			for _, k := range []string{"Stripe-Signature", "Webhook-Signature", "Svix-Signature", "X-Hub-Signature-256",
				"X-Shopify-Hmac-Sha256", "Shopify-Hmac-Sha256", "X-Square-Hmacsha256-Signature", "Paddle-Signature"} {
				if v := genuine.Get(k); v != "" && strings.Contains(strings.Join(fw.header.Values(k), " "), v) {
					t.Errorf("the forward carries the sender's own %s", k)
				}
			}
			name := func(op string) string {
				pkg := map[string]string{"standardwebhooks": "standardwebhooks", "standardwebhooks-raw": "standardwebhooks", "svix": "svix"}[op]
				if pkg == "" {
					pkg = c.pkg
				}
				return pkg + " " + versions[pkg] + " (" + c.name + ")"
			}
			for _, op := range c.ops {
				v := verify(t, op, listenSDKSecret, fw, body)
				ok := v.OK && (c.check == nil || c.check(v))
				ty.add(name(op), "listen → SDK: genuine accepted", ok)
				if !ok {
					t.Errorf("%s refused what listen forwarded, with the listen secret: %+v\nheaders: %v", op, v, fw.header)
				}
				bad := verify(t, op, listenSDKSecret, fw, sdkTamper(body))
				ty.add(name(op), "listen → SDK: tampered refused", !bad.OK)
				if bad.OK {
					t.Errorf("%s accepted the forward with its body tampered", op)
				}
				other := verify(t, op, c.secret, fw, body)
				ty.add(name(op), "listen → SDK: source's secret refused", !other.OK)
				if other.OK {
					t.Errorf("%s accepted the forward with the source's secret: listen passed the sender's signature on", op)
				}
			}
		})
	}
}
