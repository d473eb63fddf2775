package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/app/bench"
)

// bench -compare loads a verify-only server, a stateless relay to its sink
// and a real hookbox with a route to that sink, closed and open loop: every
// request is answered 200, every accepted or relayed event reaches the
// sink, and the JSON holds every result (no relay with -backlog: there is
// no backlog to relay).
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
			var rs []bench.Result
			if err := json.Unmarshal(b, &rs); err != nil {
				t.Fatal(err)
			}
			want := 3
			if mode[0] == "-backlog" {
				want = 2
			}
			if len(rs) != want {
				t.Fatalf("%d results, want %d (the ceiling, the relay but with -backlog, hookbox)", len(rs), want)
			}
			if want == 3 {
				if relay := rs[1]; !strings.HasPrefix(relay.Target, "stateless relay") || relay.Delivered < relay.Status["200"] {
					t.Errorf("%s: %d of %d relayed events reached the sink", relay.Target, relay.Delivered, relay.Status["200"])
				}
				if !strings.Contains(stdout, "relay: hookbox answers") {
					t.Errorf("no ratio to the relay printed:\n%s", stdout)
				}
			}
			for _, r := range rs {
				if _, err := os.Stat("/proc/stat"); err == nil && (r.MachineCPUs == 0 || r.MachineBusyPct <= 0 || r.MachineBusyPct > 100 || r.MachineCPUPerReqUS <= 0) {
					t.Errorf("%s: machine CPU %d CPUs, %.1f%% busy, %.1f µs per request", r.Target, r.MachineCPUs, r.MachineBusyPct, r.MachineCPUPerReqUS)
				}
				if r.Requests == 0 || r.Status["200"] != r.Requests || r.Errors != 0 || r.Throughput <= 0 || r.P99MS <= 0 {
					t.Errorf("%s: %d requests, status %v, %d errors, %.0f/s, p99 %.2f ms", r.Target, r.Requests, r.Status, r.Errors, r.Throughput, r.P99MS)
				}
			}
			if hb := rs[len(rs)-1]; hb.Delivered < hb.Status["200"] || hb.DeliveryP99MS <= 0 {
				t.Errorf("%d of %d accepted events reached the sink (p99 %.2f ms)", hb.Delivered, hb.Status["200"], hb.DeliveryP99MS)
			}
			if hb := rs[len(rs)-1]; mode[0] == "-backlog" && (hb.Backlog != 20000 || hb.BacklogDrainSec <= 0) {
				t.Errorf("backlog %d drained in %.2fs, want 20000 drained", hb.Backlog, hb.BacklogDrainSec)
			}
		})
	}
}
