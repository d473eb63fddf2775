package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/storage/bboltstore"
)

// After the sweep, a data file mostly free is compacted, and the log says
// by how much and how long writes waited.
func TestCompactAfterSweep(t *testing.T) {
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for i := range 64 { // 8 MiB, then freed
		if err := db.SetMeta(ctx, fmt.Sprint("pad", i), bytes.Repeat([]byte{byte(i)}, 128<<10)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 64 {
		if err := db.SetMeta(ctx, fmt.Sprint("pad", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	before := fileSize(t, dir)
	var buf bytes.Buffer
	compactAfterSweep(ctx, db, slog.New(slog.NewTextHandler(&buf, nil)))
	after := fileSize(t, dir)
	t.Logf("%d → %d bytes; logged: %s", before, after, buf.String())
	if after*2 > before || !strings.Contains(buf.String(), "compaction done") || !strings.Contains(buf.String(), "pause=") {
		t.Fatalf("file %d → %d bytes, logged %q; want it compacted and logged", before, after, buf.String())
	}
}

func fileSize(t *testing.T, dir string) int64 {
	fi, err := os.Stat(filepath.Join(dir, bboltstore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
