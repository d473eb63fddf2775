package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
)

// stdin is where passwd reads a new password and sign a body given as -;
// tests replace it.
var stdin = os.Stdin

// passwdWait bounds how long passwd waits for a running server to take
// its request (the server looks every second).
var passwdWait = 10 * time.Second

func runPasswd(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	dataDir := fs.String("data-dir", "", "the data directory, over server.data_dir and $"+config.EnvDataDir)
	generate := fs.Bool("generate", false, "make a new password and print it, rather than read one")
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	cfg, err := config.LoadWith(*path, config.Overrides{DataDir: *dataDir})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if cfg.Status.Password != "" {
		fmt.Fprintf(stderr, "hookbox passwd: %s: %v\n", *path, app.ErrPasswordInConfig)
		return 1
	}
	var pw string
	if *generate {
		pw = app.GeneratePassword()
	} else if pw, err = readNewPassword(stdin, stderr); err != nil {
		fmt.Fprintf(stderr, "hookbox passwd: %v\n", err)
		return 1
	}
	hash, err := app.HashPassword(pw)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox passwd: %v\n", err)
		return 1
	}
	done, err := storePasswordHash(ctx, cfg, hash)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox passwd: %v\n", err)
		return 1
	}
	if *generate {
		fmt.Fprintf(stdout, "user %s, password %s\n", cfg.Status.User, pw)
	}
	fmt.Fprintf(stdout, "status password of %s %s\n", cfg.Status.User, done)
	return 0
}

// readNewPassword reads a new password: twice without echo from a
// terminal, else the first line of f (a pipe or a file).
func readNewPassword(f *os.File, prompt io.Writer) (string, error) {
	if fd := int(f.Fd()); term.IsTerminal(fd) {
		fmt.Fprint(prompt, "New status password: ")
		a, err := term.ReadPassword(fd)
		fmt.Fprintln(prompt)
		if err != nil {
			return "", err
		}
		fmt.Fprint(prompt, "Again: ")
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(prompt)
		if err != nil {
			return "", err
		}
		if string(a) != string(b) {
			return "", errors.New("the two passwords differ; nothing was changed")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password on stdin (give one line, or run it in a terminal, or use -generate)")
	}
	return line, nil
}

// storePasswordHash stores hash as the status password and says where:
// straight into the data file of a stopped server, through a request file
// to a running one (which holds the file), or into the database that
// PostgreSQL nodes share (they take it up within a second).
func storePasswordHash(ctx context.Context, cfg *app.Config, hash []byte) (string, error) {
	if cfg.Storage.Backend == app.BackendPostgres {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		db, err := postgres.Open(octx, cfg.Storage.URL, postgres.Options{Lease: cfg.Storage.Lease, NoSearchIndex: !cfg.Storage.SearchIndex,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return "", fmt.Errorf("%s: storage: %w", cfg.Path, err)
		}
		defer db.Close()
		if err := db.SetMeta(ctx, app.PasswordHashKey, hash); err != nil {
			return "", fmt.Errorf("store the password in %s: %w", db.Where(), err)
		}
		return "set in " + db.Where() + "; running nodes take it up within a second", nil
	}
	dir := cfg.Server.DataDir
	db, err := bboltstore.Open(dir)
	if errors.Is(err, bboltstore.ErrLocked) {
		// A server runs on the file: hand it the hash.
		if err := app.WritePasswordRequest(dir, hash); err != nil {
			return "", err
		}
		wctx, cancel := context.WithTimeout(ctx, passwdWait)
		defer cancel()
		if err := app.WaitPasswordRequest(wctx, dir); err != nil {
			return "", err
		}
		return "changed: the running server took it", nil
	}
	if err != nil {
		return "", err
	}
	defer db.Close()
	if err := db.SetMeta(ctx, app.PasswordHashKey, hash); err != nil {
		return "", fmt.Errorf("store the password in %s: %w", db.Path(), err)
	}
	return "set in " + db.Path() + " (hookbox is not running; it uses it from its next start)", nil
}
