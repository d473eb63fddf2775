package bboltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/storage/bboltstore"
)

// filledDir returns a data dir whose file holds n accepted events.
func filledDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := db.Accept(context.Background(), newEvent("shop", fmt.Sprint("i-", i), t0), t0.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The file records the layout it was written in: a newer one is refused
// with the way out, never read as if it were this build's.
func TestOpen_NewerFormat(t *testing.T) {
	dir := filledDir(t, 3)
	withBolt(t, dir, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("meta"))
		if b == nil {
			return errors.New("no meta bucket: the format is not recorded")
		}
		if v := b.Get([]byte("format")); len(v) != 4 || binary.BigEndian.Uint32(v) != bboltstore.FormatVersion {
			return fmt.Errorf("format recorded as %x, want %d", v, bboltstore.FormatVersion)
		}
		return b.Put([]byte("format"), binary.BigEndian.AppendUint32(nil, bboltstore.FormatVersion+1))
	})
	db, err := bboltstore.Open(dir)
	if err == nil {
		db.Close()
		t.Fatal("a file in a newer format was opened")
	}
	if !errors.Is(err, bboltstore.ErrNewerFormat) || !strings.Contains(err.Error(), fmt.Sprintf("format %d", bboltstore.FormatVersion+1)) {
		t.Fatalf("err = %v; want ErrNewerFormat naming the format", err)
	}
}

// A data file emptied or removed where hookbox had kept data is refused;
// an empty one in a directory that never held one starts afresh.
func TestOpen_EmptyWhereDataExisted(t *testing.T) {
	t.Run("Emptied", func(t *testing.T) {
		dir := filledDir(t, 3)
		if err := os.Truncate(filepath.Join(dir, bboltstore.FileName), 0); err != nil {
			t.Fatal(err)
		}
		db, err := bboltstore.Open(dir)
		if err == nil {
			db.Close()
			t.Fatal("an emptied data file was opened as new")
		}
		if !errors.Is(err, bboltstore.ErrDataLost) || !strings.Contains(err.Error(), "is empty") {
			t.Fatalf("err = %v; want ErrDataLost saying it is empty", err)
		}
	})
	t.Run("Removed", func(t *testing.T) {
		dir := filledDir(t, 3)
		if err := os.Remove(filepath.Join(dir, bboltstore.FileName)); err != nil {
			t.Fatal(err)
		}
		if db, err := bboltstore.Open(dir); !errors.Is(err, bboltstore.ErrDataLost) {
			if err == nil {
				db.Close()
			}
			t.Fatalf("err = %v; want ErrDataLost", err)
		}
	})
	t.Run("NewInstall", func(t *testing.T) {
		dir := t.TempDir()
		// A start that died before bbolt wrote anything leaves an empty file.
		if err := os.WriteFile(filepath.Join(dir, bboltstore.FileName), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := bboltstore.Open(dir)
		if err != nil {
			t.Fatalf("a new data dir: %v", err)
		}
		db.Close()
	})
	t.Run("OlderBuildsInstall", func(t *testing.T) {
		// No marker (builds before it wrote none), but a backup in the
		// default backup dir says data was kept here.
		dir := t.TempDir()
		backups := filepath.Join(dir, "backups")
		os.MkdirAll(backups, 0o700)
		os.WriteFile(filepath.Join(backups, "hookbox-20261129-030000.db"), []byte("copy"), 0o600)
		os.WriteFile(filepath.Join(dir, bboltstore.FileName), nil, 0o600)
		if db, err := bboltstore.Open(dir); !errors.Is(err, bboltstore.ErrDataLost) {
			if err == nil {
				db.Close()
			}
			t.Fatalf("err = %v; want ErrDataLost", err)
		}
	})
}

// A file cut short is refused with a clear error; bbolt would map the
// missing pages and the process would die of SIGBUS on the first read.
// The open runs in a child process so that a crash fails the test.
func TestOpen_Truncated(t *testing.T) {
	if dir := os.Getenv("HOOKBOX_OPEN_CHILD"); dir != "" {
		db, err := bboltstore.Open(dir)
		if err == nil {
			db.Check()
			db.Close()
		}
		fmt.Printf("open: %v\n", err)
		return
	}
	for _, size := range []int64{8 << 10, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := filledDir(t, 200)
			path := filepath.Join(dir, bboltstore.FileName)
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestOpen_Truncated$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HOOKBOX_OPEN_CHILD="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the open crashed: %v\n%s", err, out)
			}
			if !bytes.Contains(out, []byte(bboltstore.ErrDataLost.Error())) || !bytes.Contains(out, []byte("cut short")) {
				t.Fatalf("open of a file truncated to %d bytes:\n%s", size, out)
			}
		})
	}
}

// One meta page damaged: bbolt silently uses the other (the transaction
// before); hookbox opens the file and says so in the log.
func TestOpen_MetaFallbackLogged(t *testing.T) {
	dir := filledDir(t, 3)
	path := filepath.Join(dir, bboltstore.FileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Damage the meta page with the higher transaction id: its checksum.
	var newest int64
	var best uint64
	for i := int64(0); i < 2; i++ {
		page := make([]byte, 80)
		f.ReadAt(page, i*4096)
		if txid := binary.NativeEndian.Uint64(page[64:]); txid >= best {
			newest, best = i, txid
		}
	}
	if _, err := f.WriteAt([]byte{0xde, 0xad}, newest*4096+72); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var log bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatalf("open with one meta page damaged: %v", err)
	}
	db.Close()
	want := fmt.Sprintf("meta page %d", newest)
	if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "level=WARN") {
		t.Fatalf("log = %q; want a warning naming %s", log.String(), want)
	}
}

// metaChecksum is bbolt's checksum of a meta page's fields (a test of the
// layout readMeta assumes).
func metaChecksum(page []byte) uint64 {
	h := fnv.New64a()
	h.Write(page[16:72])
	return h.Sum64()
}

func TestMetaLayout(t *testing.T) {
	dir := filledDir(t, 1)
	data, err := os.ReadFile(filepath.Join(dir, bboltstore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		page := data[i*4096:]
		if got, want := binary.NativeEndian.Uint64(page[72:]), metaChecksum(page); got != want {
			t.Fatalf("meta page %d: checksum %x at offset 72, fields hash to %x", i, got, want)
		}
	}
}
