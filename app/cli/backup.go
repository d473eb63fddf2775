package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"hookbox/app/datadir"
	"hookbox/storage/bboltstore"
)

func runBackup(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := adminFlags(fs)
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
	if *opts.url == "" && refuseOnPostgres("backup", *path, stderr) {
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

// backup downloads the data file into a new file in out's directory,
// syncs and checks it, then renames it over out: out is either the old
// file or a complete, checked copy, never half a download. Root may run it
// into a directory the service user owns (the backup directory): the file
// is made there through the directory held open, with that directory
// owner's and mode 0600 from the start, the check reads the file written
// (not whatever its name holds by then), and the rename is checked to have
// put that file in place (package datadir).
func backup(api *adminAPI, out string) (int64, error) {
	resp, err := api.do(http.MethodGet, "/backup")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("hookbox backup: the server answered %d: %s", resp.StatusCode, readAnswer(resp.Body))
	}
	d, err := datadir.Open(filepath.Dir(out))
	if err != nil {
		return 0, fmt.Errorf("hookbox backup: %w", err)
	}
	defer d.Close()
	f, err := d.NewFile("."+filepath.Base(out)+".tmp-*", 0o600)
	if err != nil {
		return 0, fmt.Errorf("hookbox backup: %w", err)
	}
	defer f.Discard()
	n, err := io.Copy(f, resp.Body)
	if err != nil {
		return 0, fmt.Errorf("hookbox backup: download: %w", err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return 0, fmt.Errorf("hookbox backup: download cut short: %d of %d bytes", n, resp.ContentLength)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("hookbox backup: sync %s: %w", out, err)
	}
	if err := bboltstore.CheckOpen(f.File); err != nil {
		return 0, fmt.Errorf("hookbox backup: the downloaded copy is damaged, %s left as it was: %w", out, err)
	}
	if err := f.Publish(filepath.Base(out)); err != nil {
		return 0, fmt.Errorf("hookbox backup: %w", err)
	}
	// The rename is durable once the directory is synced.
	d.Sync()
	return n, nil
}
