package config_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/mail"
)

const emailSource = "[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret = \"x\"\n"

// smtpSecret is the password in the SMTP URLs of these tests: no error
// may show it.
const smtpSecret = "smtp-Secret-7u8i"

func TestParseConfig_Email(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", emailSource+`[alerts]
email_to = ["ops@shop.example", "Dev Team <dev@shop.example>"]
email_from = "hookbox <hookbox@shop.example>"
smtp_url_env = "HOOKBOX_SMTP_URL"
`, env(map[string]string{"HOOKBOX_SMTP_URL": "smtp://u:" + smtpSecret + "@smtp.example.com:587"}))
		if err != nil {
			t.Fatal(err)
		}
		a := cfg.Alerts
		if got, want := strings.Join(a.EmailTo, ","), "ops@shop.example,dev@shop.example"; got != want {
			t.Errorf("EmailTo %q, want %q", got, want)
		}
		if a.EmailFrom != "hookbox <hookbox@shop.example>" || a.SMTPURL != "smtp://u:"+smtpSecret+"@smtp.example.com:587" || !a.Enabled() {
			t.Errorf("alerts = %+v", a)
		}
	})
	t.Run("OffWithoutEmailTo", func(t *testing.T) {
		// email_from and smtp_url_env stay unread until email_to is set:
		// commenting out email_to turns email off without another change.
		cfg, err := config.Parse("c.toml", emailSource+"[alerts]\nemail_from = \"hookbox@shop.example\"\nsmtp_url_env = \"UNSET\"\n", env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Alerts.Enabled() || cfg.Alerts.SMTPURL != "" {
			t.Errorf("alerts = %+v", cfg.Alerts)
		}
	})
	for _, tt := range []struct {
		name, toml string
		env        map[string]string
		want       []string // key: reason, one per mistake, in the order of the file
	}{
		{"Everything", `[alerts]
email_to = ["ops@shop.example", "not an address", "a@b\nBcc: c@d"]
smtp_url_env = "HOOKBOX SMTP"
`, nil, []string{
			"alerts.email_from: email_to is set: name the sender too", // on [alerts]'s line, the first
			`alerts.email_to[1]: "not an address" is not an email address`,
			"alerts.email_to[2]: an address cannot hold a line break",
			`alerts.smtp_url_env: "HOOKBOX SMTP" is not a valid environment variable name`,
		}},
		{"NoURLEnv", "[alerts]\nemail_to = [\"ops@shop.example\"]\nemail_from = \"x@shop.example\"\n", nil,
			[]string{"alerts.smtp_url_env: email_to is set: name the environment variable"}},
		{"URLEnvUnset", "[alerts]\nemail_to = [\"ops@shop.example\"]\nemail_from = \"x@shop.example\"\nsmtp_url_env = \"SMTP_URL\"\n", nil,
			[]string{"alerts.smtp_url_env: environment variable SMTP_URL is not set"}},
		{"URLEnvEmpty", "[alerts]\nemail_to = [\"ops@shop.example\"]\nemail_from = \"x@shop.example\"\nsmtp_url_env = \"SMTP_URL\"\n", map[string]string{"SMTP_URL": ""},
			[]string{"alerts.smtp_url_env: environment variable SMTP_URL is empty"}},
		{"URLScheme", "[alerts]\nemail_to = [\"ops@shop.example\"]\nemail_from = \"x@shop.example\"\nsmtp_url_env = \"SMTP_URL\"\n",
			map[string]string{"SMTP_URL": "https://u:" + smtpSecret + "@smtp.example.com"},
			[]string{`alerts.smtp_url_env: environment variable SMTP_URL does not hold an SMTP URL: it has the scheme "https"`}},
		{"URLBroken", "[alerts]\nemail_to = [\"ops@shop.example\"]\nemail_from = \"x@shop.example\"\nsmtp_url_env = \"SMTP_URL\"\n",
			map[string]string{"SMTP_URL": "smtp://u:" + smtpSecret + "@smtp.example.com:port"},
			[]string{"alerts.smtp_url_env: environment variable SMTP_URL does not hold an SMTP URL: it is not a URL"}},
		{"InsecureAuthToRemote", "[alerts]\nemail_to = [\"ops@shop.example\"]\nemail_from = \"x@shop.example\"\nsmtp_url_env = \"SMTP_URL\"\n",
			map[string]string{"SMTP_URL": "smtp+insecure://u:" + smtpSecret + "@relay.example.com"},
			[]string{"alerts.smtp_url_env: environment variable SMTP_URL does not hold an SMTP URL: it is smtp+insecure://, which sends in the clear"}},
		{"BadFrom", "[alerts]\nemail_from = \"hookbox\"\n", nil, []string{`alerts.email_from: "hookbox" is not an email address`}},
		{"LogAndAlertsAtOnce", "[alerts]\nemail_to = [\"ops@\"]\nemail_from = \"x@shop.example\"\nsmtp_url_env = \"U\"\n[log]\nformat = \"JSON\"\nlevel = \"verbose\"\n",
			map[string]string{"U": "smtp://h"},
			[]string{`alerts.email_to[0]: "ops@" is not an email address`, `log.format: "JSON": use "text"`, `log.level: "verbose": use "debug"`}},
	} {
		t.Run("Err"+tt.name, func(t *testing.T) {
			_, err := config.Parse("hookbox.toml", emailSource+tt.toml, env(tt.env))
			if err == nil {
				t.Fatal("accepted")
			}
			lines := strings.Split(lineNumber.ReplaceAllString(err.Error(), "hookbox.toml:"), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("%d mistakes reported, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], "hookbox.toml: "+want) {
					t.Errorf("mistake %d: %q, want it to start with %q", i, lines[i], "hookbox.toml: "+want)
				}
			}
			var ce *app.ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("err = %v, want ConfigErrors", err)
			}
			if strings.Contains(err.Error(), smtpSecret) || strings.Contains(err.Error(), "smtp.example.com") {
				t.Errorf("the error shows the SMTP URL: %v", err)
			}
		})
	}
}

func TestParseConfig_Log(t *testing.T) {
	for _, tt := range []struct {
		toml   string
		format string
		level  slog.Level
	}{
		{"", app.LogText, slog.LevelInfo},
		{"[log]\nformat = \"json\"\n", app.LogJSON, slog.LevelInfo},
		{"[log]\nformat = \"text\"\nlevel = \"debug\"\n", app.LogText, slog.LevelDebug},
		{"[log]\nlevel = \"warn\"\n", app.LogText, slog.LevelWarn},
		{"[log]\nlevel = \"error\"\n", app.LogText, slog.LevelError},
	} {
		cfg, err := config.Parse("c.toml", emailSource+tt.toml, env(nil))
		if err != nil {
			t.Errorf("%q: %v", tt.toml, err)
			continue
		}
		if cfg.Log.Format != tt.format || cfg.Log.Level != tt.level {
			t.Errorf("%q: %+v, want %s %v", tt.toml, cfg.Log, tt.format, tt.level)
		}
	}
	_, err := config.Parse("c.toml", emailSource+"[log]\ncolour = true\n", env(nil))
	if err == nil || !strings.Contains(err.Error(), "log.colour: unknown key") {
		t.Errorf("unknown key: %v", err)
	}
}

// README's email example loads with the URL its env file line gives, and
// its log example too.
func TestParseConfig_EmailReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := func(section, lang string) string {
		t.Helper()
		_, sec, ok := strings.Cut(string(readme), "\n## "+section+"\n")
		_, b, ok2 := strings.Cut(sec, "```"+lang+"\n")
		b, _, ok3 := strings.Cut(b, "```")
		if !ok || !ok2 || !ok3 {
			t.Fatalf("README has no %s example under ## %s", lang, section)
		}
		return b
	}
	name, url, ok := strings.Cut(strings.TrimSpace(block("Alerts by email", "sh")), "=")
	if !ok {
		t.Fatal("the env file line is not NAME=value")
	}
	cfg, err := config.Parse("readme.toml", emailSource+block("Alerts by email", "toml")+block("Logs", "toml"), env(map[string]string{name: url}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := mail.ParseURL(cfg.Alerts.SMTPURL)
	if err != nil || s.User != "hookbox@shop.example" || s.Addr() != "smtp.example.com:587" || s.Security() != "STARTTLS" {
		t.Errorf("SMTP server %+v (%v)", s, err)
	}
	if len(cfg.Alerts.EmailTo) != 1 || cfg.Log.Format != app.LogJSON {
		t.Errorf("alerts %+v, log %+v", cfg.Alerts, cfg.Log)
	}
}

// lineNumber is the line of a mistake, taken out to compare the rest.
var lineNumber = regexp.MustCompile(`(?m)^hookbox\.toml:\d+:`)
