package web

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"hookbox/storage/powercut"
)

// A power cut during or after a Put of the ACME cache leaves the entry
// absent or whole, never truncated (autocert refuses a damaged account
// key for good); once Put returned, the entry is there. The cache
// directory is new, as at the first start in ACME mode.
func TestACMECache_PowerCut(t *testing.T) {
	powercut.Require(t)
	key := bytes.Repeat([]byte("-----BEGIN EC PRIVATE KEY-----\nkey material\n"), 200) // a few pages
	for round := range 12 {
		backing, mnt := filepath.Join(t.TempDir(), "disk"), filepath.Join(t.TempDir(), "mnt")
		for _, d := range []string{backing, mnt} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		at := int64(1 + rand.IntN(12)) // 12 and over: after Put returned
		var ops int64
		fsys, err := powercut.Mount(mnt, backing, powercut.Options{Torn: round%2 == 1, Seed: uint64(round),
			CutWhen: func(powercut.Op) bool { ops++; return ops == at }})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(mnt, ACMEDirName)
		err = newACMECache(dir)
		if err == nil {
			err = acmeCache(dir).Put(context.Background(), "acme_account+key", key)
		}
		if _, cerr := fsys.Cut(); cerr != nil {
			t.Fatal(cerr)
		}
		got, rerr := os.ReadFile(filepath.Join(backing, ACMEDirName, "acme_account+key"))
		t.Logf("round %d: cut at operation %d: Put %v; on the disk %d bytes", round, at, err, len(got))
		switch {
		case err == nil && !bytes.Equal(got, key):
			t.Fatalf("round %d: Put returned, but the disk holds %d bytes (%v), want %d", round, len(got), rerr, len(key))
		case rerr == nil && !bytes.Equal(got, key):
			t.Fatalf("round %d: a damaged entry of %d bytes under the final name", round, len(got))
		case rerr != nil && !errors.Is(rerr, os.ErrNotExist):
			t.Fatal(rerr)
		}
	}
}
