package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"hookbox/app/datadir"
)

// PasswordRequestName is the file in the data directory through which
// hookbox passwd hands a running server (which holds the data file) the
// hash of a new status password. The data directory is its owner's only
// (0700), and the server takes a request only from a regular file of its
// own user that no one else may read or write: the file system is what
// authenticates the caller. The password itself never touches the disk.
const PasswordRequestName = "passwd.request"

// passwordRefusedName is where a request the server would not take is
// moved, so that the waiting hookbox passwd can tell.
const passwordRefusedName = "passwd.refused"

// Bounds of a status password; bcrypt reads at most 72 bytes.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 72
)

// Bounds of the cost of a hash taken from a request: a login costs the
// hash's cost, so a request cannot make every login slow.
const (
	minRequestCost = bcrypt.DefaultCost
	maxRequestCost = 14
)

// ErrPasswordInConfig means the status password comes from the config, so
// hookbox passwd has nothing to change.
var ErrPasswordInConfig = errors.New("the status password is set in the config ([status] password or password_env): change it there; hookbox passwd does nothing")

var errNoRequest = errors.New("no password request")

// HashPassword checks a new status password and returns its bcrypt hash.
func HashPassword(pw string) ([]byte, error) {
	switch {
	case len(pw) < MinPasswordLen:
		return nil, fmt.Errorf("the password must have at least %d characters", MinPasswordLen)
	case len(pw) > MaxPasswordLen:
		return nil, fmt.Errorf("the password must have at most %d bytes (bcrypt reads no more)", MaxPasswordLen)
	case !utf8.ValidString(pw):
		return nil, errors.New("the password is not valid UTF-8")
	}
	for _, r := range pw {
		if r < 0x20 || r == 0x7f {
			return nil, errors.New("the password must not contain control characters")
		}
	}
	return bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
}

// ValidPasswordHash reports whether h is a bcrypt hash a login may use.
func ValidPasswordHash(h []byte) error {
	cost, err := bcrypt.Cost(h)
	if err != nil {
		return fmt.Errorf("not a bcrypt hash: %w", err)
	}
	if cost < minRequestCost || cost > maxRequestCost {
		return fmt.Errorf("bcrypt cost %d is outside %d-%d", cost, minRequestCost, maxRequestCost)
	}
	return nil
}

// WritePasswordRequest leaves hash for the server running on dataDir to
// store: written whole to a new file, synced, then renamed into place, so
// the server never reads half of it. Root runs it in the service user's
// directory: the file is that user's, mode 0600, from the moment it is
// made and through the open file (package datadir), so a name the service
// user swaps meanwhile hands it nothing.
func WritePasswordRequest(dataDir string, hash []byte) error {
	if err := ValidPasswordHash(hash); err != nil {
		return err
	}
	d, err := datadir.Open(dataDir)
	if err != nil {
		return fmt.Errorf("write the password request: %w", err)
	}
	defer d.Close()
	d.Remove(passwordRefusedName) // an earlier refusal is not this one's
	f, err := d.NewFile("."+PasswordRequestName+".tmp-*", 0o600)
	if err != nil {
		return fmt.Errorf("write the password request: %w", err)
	}
	defer f.Discard() // after Publish, there is nothing left to remove
	_, err = f.Write(append(bytes.Clone(hash), '\n'))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Publish(PasswordRequestName)
	}
	if err != nil {
		return fmt.Errorf("write the password request in %s: %w", dataDir, err)
	}
	return nil
}

// WaitPasswordRequest waits until the server has taken the request in
// dataDir (nil), refused it, or ctx ends; then the request is withdrawn,
// unless the server took it meanwhile.
func WaitPasswordRequest(ctx context.Context, dataDir string) error {
	req := filepath.Join(dataDir, PasswordRequestName)
	for {
		if _, err := os.Lstat(req); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Lstat(filepath.Join(dataDir, passwordRefusedName)); err == nil {
				os.Remove(filepath.Join(dataDir, passwordRefusedName))
				return errors.New("the server refused the request (its log says why): run hookbox passwd as the user hookbox runs as, or as root")
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if os.Remove(req) != nil {
				return nil // taken just now
			}
			return errors.New("the server did not take the request: is it running on this data directory? Nothing was changed")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// maxRequestSize bounds a request file: a bcrypt hash and a newline.
const maxRequestSize = 256

// readPasswordRequest returns the hash of a pending request in dataDir;
// errNoRequest when there is none. The service user could put anything
// under the name, and swap it between any two looks: the file is opened
// without following a link and without waiting on a FIFO, then checked
// through the open file (regular, this server's user's, 0600 or less,
// small) before a byte is read, so that nothing there can stop the
// watcher.
func readPasswordRequest(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, PasswordRequestName)
	f, err := datadir.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoRequest
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s has mode %04o: others may read or write it (want 0600)", path, fi.Mode().Perm())
	case !ownedByMe(fi):
		return nil, fmt.Errorf("%s belongs to another user than this server's", path)
	case fi.Size() > maxRequestSize:
		return nil, fmt.Errorf("%s is too long for a bcrypt hash (%d bytes)", path, fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRequestSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRequestSize {
		return nil, fmt.Errorf("%s is too long for a bcrypt hash", path)
	}
	hash := bytes.TrimSpace(b)
	if err := ValidPasswordHash(hash); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return hash, nil
}

func refusePasswordRequest(dataDir string) {
	os.Rename(filepath.Join(dataDir, PasswordRequestName), filepath.Join(dataDir, passwordRefusedName))
}

func removePasswordRequest(dataDir string) {
	os.Remove(filepath.Join(dataDir, PasswordRequestName))
}
