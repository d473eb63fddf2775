package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check prints what goes where: each source with the URL to paste, each
// destination with how it is reached and its limits (the URL's query
// and a command's arguments left out: either may hold a secret), each
// route from source and topics to destinations with its rules, and
// warnings for a source no route takes and a destination no route names.
func TestCheck_WhatGoesWhere(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "on-order")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.toml")
	text := `[server]
public_url = "https://hooks.example.com"
data_dir = "data"

[[source]]
name = "shop"
provider = "shopify"
secret_env = "HOOKBOX_TEST_SHOP_SECRET"

[[source]]
name = "gh"
provider = "github"
secret_env = "HOOKBOX_TEST_SHOP_SECRET"

[[destination]]
name = "pos"
url = "https://pos.example.com/hooks?token=q-t0k3n-q"
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
rate = "10/s"
concurrency = 4
timeout = "20s"
retry = ["1m", "10m"]

[[destination]]
name = "on-order"
command = ["` + prog + `", "--token", "arg-t0k3n"]
retry = []

[[destination]]
name = "old"
url = "https://old.example.com/hooks"

[[route]]
name = "orders"
source = "shop"
topics = ["orders/*", "refunds/create"]
to = ["pos", "on-order"]
filter = '''
double(body.total_price)
  > 100.0'''
key = "{header.X-Shopify-Shop-Domain}:{body.id}"
debounce = "1m"
order_key = "{body.id}"

[[route]]
source = "shop"
to = ["pos"]
`
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOOKBOX_TEST_SHOP_SECRET", "shop-secret")
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"check", "-config", config, "-listen", "127.0.0.1:0"}, &out, &errOut); code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	// Compared a line at a time, spaces squeezed: the columns may change.
	lines := map[string]bool{}
	for _, l := range strings.Split(out.String(), "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{
		"source shop shopify POST https://hooks.example.com/in/shop",
		"source gh github POST https://hooks.example.com/in/gh",
		"destination pos POST https://pos.example.com/hooks?… (signed)",
		"retry 1m 10m, rate 10/s, concurrency 4, timeout 20s",
		"destination on-order runs " + prog + " with 2 arguments",
		"no retry, rate unlimited, concurrency 8, timeout 15s",
		"destination old POST https://old.example.com/hooks",
		"route orders from shop (topics orders/*, refunds/create) to pos, on-order",
		"filter double(body.total_price) > 100.0",
		"key {header.X-Shopify-Shop-Domain}:{body.id}, debounce 1m",
		"order_key {body.id}",
		"route route-2 from shop (every topic) to pos",
	} {
		if !lines[want] {
			t.Errorf("check's output lacks the line %q:\n%s", want, out.String())
		}
	}
	for _, secret := range []string{"q-t0k3n-q", "arg-t0k3n", "--token", "shop-secret", "MfKQ9r8G"} {
		if strings.Contains(out.String()+errOut.String(), secret) {
			t.Errorf("check shows %q:\n%s%s", secret, out.String(), errOut.String())
		}
	}
	for _, want := range []string{
		`warning: source "gh" is taken by no route: its events are stored and go nowhere`,
		`warning: destination "old" is named by no route: nothing is sent to it`,
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("check's warnings lack %q:\n%s", want, errOut.String())
		}
	}
	if strings.Contains(errOut.String(), `source "shop"`) || strings.Contains(errOut.String(), `destination "pos"`) {
		t.Errorf("a warning about what is wired:\n%s", errOut.String())
	}
}
