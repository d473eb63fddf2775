package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"hookbox/app/access"
	"hookbox/app/config"
)

// stdin is where passwd reads a new password and sign a body given as -;
// tests replace it.
var stdin = os.Stdin

func runPasswd(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	dataDir := fs.String("data-dir", "", "the data directory, over server.data_dir and $"+config.EnvDataDir)
	generate := fs.Bool("generate", false, "make a new password and print it, rather than read one")
	ops, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(ops) > 1 {
		fmt.Fprintf(stderr, "hookbox passwd: unexpected argument %q\n", ops[1])
		return 2
	}
	cfg, err := config.LoadWith(*path, config.Overrides{DataDir: *dataDir})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	name := cfg.Status.User
	if len(ops) == 1 {
		name = ops[0]
	}
	if cfg.Status.Password != "" && name == cfg.Status.User {
		fmt.Fprintf(stderr, "hookbox passwd: %s: %v\n", *path, access.ErrPasswordInConfig)
		return 1
	}
	var pw string
	if *generate {
		pw = access.GeneratePassword()
	} else if pw, err = readNewPassword(stdin, stderr); err != nil {
		fmt.Fprintf(stderr, "hookbox passwd: %v\n", err)
		return 1
	}
	hash, err := access.HashPassword(pw)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox passwd: %v\n", err)
		return 1
	}
	ans, where, err := doAccess(ctx, cfg, access.Request{Op: access.OpUserPasswd, Name: name, Hash: string(hash)})
	if err == nil && !ans.OK {
		err = errors.New(ans.Error)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hookbox passwd: %v\n", err)
		return 1
	}
	if *generate {
		fmt.Fprintf(stdout, "user %s, password %s\n", name, pw)
	}
	fmt.Fprintf(stdout, "password of %s changed (%s); their sessions end\n", name, where)
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
