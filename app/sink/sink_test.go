package sink_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/dispatch"
	"hookbox/app/httpsend"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/sink"
	"hookbox/storage/bboltstore"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// lines is the sink's output, read while it writes.
type lines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *lines) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// startSink serves a sink with secret on 127.0.0.1 and returns its URL.
func startSink(t *testing.T, secret string, out *lines) string {
	t.Helper()
	s, err := sink.New(secret, out)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String() + "/hooks"
}

// TestSink_RealDeliveries has a real hookbox receiver and dispatcher, on a
// bbolt file, deliver one event to two sinks: one that knows the
// destination's secret and one that has another.
func TestSink_RealDeliveries(t *testing.T) {
	var good, wrong lines
	goodURL := startSink(t, secret, &good)
	wrongURL := startSink(t, "whsec_"+strings.Repeat("A", 32), &wrong)
	cfg, err := config.Parse("test.toml", fmt.Sprintf(`
[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"
[[destination]]
name = "good"
url = %q
secret = %q
[[destination]]
name = "wrong"
url = %q
secret = %q
retry = ["1h"]
[[route]]
source = "gh"
topics = ["push"]
to = ["good", "wrong"]
`, goodURL, secret, wrongURL, secret), nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	recv, disp := receive.New(cfg, db), dispatch.New(cfg, db, httpsend.New(cfg, "dev"))
	db.OnOpened(disp.Wake)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { disp.Run(ctx, ctx); close(done) }()
	defer func() { cancel(); <-done; disp.Wait(); db.Close() }()

	body := []byte(`{"order": 1}`)
	h, err := provider.Sign("github", provider.Settings{Secrets: [][]byte{[]byte("gh-secret")}}, body, "", "evt-1", "push", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	in := &app.Inbound{Body: body}
	for k, vs := range h {
		for _, v := range vs {
			in.Header = append(in.Header, app.HeaderField{Name: k, Value: v})
		}
	}
	if res, err := recv.Receive(ctx, "gh", in); err != nil || res.Outcome != app.Accepted {
		t.Fatalf("Receive = %+v, %v", res, err)
	}
	_, seq, _, err := db.LookupID(context.Background(), "gh", "evt-1")
	if err != nil {
		t.Fatal(err)
	}
	apptest.Until(t, 20*time.Second, func() error {
		ds, err := db.EventDeliveries(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]app.DeliveryState{}
		attempts := map[string]int{}
		for _, d := range ds {
			states[d.Destination], attempts[d.Destination] = d.State, d.Attempts
		}
		if states["good"] != app.Delivered || attempts["wrong"] == 0 {
			return fmt.Errorf("deliveries %+v; want good delivered and wrong tried", ds)
		}
		if states["wrong"] != app.Pending {
			t.Fatalf("the delivery the sink refused is %v, want pending (retrying)", states["wrong"])
		}
		return nil
	})
	line := regexp.MustCompile(`^\d\d:\d\d:\d\d \S+ msg_\S+ source=gh event=evt-1 topic=push attempt=1 bytes=12 signature ok\n$`)
	if !line.MatchString(good.String()) {
		t.Errorf("good sink printed %q", good.String())
	}
	if !strings.Contains(wrong.String(), "event=evt-1") || !strings.Contains(wrong.String(), "signature BAD (signature does not match)") {
		t.Errorf("wrong-secret sink printed %q", wrong.String())
	}
}

func TestSink_Edges(t *testing.T) {
	var out lines
	url := startSink(t, secret, &out)
	client := &http.Client{Timeout: 10 * time.Second}
	t.Run("Unsigned", func(t *testing.T) {
		resp, err := client.Post(url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(out.String(), "signature BAD (missing signature)") {
			t.Fatalf("status %d, output %q", resp.StatusCode, out.String())
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		resp, err := client.Post(url, "application/json", bytes.NewReader(make([]byte, sink.DefaultMaxBody+1)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("HostileHeaders", func(t *testing.T) {
		// Go's client refuses to send some of these bytes: write by hand.
		// (The server answers 400 to ASCII control characters itself.)
		c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/hooks"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /hooks HTTP/1.1\r\nHost: x\r\nX-Hookbox-Topic: a\u202eb %s\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx", strings.Repeat("t", 500))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		o := out.String()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(o, "topic=a?b?ttt") || strings.Contains(o, "\u202e") || strings.Contains(o, strings.Repeat("t", 101)) {
			t.Fatalf("a peer's header reached the terminal as sent: %q", o)
		}
	})
	t.Run("Get", func(t *testing.T) {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("ErrBadSecret", func(t *testing.T) {
		if _, err := sink.New("not-a-secret", &out); err == nil {
			t.Fatal("a secret that is not whsec_… was taken")
		}
	})
}
