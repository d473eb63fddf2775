package cli

import (
	"context"
	"fmt"
	"io"

	"hookbox/app"
)

func runCheck(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	path := configFlag(fs)
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	return check(*path, stdout, stderr)
}

func check(path string, stdout, stderr io.Writer) int {
	cfg, err := app.LoadConfig(path, nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\nlisten %s, data in %s\n", path, cfg.Server.Listen, dataWhere(cfg))
	printTLSAndBackups(stdout, cfg)
	for _, s := range cfg.Sources {
		fmt.Fprintf(stdout, "source %-16s %-12s POST %s\n", s.Name, s.Provider, s.URL)
	}
	// Unsafe modes are warnings: the config works, but others may read it.
	for _, w := range app.FileModeWarnings(path, cfg.Server.DataDir) {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return 0
}

// printTLSAndBackups adds the TLS mode and the backup schedule to the
// summary of `hookbox check`.
func printTLSAndBackups(w io.Writer, cfg *app.Config) {
	switch s := cfg.Server; s.TLS {
	case app.TLSACME:
		fmt.Fprintf(w, "https with a certificate for %s from %s; http %s answers the challenge and redirects\n",
			s.Domain, s.ACMEDirectory, s.HTTPListen)
	case app.TLSFiles:
		fmt.Fprintf(w, "https with %s, read again when it changes", s.CertFile)
		if s.HTTPListen != "" {
			fmt.Fprintf(w, "; http %s redirects", s.HTTPListen)
		}
		fmt.Fprintln(w)
	}
	if b := cfg.Backup; b.Schedule == "" {
		fmt.Fprintln(w, "backups off")
	} else {
		fmt.Fprintf(w, "backups %s into %s, keep %d\n", b.Schedule, b.Dir, b.Keep)
	}
}
