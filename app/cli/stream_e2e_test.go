package cli_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
)

// serve's stream, on both stores: a routed event (the store's OnOpened
// wakes the hub) and an unrouted one (its poll finds it) arrive on GET
// /api/v1/stream, and stopping serve ends the stream at once.
func TestServe_Stream(t *testing.T) {
	eachStore(t, func(t *testing.T, st storeCase) {
		dir := t.TempDir()
		config := writeConfigServer(t, dir, "", `[status]
user = "ops"
password = "stream-password-1"
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
[[destination]]
name = "pos"
url = "http://127.0.0.1:1/never"
[[route]]
source = "shop"
topics = ["orders/*"]
to = ["pos"]
`+st.config(15*time.Second))
		p := startWith(t, config, []string{"E2E_GH_SECRET=" + e2eSecret})
		addr := p.addr
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/stream", nil)
		req.SetBasicAuth("ops", "stream-password-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("stream: %d", res.StatusCode)
		}
		lines := make(chan string, 64)
		go func() {
			defer close(lines)
			r := bufio.NewReader(res.Body)
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if strings.HasPrefix(l, "data: ") {
					lines <- l
				}
			}
		}()
		next := func() string {
			select {
			case l := <-lines:
				return l
			case <-time.After(time.Minute):
				t.Fatal("no message for a minute")
			}
			return ""
		}
		if l := next(); !strings.Contains(l, `"kind":"`+app.StreamNoticeReady+`"`) {
			t.Fatalf("first message %q; want ready", l)
		}
		for _, c := range [][2]string{{"routed", "orders/create"}, {"unrouted", "products/update"}} {
			body := []byte(`{"id":"` + c[0] + `"}`)
			h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("s3cret-shop")}}, body, "", c[0], c[1], time.Now())
			if err != nil {
				t.Fatal(err)
			}
			in, _ := http.NewRequest("POST", "http://"+addr+"/in/shop", strings.NewReader(string(body)))
			in.Header = h
			ans, err := http.DefaultClient.Do(in)
			if err != nil {
				t.Fatal(err)
			}
			ans.Body.Close()
			if l := next(); !strings.Contains(l, `"id":"`+c[0]+`"`) {
				t.Fatalf("got %q; want the %s event", l, c[0])
			}
		}
		start := time.Now()
		p.stop(t)
		for range lines { // the stream ends
		}
		if took := time.Since(start); took >= app.StreamPing {
			t.Fatalf("serve took %s to stop with a stream open", took)
		} else {
			t.Logf("serve stopped in %s with a stream open", took)
		}
	})
}
