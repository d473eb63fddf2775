// Package datadir is how hookbox works in a directory that another user
// may change while it works: root running hookbox passwd or restore in the
// data directory that the service user owns. Every name is taken relative
// to the directory held open, never through a symbolic link, never waiting
// on a FIFO; every file made for the directory's owner is given that owner
// and its mode through the open file, never by its name afterwards; and a
// file is put in place under its final name only when the name is then
// checked to hold that very file. The domain and the stores both use it;
// it imports nothing of hookbox's.
package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
)

// ErrNotRegular means a name holds something other than a regular file (a
// symbolic link, a FIFO, a device, a directory): hookbox opens none of them
// where another user could have put them.
var ErrNotRegular = errors.New("not a regular file")

// ErrOtherOwner means root would write to a file that is not the
// directory owner's: a hard link to another user's file (root's own, say),
// which the directory's owner could have made there.
var ErrOtherOwner = errors.New("not the directory owner's")

// ErrReplaced means a name was changed by another process while hookbox
// put a file in place under it, too often to win.
var ErrReplaced = errors.New("replaced by another process while put in place")

// tempName turns an os.CreateTemp pattern into a fresh name.
func tempName(pattern string) string {
	b := make([]byte, 8)
	rand.Read(b)
	r := hex.EncodeToString(b)
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		return pattern[:i] + r + pattern[i+1:]
	}
	return pattern + r
}
