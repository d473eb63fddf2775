package bboltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/app/datadir"
)

// FormatVersion is the layout of the data file this build reads and
// writes, recorded in the file (meta bucket, key "format"). A file without
// it was written by a build before 2026-12 (format 1); Open brings it to
// this one. A file with a higher one is refused: this build would
// misread it.
//
//  1. buckets up to merged, remembered ids in the expiry index with seqs
//  2. pending_event (the events pending deliveries will send), poison
//  3. events packed (pack.go): their headers and bodies compressed. A
//     build of format 2 would read them as unreadable records; it refuses
//     the file instead.
//  4. the intake log (intake.go): events answered are in hookbox.log.0
//     and .1 until the committer applies them. A build of format 3 would
//     not read the log, and lose those a crash left there.
const FormatVersion = 4

// ErrNewerFormat means the data file was written by a newer hookbox.
var ErrNewerFormat = errors.New("the data file was written by a newer hookbox")

// ErrDataLost means the data file is missing, empty, cut short or
// unreadable where hookbox had kept data: opening it as new would forget
// every remembered id and pending delivery, and bbolt would map the
// missing pages of a short file and crash on the first read (SIGBUS).
var ErrDataLost = errors.New("refusing to open the data file")

// MarkerName is the file Open writes next to the data file the first
// time it opens one in a directory. With the marker there, a data file
// that is missing or empty was lost, not never made: Open refuses it.
const MarkerName = FileName + ".created"

var formatKey = []byte("format")

// logger is the storage's logger, taken when used so that main's handler
// applies.
func logger() *slog.Logger { return slog.Default().With("component", "storage") }

// inspect decides, before bbolt opens it, whether the data file (FileName)
// in the data directory d may be opened: a missing or empty one only where
// no data was kept (see keptData), a non-empty one only when a meta page is
// sound and the file holds every page its last commit uses. It logs when
// bbolt will fall back to the older meta page. A link or a FIFO under the
// name is refused, not followed or waited on (root runs passwd here).
func inspect(d *datadir.Dir) error {
	path := filepath.Join(d.Path(), FileName)
	f, err := d.OpenFile(FileName, os.O_RDONLY, 0)
	var size int64
	if err == nil {
		defer f.Close()
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if errors.Is(err, os.ErrNotExist) || err == nil && size == 0 {
		if why := keptData(d); why != "" {
			state := "is missing"
			if err == nil {
				state = "is empty"
			}
			return fmt.Errorf("%s %s, but %s: %w (as new it would forget every remembered id and pending delivery)", path, state, why, ErrDataLost)
		}
		return nil
	}
	if err != nil {
		return err
	}
	return checkPages(f)
}

// checkPages refuses a bbolt file without a sound meta page, or shorter
// than its last commit, and logs when bbolt will fall back to the older
// meta page.
func checkPages(f *os.File) error {
	path := f.Name()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	metas := readMetas(f, fi.Size())
	newest, other := 0, 1
	if !metas[0].valid || metas[1].valid && metas[1].txid > metas[0].txid {
		newest, other = 1, 0
	}
	m := metas[newest]
	if !m.valid {
		return fmt.Errorf("%s (%d bytes) has no sound meta page: it is cut short, damaged, or not a hookbox data file: %w", path, fi.Size(), ErrDataLost)
	}
	if need := int64(m.pgid) * int64(m.pageSize); fi.Size() < need {
		return fmt.Errorf("%s is cut short: %d bytes, but its last commit (transaction %d) uses %d: %w", path, fi.Size(), m.txid, need, ErrDataLost)
	}
	if !metas[other].valid {
		logger().Warn("a meta page of the data file is damaged; bbolt falls back to the other one, and if the damaged page held the latest commit, that commit is lost",
			"file", path, "damaged", fmt.Sprintf("meta page %d", other), "using", fmt.Sprintf("meta page %d", newest), "transaction", m.txid,
			"hint", "take a backup now (hookbox backup) and compare what you expect with the status page")
	}
	return nil
}

// keptData says why the data directory d shows that hookbox kept data
// there ("" when it does not): the marker, a file a restore replaced, or a
// backup in the default backup directory (installs from before the marker).
func keptData(d *datadir.Dir) string {
	dir := d.Path()
	if f, err := d.OpenFile(MarkerName, os.O_RDONLY, 0); err == nil {
		b, _ := io.ReadAll(io.LimitReader(f, 256))
		f.Close()
		return fmt.Sprintf("%s says a data file was made here (%s)", MarkerName, firstLine(b))
	}
	if m, _ := filepath.Glob(filepath.Join(dir, FileName+ReplacedSuffix+"*")); len(m) > 0 {
		return fmt.Sprintf("%s shows a data file was kept here", filepath.Base(m[0]))
	}
	if b, _ := app.LatestBackup(filepath.Join(dir, app.BackupsDirName)); b != "" {
		return fmt.Sprintf("the backup %s shows a data file was kept here", b)
	}
	return ""
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// markKept writes the marker once a data file is open in d, durably, for
// d's owner. A failure is only logged: the file is fine, the guard is
// weaker.
func markKept(d *datadir.Dir, now time.Time) {
	path := filepath.Join(d.Path(), MarkerName)
	f, err := d.OpenFile(MarkerName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return
	}
	if err == nil {
		_, err = fmt.Fprintf(f, "created %s\nhookbox refuses to start when %s is missing or empty while this file is here; delete it only to start afresh on purpose.\n",
			now.UTC().Format(time.RFC3339), FileName)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = d.Sync()
	}
	if err != nil {
		logger().Warn("cannot write the data file's marker", "file", path, slog.Any("error", err))
	}
}

// boltMeta is what one bbolt meta page says, when its checksum holds.
type boltMeta struct {
	valid    bool
	pageSize uint32
	pgid     uint64 // the high water mark: pages the commit uses
	txid     uint64
}

// The layout of a bbolt meta page (go.etcd.io/bbolt internal/common, in
// the machine's byte order): a 16-byte page header, then magic, version,
// page size, flags (4 bytes each), the root bucket (root page, sequence),
// the freelist page, the high water mark, the transaction id and a
// FNV-64a checksum of everything before it (8 bytes each).
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltMetaFlag   = 0x04
	metaEnd        = 80
	metaChecksumAt = 72
)

// parseMeta reads a meta page from p (at least metaEnd bytes).
func parseMeta(p []byte) boltMeta {
	e := binary.NativeEndian
	h := fnv.New64a()
	h.Write(p[16:metaChecksumAt])
	if e.Uint16(p[8:]) != boltMetaFlag || e.Uint32(p[16:]) != boltMagic || e.Uint32(p[20:]) != boltVersion ||
		e.Uint64(p[metaChecksumAt:]) != h.Sum64() {
		return boltMeta{}
	}
	return boltMeta{valid: true, pageSize: e.Uint32(p[24:]), pgid: e.Uint64(p[56:]), txid: e.Uint64(p[64:])}
}

// readMetas reads the two meta pages of the bbolt file f of size bytes.
// The second one's place depends on the page size, which the first one
// gives; without it, every page size bbolt allows is tried, as bbolt does.
func readMetas(f io.ReaderAt, size int64) [2]boltMeta {
	var metas [2]boltMeta
	page := make([]byte, metaEnd)
	if _, err := f.ReadAt(page, 0); err == nil {
		metas[0] = parseMeta(page)
	}
	for i := 0; i <= 14; i++ {
		at := int64(1024) << i
		if metas[0].valid {
			at = int64(metas[0].pageSize)
		}
		if at+metaEnd > size {
			break
		}
		if _, err := f.ReadAt(page, at); err == nil {
			if m := parseMeta(page); m.valid {
				metas[1] = m
				break
			}
		}
		if metas[0].valid {
			break
		}
	}
	return metas
}

// checkFormat refuses a file in a newer format than this build's; it
// tells whether the file must be brought to this build's (an older one).
func checkFormat(db *bolt.DB, path string) (older bool, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		var v []byte
		if b := tx.Bucket(bucketMeta); b != nil {
			v = b.Get(formatKey)
		}
		format := uint32(1)
		if len(v) == 4 {
			format = binary.BigEndian.Uint32(v)
		} else if v != nil {
			return fmt.Errorf("%s: format record %x cannot be read: %w", path, v, ErrNewerFormat)
		}
		if format > FormatVersion {
			return fmt.Errorf("%s is in data format %d, and this build reads formats up to %d: %w", path, format, FormatVersion, ErrNewerFormat)
		}
		older = format < FormatVersion
		return nil
	})
	return older, err
}

// putFormat records this build's format in tx.
func putFormat(tx *bolt.Tx) error {
	b, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	return b.Put(formatKey, binary.BigEndian.AppendUint32(nil, FormatVersion))
}
