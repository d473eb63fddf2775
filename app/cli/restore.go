package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
)

const restoreHelp = "Replaces data_dir/hookbox.db with a copy of FILE (a scheduled backup from\n" +
	"backup.dir, or one saved by hookbox backup). Stop hookbox first: the command\n" +
	"refuses while a process holds the data file, or while systemctl says hookbox.socket\n" +
	"or hookbox.service is active (stop both). FILE is checked with bbolt's\n" +
	"consistency check before anything changes; the replaced data file is kept as\n" +
	"hookbox.db.replaced-YYYYMMDD-HHMMSS. Run it as root or as the hookbox user: the\n" +
	"new file gets the owner of the one it replaces. At the next start, deliveries\n" +
	"that were pending in the copy go out again and its remembered ids stay duplicates."

func runRestore(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	dataDirFlag := fs.String("data-dir", "", "the data directory, over server.data_dir and $"+config.EnvDataDir)
	checkOnly := fs.Bool("check", false, "only check FILE with bbolt's consistency check; change nothing")
	operands, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(operands) != 1 {
		fmt.Fprintln(stderr, "hookbox restore: give one backup FILE")
		return 2
	}
	file := operands[0]
	if refuseOnPostgres("restore", *path, stderr) {
		return 1
	}
	if *checkOnly && os.Getenv(checkChildEnv) != "1" {
		if msg, ok := checkInChild(file); !ok {
			fmt.Fprintf(stderr, "hookbox restore: %s\n", msg)
			return 1
		}
		fmt.Fprintf(stdout, "%s: bbolt check passed\n", file)
		return 0
	}
	if *checkOnly { // in the child of checkInChild
		if err := bboltstore.CheckFile(file); err != nil {
			fmt.Fprintf(stderr, "hookbox restore: %s is not a sound hookbox data file: %v\n", file, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: bbolt check passed\n", file)
		return 0
	}
	if unit := activeUnit(); unit != "" {
		fmt.Fprintf(stderr, "hookbox restore: %s is active: with the socket listening, the next webhook starts hookbox on the data file being replaced; stop both first: systemctl stop hookbox.socket hookbox (nothing was changed)\n", unit)
		return 1
	}
	// bbolt's check panics on some damage, in a goroutine no recover
	// reaches: check in a child process first, so that a damaged copy gets
	// a clear answer rather than a crash.
	if msg, ok := checkInChild(file); !ok {
		fmt.Fprintf(stderr, "hookbox restore: %s, nothing was changed\n", msg)
		return 1
	}
	dataDir, err := config.LoadDataDirWith(*path, config.Overrides{DataDir: *dataDirFlag})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	res, err := bboltstore.Restore(dataDir, file, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "hookbox restore: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored %s into %s (%d bytes, bbolt check passed)\n", file, res.Path, res.Size)
	// The restored file's audit log says who put it in place.
	if db, err := bboltstore.Open(dataDir); err != nil {
		fmt.Fprintf(stderr, "hookbox restore: the restore is not in the audit log: %v\n", err)
	} else {
		e := app.Who{Actor: localActor(), Via: "cli", From: "local"}.Entry(app.AuditRestore, filepath.Base(file), "", nil)
		e.At = time.Now()
		if err := db.AppendAudit(ctx, app.CleanAuditEntry(e)); err != nil {
			fmt.Fprintf(stderr, "hookbox restore: the restore is not in the audit log: %v\n", err)
		}
		db.Close()
	}
	if res.Replaced != "" {
		fmt.Fprintf(stdout, "the previous data file is kept as %s\n", res.Replaced)
	}
	fmt.Fprintln(stdout, "start hookbox (systemctl start hookbox): pending deliveries go out again, remembered ids stay remembered")
	return 0
}

// checkChildEnv marks the child process that runs the check.
const checkChildEnv = "HOOKBOX_RESTORE_CHECK_CHILD"

// checkInChild runs `hookbox restore -check FILE` as a child process and
// reports whether the file passed; otherwise a message saying why.
func checkInChild(file string) (string, bool) {
	exe, err := os.Executable()
	if err != nil {
		return "", true // the in-process check still runs
	}
	var out bytes.Buffer
	cmd := exec.Command(exe, "restore", "-check", "--", file)
	cmd.Env = append(os.Environ(), checkChildEnv+"=1")
	cmd.Stdout, cmd.Stderr = io.Discard, &out
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return "", true
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return strings.TrimPrefix(strings.TrimSpace(out.String()), "hookbox restore: "), false
	case errors.As(err, &exit):
		return file + " is damaged: bbolt's consistency check crashed on it", false
	}
	return "", true
}

// activeUnit names the unit of install.sh's that systemd runs now
// (hookbox.socket first: it starts hookbox at the next connection), or ""
// when neither runs or there is no systemctl. A hookbox started by hand
// holds the data file's lock, which the restore checks itself.
func activeUnit() string {
	if _, err := exec.LookPath("systemctl"); err != nil {
		return ""
	}
	for _, unit := range []string{"hookbox.socket", "hookbox.service"} {
		if exec.Command("systemctl", "is-active", "--quiet", unit).Run() == nil {
			return unit
		}
	}
	return ""
}
