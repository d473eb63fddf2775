package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// bench -compare loads a verify-only server and a real hookbox with a
// route to its sink, closed and open loop: every request is answered 200,
// every accepted event reaches the sink, and the JSON holds both results.
func TestBench_Compare(t *testing.T) {
	for _, mode := range [][]string{{"-c", "4"}, {"-rate", "200"}, {"-backlog", "20000", "-rate", "200", "-warmup", "0s"}} {
		t.Run(mode[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bench.json")
			args := append([]string{"bench", "-compare", "-d", "1s", "-warmup", "100ms", "-json", out}, mode...)
			stdout, stderr, code := hookbox(t, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "ratio: hookbox answers") {
				t.Fatalf("no ratio printed:\n%s", stdout)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var rs []benchResult
			if err := json.Unmarshal(b, &rs); err != nil {
				t.Fatal(err)
			}
			if len(rs) != 2 {
				t.Fatalf("%d results, want the ceiling and hookbox", len(rs))
			}
			for _, r := range rs {
				if _, err := os.Stat("/proc/stat"); err == nil && (r.MachineCPUs == 0 || r.MachineBusyPct <= 0 || r.MachineBusyPct > 100 || r.MachineCPUPerReqUS <= 0) {
					t.Errorf("%s: machine CPU %d CPUs, %.1f%% busy, %.1f µs per request", r.Target, r.MachineCPUs, r.MachineBusyPct, r.MachineCPUPerReqUS)
				}
				if r.Requests == 0 || r.Status["200"] != r.Requests || r.Errors != 0 || r.Throughput <= 0 || r.P99MS <= 0 {
					t.Errorf("%s: %d requests, status %v, %d errors, %.0f/s, p99 %.2f ms", r.Target, r.Requests, r.Status, r.Errors, r.Throughput, r.P99MS)
				}
			}
			if hb := rs[1]; hb.Delivered < hb.Status["200"] || hb.DeliveryP99MS <= 0 {
				t.Errorf("%d of %d accepted events reached the sink (p99 %.2f ms)", hb.Delivered, hb.Status["200"], hb.DeliveryP99MS)
			}
			if hb := rs[1]; mode[0] == "-backlog" && (hb.Backlog != 20000 || hb.BacklogDrainSec <= 0) {
				t.Errorf("backlog %d drained in %.2fs, want 20000 drained", hb.Backlog, hb.BacklogDrainSec)
			}
		})
	}
}

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
	c, err := app.LoadConfig(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Sources[0]
}

// pickPort gives ports below the kernel's ephemeral range, where no
// outgoing connection or port-0 listener can take them before the server
// binds them, and each one can be bound.
func TestBench_PickPort(t *testing.T) {
	top := ephemeralLow()
	for range 50 {
		port, err := pickPort()
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
