package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
)

func runBackup(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := configFlags(fs)
	path := opts.path
	out := fs.String("o", "", "the file to write the backup to (required)")
	operands, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if *out == "" || len(operands) > 0 {
		fmt.Fprintln(stderr, "hookbox backup: give the output file with -o FILE, and nothing else")
		return 2
	}
	if refuseOnPostgres("backup", *path, stderr) {
		return 1
	}
	api, err := newAdminAPI("backup", opts, 10*time.Minute)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	n, err := backup(api, *out)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d bytes, bbolt check passed\n", *out, n)
	return 0
}

// backup downloads the data file into a temp file next to out, syncs and
// checks it, then renames it over out: out is either the old file or a
// complete, checked copy, never half a download.
func backup(api *adminAPI, out string) (int64, error) {
	resp, err := api.do(http.MethodGet, "/backup")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("hookbox backup: the server answered %d: %s", resp.StatusCode, readAnswer(resp.Body))
	}
	dir := filepath.Dir(out)
	f, err := os.CreateTemp(dir, "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("hookbox backup: %w", err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, resp.Body)
	if err != nil {
		return 0, fmt.Errorf("hookbox backup: download: %w", err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return 0, fmt.Errorf("hookbox backup: download cut short: %d of %d bytes", n, resp.ContentLength)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("hookbox backup: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("hookbox backup: close %s: %w", tmp, err)
	}
	if err := checkBolt(tmp); err != nil {
		return 0, fmt.Errorf("hookbox backup: the downloaded copy is damaged, %s left as it was: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return 0, fmt.Errorf("hookbox backup: %w", err)
	}
	done = true
	// The rename is durable once the directory is synced.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return n, nil
}

// checkBolt opens the bbolt file at path read-only and runs its
// consistency check; it returns the first problem found.
func checkBolt(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		var first error
		for err := range tx.Check() { // drain: the checker runs until done
			if first == nil {
				first = err
			}
		}
		return first
	})
}
