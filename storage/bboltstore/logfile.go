package bboltstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"hookbox/app/datadir"
)

// The intake log is two files beside the data file, written in turn: new
// records go to the active one; once it holds segmentSize bytes and the
// other is empty, the other becomes the active one. The committer empties
// a file whose records are all applied and committed to the data file
// (truncate, not synced: a record that comes back after a power cut is
// one the data file holds already, and is skipped). So the log holds what
// is not applied yet plus at most two segments: a few MiB of disk.
var logNames = [2]string{"hookbox.log.0", "hookbox.log.1"}

// segmentSize is when the active file hands over to the other: small, so
// that the log adds little to a small data directory, large enough that
// the hand-over (at most a few a second at full ingest) costs nothing.
const segmentSize = 1 << 20

// logFiles are the intake log's two files. The intake goroutine alone
// writes them; the committer empties the inactive one. mu guards the
// bookkeeping both share, never a write or a sync.
type logFiles struct {
	files [2]*os.File

	mu     sync.Mutex
	active int
	size   [2]int64  // bytes written to each file
	last   [2]uint64 // the newest seq written to each (0: none)
	busy   bool      // an append is under way on the active file
}

// openLog opens (creating) the log's files in dd and reads back every
// intact record they hold for the data file whose log id is file, oldest
// first. It syncs dd when it made a file.
func openLog(dd *datadir.Dir, file uint64) (*logFiles, []*logged, error) {
	l := &logFiles{}
	made := false
	for i, name := range logNames {
		exists, err := dd.Exists(name)
		if err != nil {
			l.close()
			return nil, nil, err
		}
		f, err := dd.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			l.close()
			return nil, nil, fmt.Errorf("open the intake log: %w", err)
		}
		l.files[i] = f
		made = made || !exists
	}
	if made {
		if err := dd.Sync(); err != nil {
			l.close()
			return nil, nil, fmt.Errorf("open the intake log: %w", err)
		}
	}
	var recs []*logged
	for i, f := range l.files {
		got, err := readLogFile(f, file)
		if err != nil {
			l.close()
			return nil, nil, fmt.Errorf("read the intake log %s: %w", logNames[i], err)
		}
		recs = append(recs, got...)
	}
	slices.SortFunc(recs, func(a, b *logged) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return l, recs, nil
}

// readLogFile reads f's intact records for the data file whose log id is
// file (0: any) from its start, up to the first that is torn, written for
// another data file, or does not follow the one before it (a file emptied
// and written again from its start may show, past its new end, what the
// emptied one held: older seqs).
func readLogFile(f *os.File, file uint64) ([]*logged, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return nil, err
	}
	var recs []*logged
	var last uint64
	for len(b) > 0 {
		l, id, n, ok := readRecord(b)
		if !ok || l.seq <= last || file != 0 && id != file {
			break
		}
		recs = append(recs, l)
		last = l.seq
		b = b[n:]
	}
	return recs, nil
}

// reset empties both files, once everything they held is applied and
// committed (at Open, after the replay, and at Close).
func (l *logFiles) reset() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for i, f := range l.files {
		errs = append(errs, f.Truncate(0))
		l.size[i], l.last[i] = 0, 0
	}
	l.active = 0
	return errors.Join(errs...)
}

// append writes b, whose newest record is last, at the active file's end
// and syncs it (unless the build is broken on purpose). On an error the
// file is cut back to where it ended before, so that a record not
// answered never stands in the log before the next that is.
func (l *logFiles) append(b []byte, last uint64, sync bool) error {
	l.mu.Lock()
	i := l.active
	if l.size[i] >= segmentSize && l.size[1-i] == 0 {
		i = 1 - i
		l.active = i
	}
	off := l.size[i]
	l.busy = true
	l.mu.Unlock()
	f := l.files[i]
	_, err := f.WriteAt(b, off)
	if err == nil && sync {
		err = fdatasync(f)
	}
	if err != nil {
		f.Truncate(off)
	}
	l.mu.Lock()
	if err == nil {
		l.size[i] = off + int64(len(b))
		l.last[i] = last
	}
	l.busy = false
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("write the intake log: %w", err)
	}
	return nil
}

// sync syncs the active file: what a broken build that answers first
// does after answering.
func (l *logFiles) sync() error {
	l.mu.Lock()
	f := l.files[l.active]
	l.mu.Unlock()
	return fdatasync(f)
}

// applied empties each file whose records are all applied (seq is the
// newest applied and committed): the inactive one, and the active one
// between appends, so that an idle hookbox keeps no log on disk.
func (l *logFiles) applied(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.files {
		if l.size[i] == 0 || l.last[i] > seq || i == l.active && l.busy {
			continue
		}
		if l.files[i].Truncate(0) == nil {
			l.size[i], l.last[i] = 0, 0
		}
	}
}

func (l *logFiles) close() error {
	var errs []error
	for _, f := range l.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}
