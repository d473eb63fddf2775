package web

import "time"

// SetBackupIdle shortens how long a backup download may stall, until the
// returned function puts it back.
func SetBackupIdle(d time.Duration) func() {
	old := backupIdle
	backupIdle = d
	return func() { backupIdle = old }
}
