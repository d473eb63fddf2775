// The names of scheduled backups, which the backuper (app/backup), the
// stores' integrity check and restore read.

package app

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// BackupPrefix and BackupExt frame the names of scheduled backups:
// hookbox-NNNNNN-YYYYMMDD-HHMMSS.db. NNNNNN counts the backups in the
// order they were made (one more than the highest in the directory), and
// that order, never the time (UTC, for people), decides which are the
// newest: a clock that ran ahead and was set right gives later backups
// earlier times.
const (
	BackupPrefix     = "hookbox-"
	BackupExt        = ".db"
	backupTimeLayout = "20060102-150405"
)

// backupName matches a backup's name; oldBackupName the names of builds
// before the count (time only), older than any counted one.
var (
	backupName    = regexp.MustCompile(`^hookbox-(\d{6,18})-(\d{8}-\d{6})\.db$`)
	oldBackupName = regexp.MustCompile(`^hookbox-(\d{8}-\d{6})\.db$`)
)

// BackupFile is a backup in the directory: its name, its place in the
// order backups were made (0 for an older build's), and its time.
type BackupFile struct {
	Name string
	Seq  uint64
	At   time.Time
}

// ParseBackupName reads a backup's name; ok is false for other files.
func ParseBackupName(name string) (f BackupFile, ok bool) {
	var at string
	if m := backupName.FindStringSubmatch(name); m != nil {
		f.Seq, _ = strconv.ParseUint(m[1], 10, 64)
		at = m[2]
	} else if m := oldBackupName.FindStringSubmatch(name); m != nil {
		at = m[1]
	} else {
		return f, false
	}
	f.Name = name
	f.At, _ = time.Parse(backupTimeLayout, at)
	return f, true
}

// BackupName is the name of the backup made seq-th, at at (UTC).
func BackupName(seq uint64, at time.Time) string {
	return fmt.Sprintf("%s%06d-%s%s", BackupPrefix, seq, at.UTC().Format(backupTimeLayout), BackupExt)
}

// ListBackups returns the backups in dir in the order they were made, oldest
// first: by their count, older builds' (by time) before all counted ones.
func ListBackups(dir string) ([]BackupFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []BackupFile
	for _, e := range ents {
		if f, ok := ParseBackupName(e.Name()); ok && e.Type().IsRegular() {
			files = append(files, f)
		}
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].Seq != files[j].Seq {
			return files[i].Seq < files[j].Seq
		}
		return files[i].Name < files[j].Name
	})
	return files, nil
}

// LatestBackup returns the path of the backup in dir made last, or ""
// when there is none.
func LatestBackup(dir string) (string, error) {
	files, err := ListBackups(dir)
	if err != nil || len(files) == 0 {
		return "", err
	}
	return filepath.Join(dir, files[len(files)-1].Name), nil
}
