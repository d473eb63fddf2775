package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/mail"
)

func runCheck(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := configFlags(fs)
	env := fs.Bool("env", false, "only list the environment variables the config names, NAME<TAB>where, without reading them (checkenv.go)")
	sources := fs.Bool("sources", false, "only list the sources, NAME<TAB>PROVIDER")
	socket := fs.String("socket", defaultSocketUnit, "the systemd socket unit to compare with server.listen and server.http_listen (ignored when absent)")
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if *env || *sources {
		return checkMentions(*opts.path, *env, *sources, stdout, stderr)
	}
	if code := check(opts, stdout, stderr); code != 0 {
		return code
	}
	checkSocketUnit(opts, *socket, stderr)
	return 0
}

// check validates the config as serve would, then tries what serve would
// trip on at start: the data directory (created and written for real,
// then removed again if check made it) and the listen address.
func check(opts *configOptions, stdout, stderr io.Writer) int {
	path := *opts.path
	cfg, err := opts.load()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	failed := false
	if cfg.Storage.Backend != app.BackendPostgres {
		if err := config.CheckDataDir(cfg.Server.DataDir); err != nil {
			fmt.Fprintf(stderr, "%s: server.data_dir: %v: serve would stop at start\n", path, err)
			failed = true
		}
	}
	if err := config.CheckListen(cfg.Server.Listen); err != nil {
		fmt.Fprintf(stderr, "%s: server.listen: %v: serve could not listen on it\n", path, err)
		failed = true
	}
	if failed {
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\nlisten %s, data in %s\n", path, cfg.Server.Listen, dataWhere(cfg))
	printTLSAndBackups(stdout, cfg)
	printAlerts(stdout, cfg.Alerts)
	if local := printWhatGoesWhere(stdout, stderr, cfg); local { // checkmap.go
		fmt.Fprintf(stderr, "warning: server.public_url is not set: the URLs above are the listen address, which only this machine (or network) reaches; set public_url to the address senders use (https://hooks.example.com)\n")
	}
	// Unsafe modes are warnings: the config works, but others may read it.
	for _, w := range config.FileModeWarnings(path, cfg.Server.DataDir) {
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

// printAlerts adds where alerts go to the summary of `hookbox check`: the
// alert URL's host only (a webhook URL's path is its secret), the email
// addresses and the SMTP server without its credentials.
func printAlerts(w io.Writer, a app.AlertsConfig) {
	var to []string
	if a.URL != "" {
		host := "the alert URL"
		if u, err := url.Parse(a.URL); err == nil {
			host = u.Host
		}
		to = append(to, "to "+host+" (alerts.url)")
	}
	if len(a.EmailTo) > 0 {
		via := ""
		if s, err := mail.ParseURL(a.SMTPURL); err == nil {
			via = fmt.Sprintf(" through %s (%s)", s.Addr(), s.Security())
		}
		to = append(to, "by email to "+strings.Join(a.EmailTo, ", ")+via)
	}
	if len(to) == 0 {
		fmt.Fprintln(w, "alerts off (set alerts.url or alerts.email_to)")
		return
	}
	fmt.Fprintf(w, "alerts %s\n", strings.Join(to, " and "))
}

// defaultSocketUnit is where install.sh writes hookbox.socket.
const defaultSocketUnit = "/etc/systemd/system/hookbox.socket"

// checkSocketUnit warns where the socket unit at unit (none there: no
// word) and the config opts reads disagree: the server serves the unit's
// sockets, not server.listen (sockets.go).
func checkSocketUnit(opts *configOptions, unit string, stderr io.Writer) {
	text, err := os.ReadFile(unit)
	if err != nil {
		return
	}
	cfg, err := opts.load()
	if err != nil {
		return
	}
	wantHTTP := cfg.Server.TLS != app.TLSNone && cfg.Server.HTTPListen != ""
	for _, note := range socketDisagreements(unitListens(string(text)), cfg.Server, wantHTTP) {
		fmt.Fprintf(stderr, "warning: %s: %s\n", unit, note)
	}
}
