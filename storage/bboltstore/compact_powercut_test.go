package bboltstore_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"hookbox/storage/powercut"
)

// The power goes out in the middle of an online compaction: at a write,
// a sync or the rename of its copy, or at the sync of the directory
// after it, while events are accepted. What the disk kept opens as a
// whole data file (the old one or the compacted one) that passes bbolt's
// check and holds every event acknowledged before the cut. With Torn the
// unsynced writes that survive are a random subset. (TestCompact_KilledMidway
// kills the process instead: its writes all reach the disk.)
func TestCompact_PowerCut(t *testing.T) {
	if dir := os.Getenv("HOOKBOX_COMPACT_CHILD"); dir != "" {
		return // the child is TestCompact_KilledMidway's (compactChild)
	}
	powercut.Require(t)
	backing := filepath.Join(t.TempDir(), "disk")
	if err := os.MkdirAll(filepath.Join(backing, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	seed := rand.Uint64()
	ctx := context.Background()
	var acked []string
	for round := range 8 {
		// The cut, by round: at the k-th write of the copy (k random), at
		// the copy's sync, at its rename over the data file, or at the
		// directory's sync after it.
		k := int64(1 + rand.IntN(20))
		target := []func(powercut.Op) bool{
			func(op powercut.Op) bool { return op.Kind == "write" && strings.HasSuffix(op.Path, ".compact") },
			func(op powercut.Op) bool { return op.Kind == "fsync" && strings.HasSuffix(op.Path, ".compact") },
			func(op powercut.Op) bool { return op.Kind == "rename" && strings.HasSuffix(op.Path, ".compact") },
			func(op powercut.Op) bool { return op.Kind == "fsyncdir" },
		}[round%4]
		if round%4 != 0 {
			k = 1
		}
		var armed atomic.Bool
		var seen atomic.Int64
		var at atomic.Value
		fsys, err := powercut.Mount(mnt, backing, powercut.Options{Torn: round%2 == 1, Seed: seed + uint64(round),
			CutWhen: func(op powercut.Op) bool {
				if !armed.Load() || !target(op) || seen.Add(1) < k {
					return false
				}
				at.Store(fmt.Sprintf("%s %s", op.Kind, op.Path))
				return true
			}})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompact_KilledMidway$")
		cmd.Env = append(os.Environ(), "HOOKBOX_COMPACT_CHILD="+filepath.Join(mnt, "data"), fmt.Sprint("HOOKBOX_COMPACT_ROUND=", round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Armed once the child's second compaction begins (the first
		// runs on a nearly empty file); then the child runs until the
		// cut makes its writes fail.
		compactions := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if id, ok := strings.CutPrefix(line, "acked "); ok {
				acked = append(acked, id)
			} else if line == "compact" {
				if compactions++; compactions == 2 {
					armed.Store(true)
				} else if compactions == 12 {
					fsys.Freeze() // k was past what ten compactions did: now, then
					at.Store("a random moment")
				}
			}
			select {
			case <-fsys.Frozen():
			default:
				continue
			}
			break
		}
		cmd.Process.Kill()
		cmd.Wait()
		r, err := fsys.Cut()
		if err != nil {
			t.Fatal(err)
		}
		where, _ := at.Load().(string)
		db := mustOpenDir(t, filepath.Join(backing, "data"))
		if err := db.Check(); err != nil {
			t.Fatalf("round %d (seed %d), cut at %s: %v", round, seed, where, err)
		}
		for _, id := range acked {
			if _, _, ok, err := db.LookupID(ctx, "shop", id); !ok || err != nil {
				t.Fatalf("round %d (seed %d), cut at %s: event %s acknowledged before the cut is gone: %v", round, seed, where, id, err)
			}
		}
		_, events, _ := db.Counts(ctx)
		db.Close()
		t.Logf("round %d: cut at %s, %v; %d acknowledged in all, all there (%d events)", round, where, r, len(acked), events)
	}
}
