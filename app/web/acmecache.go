package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/acme/autocert"
)

// acmeCache is autocert.DirCache with writes that survive a power cut.
// DirCache renames its temporary file into place without fsync: a cut soon
// after can leave the account key empty under its final name, and autocert
// then refuses it ("invalid account key found in cache") until someone
// deletes it (TestACMECache_PowerCut).
type acmeCache string

var _ autocert.Cache = acmeCache("")

// newACMECache makes the cache directory: private (it holds the keys) and
// durable.
func newACMECache(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("acme cache: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("acme cache: %w", err)
	}
	return syncDir(filepath.Dir(dir))
}

// Get reads an entry as DirCache does.
func (c acmeCache) Get(ctx context.Context, name string) ([]byte, error) {
	return autocert.DirCache(c).Get(ctx, name)
}

// Delete removes an entry as DirCache does.
func (c acmeCache) Delete(ctx context.Context, name string) error {
	return autocert.DirCache(c).Delete(ctx, name)
}

// Put writes data to a temporary file, syncs it, renames it over the
// entry and syncs the directory: the entry is the old one or the new one,
// and the new one once Put returned.
func (c acmeCache) Put(ctx context.Context, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := string(c)
	f, err := os.CreateTemp(dir, ".put-*.tmp")
	if err != nil {
		return fmt.Errorf("acme cache: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, filepath.Clean("/"+name)))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("acme cache: %w", err)
	}
	return nil
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
