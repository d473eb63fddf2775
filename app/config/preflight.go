package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"hookbox/app"
	"hookbox/app/datadir"
)

// CheckDataDir finds what would stop serve from keeping its data in dir:
// a directory that cannot be created, or one where files cannot be
// written. It tries both for real and removes what it made, so that
// `hookbox check` fails where `serve` would.
func CheckDataDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The directories that do not exist yet, deepest first.
	var made []string
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cannot use %s: %w", dir, err)
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	defer func() {
		for _, d := range made {
			os.Remove(d) // deepest first; only what this check created, and only if still empty
		}
	}()
	if err := os.MkdirAll(abs, app.DataDirMode); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("cannot use %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	// Made as serve's files are, and never named where the file system
	// allows: root's check leaves nothing in the service user's directory.
	d, err := datadir.Open(abs)
	if err != nil {
		return fmt.Errorf("cannot use %s: %w", dir, err)
	}
	defer d.Close()
	f, err := d.NewFile(".hookbox-check-*", 0o600)
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	f.Discard()
	return nil
}

// CheckListen finds a listen address serve could not bind: one whose host
// or port does not resolve.
func CheckListen(listen string) error {
	if _, err := net.ResolveTCPAddr("tcp", listen); err != nil {
		return fmt.Errorf("%q: %w", listen, err)
	}
	return nil
}
