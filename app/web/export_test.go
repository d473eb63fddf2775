package web

import "time"

// SetBackupIdle shortens how long a backup download may stall, until the
// returned function puts it back.
func SetBackupIdle(d time.Duration) func() {
	old := backupIdle
	backupIdle = d
	return func() { backupIdle = old }
}

// SetStreamTimes shortens the streams' ping interval and write deadline,
// until the returned function puts them back.
func SetStreamTimes(ping, write time.Duration) func() {
	oldPing, oldWrite := streamPing.Swap(int64(ping)), streamWrite.Swap(int64(write))
	return func() { streamPing.Store(oldPing); streamWrite.Store(oldWrite) }
}
