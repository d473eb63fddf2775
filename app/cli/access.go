package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
)

// accessWait bounds how long user and token wait for a running server to
// answer their request (it looks every AccessPoll).
var accessWait = 10 * time.Second

// localActor is the audit actor of a command run on the box.
func localActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "local:" + u.Username
	}
	return "local:unknown"
}

// doAccess applies r: straight into the database on PostgreSQL (running
// nodes take it up within AccessPoll) or into the data file of a stopped
// server, else through a request file that the running server answers.
// It returns the answer and where the change was made.
func doAccess(ctx context.Context, cfg *app.Config, r access.Request) (access.Answer, string, error) {
	r.Actor = localActor()
	apply := func(s app.AccessStore, audit app.AuditStore, where string) (access.Answer, string, error) {
		if r.Op == access.OpUserPasswd && r.Name == cfg.Status.User {
			// A store no server has started on yet has no user: the
			// [status] user is made (or an older status password turned
			// into it) as the first start would, with this password.
			if _, err := s.EnsureFirstUser(ctx, r.Name, time.Now(), func() ([]byte, error) { return []byte(r.Hash), nil }); err != nil {
				return access.Answer{}, "", err
			}
		}
		a, err := access.New(ctx, cfg.Status, s, audit, slog.New(slog.DiscardHandler))
		if err != nil {
			return access.Answer{}, "", err
		}
		return a.Apply(ctx, r), where, nil
	}
	if cfg.Storage.Backend == app.BackendPostgres {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		db, err := postgres.Open(octx, cfg.Storage.URL, postgres.Options{Lease: cfg.Storage.Lease, NoSearchIndex: !cfg.Storage.SearchIndex,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return access.Answer{}, "", fmt.Errorf("%s: storage: %w", cfg.Path, err)
		}
		defer db.Close()
		return apply(db, db, db.Where()+"; running nodes take it up within a second")
	}
	dir := cfg.Server.DataDir
	db, err := bboltstore.Open(dir)
	if errors.Is(err, bboltstore.ErrLocked) {
		id, err := access.WriteRequest(dir, r)
		if err != nil {
			return access.Answer{}, "", err
		}
		wctx, cancel := context.WithTimeout(ctx, accessWait)
		defer cancel()
		ans, err := access.WaitAnswer(wctx, dir, id)
		return ans, "the running server", err
	}
	if err != nil {
		return access.Answer{}, "", err
	}
	defer db.Close()
	return apply(db, db, db.Path()+" (hookbox is not running; it uses it from its next start)")
}

// accessArgs parses args of a subcommand taking one NAME operand (want 1)
// or none (want 0) and the flags of fs, in any order.
func accessArgs(c *command, fs accessFlagSet, args []string, want int, stdout, stderr io.Writer) (string, int) {
	ops, code := c.parse(fs.FlagSet, args, stdout, stderr)
	if code >= 0 {
		return "", code
	}
	if len(ops) != want {
		if want == 1 {
			fmt.Fprintf(stderr, "hookbox %s: want one NAME\nRun 'hookbox %s -h' for usage.\n", c.name, c.name)
		} else {
			fmt.Fprintf(stderr, "hookbox %s: unexpected argument %q\n", c.name, ops[0])
		}
		return "", 2
	}
	if want == 1 {
		return ops[0], -1
	}
	return "", -1
}

// runAccessRequest loads the config, does r and prints ok or the answer's
// error; show prints a listing.
func runAccessRequest(ctx context.Context, c *command, path, dataDir string, r access.Request, stdout, stderr io.Writer, done string) (access.Answer, int) {
	cfg, err := config.LoadWith(path, config.Overrides{DataDir: dataDir})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return access.Answer{}, 1
	}
	ans, where, err := doAccess(ctx, cfg, r)
	if err != nil {
		fmt.Fprintf(stderr, "hookbox %s: %v\n", c.name, err)
		return ans, 1
	}
	if !ans.OK {
		fmt.Fprintf(stderr, "hookbox %s: %s\n", c.name, ans.Error)
		return ans, 1
	}
	if done != "" {
		fmt.Fprintf(stdout, "%s (%s)\n", done, where)
	}
	return ans, 0
}

// accessSubcommand reads the subcommand of user or token: its command and
// flags, or the exit code of a help or a usage error (code >= 0).
func accessSubcommand(c *command, args []string, stdout, stderr io.Writer) (*command, accessFlagSet, int) {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		c.usage(c.flags(), stdout)
		return nil, accessFlagSet{}, 0
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		c.usage(c.flags(), stderr)
		return nil, accessFlagSet{}, 2
	}
	sub := &command{name: c.name + " " + args[0], synopsis: c.synopsis, help: c.help}
	return sub, newAccessFlags(sub), -1
}

// runUser is hookbox user add|list|remove|role.
func runUser(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	sub, fs, code := accessSubcommand(c, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	switch args[0] {
	case "add":
		role := fs.String("role", "", "the user's role: viewer, operator or admin")
		generate := fs.Bool("generate", false, "make a password and print it once (the default on no terminal and an empty stdin is to refuse)")
		name, code := accessArgs(sub, fs, args[1:], 1, stdout, stderr)
		if code >= 0 {
			return code
		}
		if _, err := app.ParseRole(*role); err != nil {
			fmt.Fprintf(stderr, "hookbox %s: -role: %v\n", sub.name, err)
			return 2
		}
		pw, err := newPassword(*generate, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "hookbox %s: %v\n", sub.name, err)
			return 1
		}
		hash, err := access.HashPassword(pw)
		if err != nil {
			fmt.Fprintf(stderr, "hookbox %s: %v\n", sub.name, err)
			return 1
		}
		_, code = runAccessRequest(ctx, sub, *fs.config, *fs.dataDir, access.Request{Op: access.OpUserAdd, Name: name, Role: *role, Hash: string(hash)},
			stdout, stderr, "user "+name+" added with role "+*role)
		if code == 0 && *generate {
			fmt.Fprintf(stdout, "user %s, password %s (shown only this once)\n", name, pw)
		}
		return code
	case "list":
		_, code := accessArgs(sub, fs, args[1:], 0, stdout, stderr)
		if code >= 0 {
			return code
		}
		ans, code := runAccessRequest(ctx, sub, *fs.config, *fs.dataDir, access.Request{Op: access.OpUserList}, stdout, stderr, "")
		if code != 0 {
			return code
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tROLE\tCREATED\tCHANGED\t")
		for _, u := range ans.Users {
			if u.PasswordInConfig {
				fmt.Fprintf(w, "%s\t%s\t-\t-\tpassword in the config\n", u.Name, u.Role)
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t\n", u.Name, u.Role, listTime(u.Created), listTime(u.Changed))
		}
		w.Flush()
		return 0
	case "remove":
		name, code := accessArgs(sub, fs, args[1:], 1, stdout, stderr)
		if code >= 0 {
			return code
		}
		_, code = runAccessRequest(ctx, sub, *fs.config, *fs.dataDir, access.Request{Op: access.OpUserRemove, Name: name},
			stdout, stderr, "user "+name+" removed; their sessions end")
		return code
	case "role":
		ops, code := sub.parse(fs.FlagSet, args[1:], stdout, stderr)
		if code >= 0 {
			return code
		}
		if len(ops) != 2 {
			fmt.Fprintf(stderr, "hookbox %s: want NAME ROLE\n", sub.name)
			return 2
		}
		if _, err := app.ParseRole(ops[1]); err != nil {
			fmt.Fprintf(stderr, "hookbox %s: %v\n", sub.name, err)
			return 2
		}
		_, code = runAccessRequest(ctx, sub, *fs.config, *fs.dataDir, access.Request{Op: access.OpUserRole, Name: ops[0], Role: ops[1]},
			stdout, stderr, "user "+ops[0]+" now has role "+ops[1]+"; their sessions end")
		return code
	}
	fmt.Fprintf(stderr, "hookbox user: unknown subcommand %q (add, list, remove, role)\n", args[0])
	return 2
}

// runToken is hookbox token create|list|revoke.
func runToken(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	sub, fs, code := accessSubcommand(c, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	switch args[0] {
	case "create":
		name := fs.String("name", "", "the token's name")
		role := fs.String("role", "", "the token's role: viewer, operator or admin")
		expires := fs.String("expires", "", "its life, as 90d, 12h or 30m (default: never expires)")
		if _, code := accessArgs(sub, fs, args[1:], 0, stdout, stderr); code >= 0 {
			return code
		}
		if _, err := app.ParseRole(*role); err != nil {
			fmt.Fprintf(stderr, "hookbox %s: -role: %v\n", sub.name, err)
			return 2
		}
		var ttl time.Duration
		if *expires != "" {
			var err error
			if ttl, err = app.ParseExpiry(*expires); err != nil {
				fmt.Fprintf(stderr, "hookbox %s: -expires: %v\n", sub.name, err)
				return 2
			}
		}
		secret := app.NewTokenSecret()
		h := app.TokenHash(secret)
		_, code := runAccessRequest(ctx, sub, *fs.config, *fs.dataDir, access.Request{Op: access.OpTokenAdd, Name: *name, Role: *role,
			TokenHash: hex.EncodeToString(h[:]), TTLSeconds: int64(ttl / time.Second)}, stdout, stderr, "token "+*name+" created with role "+*role)
		if code == 0 {
			fmt.Fprintln(stdout, secret)
			fmt.Fprintln(stdout, "Keep it now: it cannot be shown again (only its hash is stored).")
		}
		return code
	case "list":
		if _, code := accessArgs(sub, fs, args[1:], 0, stdout, stderr); code >= 0 {
			return code
		}
		ans, code := runAccessRequest(ctx, sub, *fs.config, *fs.dataDir, access.Request{Op: access.OpTokenList}, stdout, stderr, "")
		if code != 0 {
			return code
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tROLE\tCREATED\tLAST USED\tEXPIRES")
		for _, t := range ans.Tokens {
			exp := "never"
			if !t.Expires.IsZero() {
				exp = listTime(t.Expires)
			}
			used := "never"
			if !t.LastUsed.IsZero() {
				used = listTime(t.LastUsed)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, listTime(t.Created), used, exp)
		}
		w.Flush()
		return 0
	case "revoke":
		name, code := accessArgs(sub, fs, args[1:], 1, stdout, stderr)
		if code >= 0 {
			return code
		}
		_, code = runAccessRequest(ctx, sub, *fs.config, *fs.dataDir, access.Request{Op: access.OpTokenRevok, Name: name},
			stdout, stderr, "token "+name+" revoked")
		return code
	}
	fmt.Fprintf(stderr, "hookbox token: unknown subcommand %q (create, list, revoke)\n", args[0])
	return 2
}

// listTime is a time in the user and token lists: local, with its zone.
func listTime(t time.Time) string { return printTime(t, time.Local) }

// newPassword makes one (generate) or reads one as passwd does.
func newPassword(generate bool, prompt io.Writer) (string, error) {
	if generate {
		return access.GeneratePassword(), nil
	}
	return readNewPassword(stdin, prompt)
}

// accessFlagSet is the flags every user and token subcommand takes.
type accessFlagSet struct {
	*flag.FlagSet
	config, dataDir *string
}

func newAccessFlags(c *command) accessFlagSet {
	fs := c.flags()
	return accessFlagSet{FlagSet: fs, config: configFlag(fs),
		dataDir: fs.String("data-dir", "", "the data directory, over server.data_dir and $"+config.EnvDataDir)}
}
