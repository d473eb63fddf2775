package web_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/metrics"
	"hookbox/app/web"
)

// alerts records what TLS.Alert was told.
type alerts struct {
	mu  sync.Mutex
	got []string // topic: text
}

func (a *alerts) alert(topic, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, topic+": "+text)
}

// has reports whether an alert of topic containing want was told.
func (a *alerts) has(topic, want string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, g := range a.got {
		if strings.HasPrefix(g, topic+": ") && strings.Contains(g, want) {
			return true
		}
	}
	return false
}

// wait waits until an alert of topic containing want was told.
func (a *alerts) wait(t *testing.T, topic, want string) string {
	t.Helper()
	var found string
	apptest.Until(t, 10*time.Second, func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, g := range a.got {
			if strings.HasPrefix(g, topic+": ") && strings.Contains(g, want) {
				found = g
				return nil
			}
		}
		return fmt.Errorf("no %s alert with %q; got:\n%s", topic, want, strings.Join(a.got, "\n"))
	})
	return found
}

// filesTLS is TLS in files mode over certFile and keyFile, reloading and
// checking every few milliseconds.
func filesTLS(t *testing.T, certFile, keyFile string) *web.TLS {
	t.Helper()
	cfg, err := config.Parse("t.toml", fmt.Sprintf("[server]\nlisten = \"127.0.0.1:0\"\ncert_file = %q\nkey_file = %q\n"+
		"[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret = \"x\"\n", certFile, keyFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := web.NewTLS(cfg.Server, web.TLSOptions{ReloadEvery: 10 * time.Millisecond, CheckEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// serial is the serial of the certificate tl serves.
func serial(t *testing.T, tl *web.TLS) int64 {
	t.Helper()
	c, err := tl.Config.GetCertificate(&tls.ClientHelloInfo{ServerName: "hooks.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(c.Certificate[0])
	return leaf.SerialNumber.Int64()
}

// A renewed pair that fails to load, then is fixed in a way that changes
// neither size, time nor identity of the files (as chmod does): the
// failure is reported, and the pair is tried again until it loads.
func TestTLS_CertFilesRetryFailedLoad(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePair(t, certFile, keyFile, "hooks.example.com", 1)
	tl := filesTLS(t, certFile, keyFile)
	var al alerts
	tl.Alert = al.alert

	// Pair 2, whose key file holds pair 3's key for now: it does not load.
	writePair(t, certFile, keyFile, "hooks.example.com", 2)
	goodKey, _ := os.ReadFile(keyFile)
	good, _ := os.Stat(keyFile)
	writePair(t, certFile+".3", keyFile+".3", "hooks.example.com", 3)
	wrongKey, _ := os.ReadFile(keyFile + ".3")
	if len(wrongKey) != len(goodKey) {
		t.Skip("the two keys differ in length")
	}
	writeInPlace(t, keyFile, wrongKey, good.ModTime())
	// The pair is tried again at a handshake once ReloadEvery has passed:
	// handshake until the alert says it was tried (the signal), checking
	// that the previous pair is served all along.
	apptest.Eventually(t, 5*time.Second, "the pair that does not load tried", func() bool {
		if got := serial(t, tl); got != 1 {
			t.Fatalf("serial %d after a pair that does not load, want the previous 1", got)
		}
		return al.has(web.AlertCertFiles, "do not load")
	})
	if got := serial(t, tl); got != 1 {
		t.Fatalf("serial %d after a pair that does not load, want the previous 1", got)
	}
	al.wait(t, web.AlertCertFiles, "do not load")

	// The fix: the right key, same size, same time, same file.
	writeInPlace(t, keyFile, goodKey, good.ModTime())
	apptest.Eventually(t, 5*time.Second, "the fixed pair loaded", func() bool { return serial(t, tl) == 2 })
}

// writeInPlace rewrites path's content without replacing the file, and
// gives it back the modification time mtime.
func writeInPlace(t *testing.T, path string, data []byte, mtime time.Time) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	f.Close()
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// A certificate within 14 days of its expiry is reported (log and alert)
// by Watch, and the metric says how long it has left.
func TestTLS_WatchExpiry(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	leaf := writePair(t, certFile, keyFile, "hooks.example.com", 7) // valid for a day
	tl := filesTLS(t, certFile, keyFile)
	var al alerts
	tl.Alert = al.alert
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tl.Watch(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	al.wait(t, web.AlertCertExpiry, "hooks.example.com expires in 2")

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.CertificateExpiry(tl.NotAfter))
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "hookbox_certificate_expiry_seconds" {
		t.Fatalf("metrics %v, %v", mfs, err)
	}
	got := mfs[0].GetMetric()[0].GetGauge().GetValue()
	if want := time.Until(leaf.NotAfter).Seconds(); got < want-60 || got > want+60 {
		t.Errorf("hookbox_certificate_expiry_seconds = %.0f, want about %.0f", got, want)
	}
}

// An ACME CA (or whatever answers for it) that streams an endless answer:
// getting a certificate fails soon, having read a bounded part of it.
func TestTLS_ACMEAnswersBounded(t *testing.T) {
	var written atomic.Int64
	hostile := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"newNonce": "`)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for written.Load() < 256<<20 {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		io.WriteString(w, `"}`)
	}))
	t.Cleanup(hostile.Close)
	cfg, err := config.Parse("t.toml", fmt.Sprintf("[server]\nlisten = \"127.0.0.1:0\"\ndomain = \"hooks.example.com\"\n"+
		"acme_directory = %q\ndata_dir = %q\n[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret = \"x\"\n",
		hostile.URL+"/directory", t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := web.NewTLS(cfg.Server, web.TLSOptions{HTTPClient: hostile.Client()})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err = tl.Obtain(ctx)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("Obtain: %v after %v, %d MiB allocated; the CA wrote %d MiB", err, time.Since(start).Round(time.Millisecond), alloc>>20, written.Load()>>20)
	if err == nil {
		t.Fatal("got a certificate from a CA that never finished its directory")
	}
	if alloc > 64<<20 {
		t.Errorf("%d MiB allocated reading the CA's answers", alloc>>20)
	}
}
