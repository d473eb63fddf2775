// The keys of email alerts ([alerts] email_to, email_from, smtp_url_env)
// and of the log ([log] format, level).

package config

import (
	"fmt"
	"log/slog"
	netmail "net/mail"
	"regexp"
	"strings"

	"hookbox/app"
	"hookbox/app/mail"
)

// rawEmail is the email part of [alerts], embedded in rawAlerts.
type rawEmail struct {
	EmailTo    []string `toml:"email_to"`
	EmailFrom  string   `toml:"email_from"`
	SMTPURLEnv string   `toml:"smtp_url_env"`
}

type rawLog struct {
	Format string `toml:"format"`
	Level  string `toml:"level"`
}

// envName is what a shell (and systemd's EnvironmentFile) takes as a
// variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// email checks the email keys of [alerts]. The SMTP URL holds a password:
// no error shows it, nor any part of it but its scheme.
func (v *validator) email(a *app.AlertsConfig, r rawEmail) {
	for i, s := range r.EmailTo {
		key := fmt.Sprintf("alerts.email_to[%d]", i)
		addr, err := netmail.ParseAddress(s)
		switch {
		case strings.ContainsAny(s, "\r\n\x00"):
			v.fail(key, "an address cannot hold a line break or NUL")
		case err != nil:
			v.fail(key, fmt.Sprintf("%q is not an email address (%v)", s, strings.TrimPrefix(err.Error(), "mail: ")))
		default:
			a.EmailTo = append(a.EmailTo, addr.Address)
		}
	}
	if r.EmailFrom != "" {
		if strings.ContainsAny(r.EmailFrom, "\r\n\x00") {
			v.fail("alerts.email_from", "an address cannot hold a line break or NUL")
		} else if _, err := netmail.ParseAddress(r.EmailFrom); err != nil {
			v.fail("alerts.email_from", fmt.Sprintf(`%q is not an email address, e.g. "hookbox@shop.example" or "hookbox <hookbox@shop.example>" (%v)`,
				r.EmailFrom, strings.TrimPrefix(err.Error(), "mail: ")))
		} else {
			a.EmailFrom = r.EmailFrom
		}
	}
	if len(r.EmailTo) == 0 {
		return // email_from and smtp_url_env wait, unread, for email_to
	}
	if r.EmailFrom == "" {
		v.fail("alerts.email_from", "email_to is set: name the sender too, e.g. email_from = \"hookbox@shop.example\"")
	}
	name := r.SMTPURLEnv
	switch {
	case name == "":
		v.fail("alerts.smtp_url_env", "email_to is set: name the environment variable that holds the SMTP server's URL (smtp://user:password@host:587), e.g. smtp_url_env = \"HOOKBOX_SMTP_URL\"")
		return
	case !v.envNameOK("alerts.smtp_url_env", name):
		return
	}
	val, ok := v.env(name)
	switch {
	case !ok:
		v.fail("alerts.smtp_url_env", v.notSet(name)+" (it should hold the SMTP server's URL, smtp://user:password@host:587)")
		return
	case val == "":
		v.fail("alerts.smtp_url_env", fmt.Sprintf("environment variable %s is empty", name)+v.setItIn())
		return
	}
	if _, err := mail.ParseURL(val); err != nil {
		v.fail("alerts.smtp_url_env", fmt.Sprintf("environment variable %s does not hold an SMTP URL: it %v", name, err))
		return
	}
	a.SMTPURL = val
}

// log checks the [log] table: format text (the default) or json, level
// info (the default), debug, warn or error.
func (v *validator) log(l *app.LogConfig, r rawLog) {
	switch r.Format {
	case "", app.LogText:
		l.Format = app.LogText
	case app.LogJSON:
		l.Format = app.LogJSON
	default:
		v.fail("log.format", fmt.Sprintf("%q: use %q (key=value, the default) or %q (one JSON object a line)", r.Format, app.LogText, app.LogJSON))
	}
	l.Level = slog.LevelInfo
	if r.Level != "" {
		if lv, ok := ParseLevel(r.Level); ok {
			l.Level = lv
		} else {
			v.fail("log.level", fmt.Sprintf("%q: use \"debug\", \"info\" (the default), \"warn\" or \"error\"", r.Level))
		}
	}
}

// ParseLevel reads a log level by its name: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}
