package bench

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
)

// The sink reads back the id and send time that the load wrote.
func TestBench_SinkFields(t *testing.T) {
	sent := time.Unix(1700000000, 123456789)
	body, _, err := newSigner(benchSource(t)).request("evt_42", 512, sent)
	if err != nil {
		t.Fatal(err)
	}
	id, ns, ok := sinkFields(body)
	if !ok || string(id) != "evt_42" || ns != sent.UnixNano() {
		t.Fatalf("sinkFields = %q, %d, %v", id, ns, ok)
	}
	for _, bad := range []string{``, `{}`, `{"id":"x"}`, `{"id":"x","sent_ns":zz,`, `{"id":"x`} {
		if _, _, ok := sinkFields([]byte(bad)); ok {
			t.Errorf("sinkFields(%q) ok", bad)
		}
	}
}

// The machine's CPU comes from /proc/stat's aggregate line: idle and
// iowait are idle, steal is neither, and each cpuN line is one CPU.
func TestBench_ProcStat(t *testing.T) {
	const before = "cpu  100 5 50 1000 40 3 7 20 0 0\ncpu0 50 2 25 500 20 1 3 10 0 0\ncpu1 50 3 25 500 20 2 4 10 0 0\nintr 12345\nctxt 999\n"
	const after = "cpu  250 5 100 1100 60 5 15 120 0 0\ncpu0 125 2 50 550 30 2 7 60 0 0\ncpu1 125 3 50 550 30 3 8 60 0 0\nintr 23456\n"
	m0, ok0 := parseProcStat([]byte(before))
	m1, ok1 := parseProcStat([]byte(after))
	if !ok0 || !ok1 || m0.cpus != 2 || m0.busy != 165 || m0.total != 1205 {
		t.Fatalf("parsed %+v %v, %+v %v", m0, ok0, m1, ok1)
	}
	// busy 165 → 375 (+210), idle+iowait 1040 → 1160 (+120), steal apart.
	if share, ok := m1.busyShare(m0); !ok || share != 210.0/330.0 {
		t.Errorf("busy share %v %v, want %v", share, ok, 210.0/330.0)
	}
	if _, ok := m0.busyShare(m1); ok {
		t.Error("a later reading taken as earlier gave a share")
	}
	for _, bad := range []string{"", "intr 1\n", "cpu  1 2 3\ncpu0 1 2 3\n", "cpu  1 2 x 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n", "cpu  1 2 3 4 5 6 7 8\n"} {
		if m, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("parseProcStat(%q) = %+v, ok", bad, m)
		}
	}
}

// benchSource is a shopify source loaded from a config, as bench signs for.
func benchSource(t *testing.T) *app.Source {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hookbox.toml")
	cfg := "[server]\ndata_dir = " + strconv.Quote(t.TempDir()) + "\n[status]\npassword = \"pw-for-tests\"\n" +
		"[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"shop-secret\"\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Sources[0]
}

// PickPort gives ports below the kernel's ephemeral range, where no
// outgoing connection or port-0 listener can take them before the server
// binds them, and each one can be bound.
func TestBench_PickPort(t *testing.T) {
	top := ephemeralLow()
	for range 50 {
		port, err := PickPort()
		if err != nil {
			t.Fatal(err)
		}
		if top > 10000 && (port < 10000 || port >= top) {
			t.Fatalf("port %d is not in [10000, %d)", port, top)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		ln.Close()
	}
}
