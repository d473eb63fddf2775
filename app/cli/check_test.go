package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck_Preflight(t *testing.T) {
	t.Run("URLsWithoutPublicURL", func(t *testing.T) {
		config := writeTestConfig(t, "", "[server]\nlisten = \"0.0.0.0:8123\"\n")
		code, out := runCmd("check", "-config", config)
		if code != 0 || !strings.Contains(out, "POST http://127.0.0.1:8123/in/gh") || !strings.Contains(out, "public_url is not set") {
			t.Fatalf("check: %d\n%s", code, out)
		}
	})
	t.Run("URLsFromPublicURL", func(t *testing.T) {
		config := writeTestConfig(t, "", "[server]\npublic_url = \"https://hooks.example.com\"\n")
		code, out := runCmd("check", "-config", config)
		if code != 0 || !strings.Contains(out, "POST https://hooks.example.com/in/gh") || strings.Contains(out, "public_url is not set") {
			t.Fatalf("check: %d\n%s", code, out)
		}
	})
	t.Run("ErrDataDirUncreatable", func(t *testing.T) {
		config := writeTestConfig(t, "", "[server]\ndata_dir = \"/proc/hookbox\"\n")
		code, out := runCmd("check", "-config", config)
		if code != 1 || !strings.Contains(out, "server.data_dir: cannot create /proc/hookbox") {
			t.Fatalf("check: %d\n%s", code, out)
		}
		// serve fails on it too: check said what serve trips on.
		if code, out := runCmd("serve", "-config", config, "-listen", freePort(t)); code != 1 || !strings.Contains(out, "/proc/hookbox") {
			t.Fatalf("serve: %d\n%s", code, out)
		}
	})
	t.Run("ErrListen", func(t *testing.T) {
		config := writeTestConfig(t, "", "")
		code, out := runCmd("check", "-config", config, "-listen", "127.0.0.1:no-such-port")
		if code != 1 || !strings.Contains(out, "server.listen") || !strings.Contains(out, "no-such-port") {
			t.Fatalf("check: %d\n%s", code, out)
		}
	})
	t.Run("Overrides", func(t *testing.T) {
		config := writeTestConfig(t, "", "[server]\nlisten = \"127.0.0.1:1111\"\n")
		t.Setenv("HOOKBOX_LISTEN", "127.0.0.1:2222")
		if _, out := runCmd("check", "-config", config); !strings.Contains(out, "listen 127.0.0.1:2222") {
			t.Fatalf("HOOKBOX_LISTEN not taken:\n%s", out)
		}
		if _, out := runCmd("check", "-config", config, "-listen", "127.0.0.1:3333"); !strings.Contains(out, "listen 127.0.0.1:3333") {
			t.Fatalf("-listen not over HOOKBOX_LISTEN:\n%s", out)
		}
		dir := t.TempDir()
		if _, out := runCmd("check", "-config", config, "-data-dir", dir); !strings.Contains(out, "data in "+dir) {
			t.Fatalf("-data-dir not taken:\n%s", out)
		}
	})
}

// check compiles every rule: a transform that cannot make a body stops it
// with the route, the key and CEL's reason, as serve would stop.
func TestCheck_Rules(t *testing.T) {
	rules := "[[destination]]\nname = \"d\"\nurl = \"https://d.example.com\"\n[[route]]\nname = \"r\"\nsource = \"gh\"\nto = [\"d\"]\n"
	config := writeTestConfig(t, "", rules+"filter = 'topic == \"push\"'\ntransform = 'size(body)'\n")
	code, out := runCmd("check", "-config", config)
	if code != 1 || !strings.Contains(out, "route[0] (r).transform: a transform must give a map or a list (sent as JSON) or a string (sent as is); this expression gives int") {
		t.Fatalf("check: %d\n%s", code, out)
	}
	config = writeTestConfig(t, "", rules+"filter = 'topic == \"push\"'\ntransform = '{\"text\": topic}'\norder_key = \"{body.repository.id}\"\n")
	if code, out := runCmd("check", "-config", config); code != 0 {
		t.Fatalf("check: %d\n%s", code, out)
	}
}

// check says where alerts go: the alert URL's host (not its path, often
// its secret), the email addresses and the SMTP server without its
// password.
func TestCheck_Alerts(t *testing.T) {
	t.Run("Off", func(t *testing.T) {
		if code, out := runCmd("check", "-config", writeTestConfig(t, "", "")); code != 0 || !strings.Contains(out, "alerts off") {
			t.Fatalf("check: %d\n%s", code, out)
		}
	})
	t.Run("URLAndEmail", func(t *testing.T) {
		t.Setenv("CHECK_SMTP_URL", "smtps://alerts:smtp-pw-Check-5t6y@smtp.example.com")
		config := writeTestConfig(t, "", `[alerts]
url = "https://hooks.slack.example/services/T0/B0/slack-path-Check-3e4r"
email_to = ["ops@shop.example", "dev@shop.example"]
email_from = "hookbox@shop.example"
smtp_url_env = "CHECK_SMTP_URL"
`)
		code, out := runCmd("check", "-config", config)
		want := "alerts to hooks.slack.example (alerts.url) and by email to ops@shop.example, dev@shop.example through smtp.example.com:465 (TLS)\n"
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("check: %d\n%s\nwant the line %q", code, out, want)
		}
		for _, secret := range []string{"slack-path-Check", "smtp-pw-Check", "alerts:"} {
			if strings.Contains(out, secret) {
				t.Errorf("check shows %q:\n%s", secret, out)
			}
		}
	})
}

// check says where the socket unit and the config disagree: serve takes
// the unit's sockets, not server.listen (issue 46).
func TestCheck_SocketUnit(t *testing.T) {
	config := writeTestConfig(t, "", "[server]\nlisten = \"127.0.0.1:8123\"\n")
	unit := filepath.Join(t.TempDir(), "hookbox.socket")
	for _, tc := range []struct{ listen, want string }{
		{"127.0.0.1:8123", ""},
		{"127.0.0.1:9000", "listens on 127.0.0.1:9000 but server.listen is 127.0.0.1:8123"},
	} {
		if err := os.WriteFile(unit, []byte("[Socket]\nListenStream="+tc.listen+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out := runCmd("check", "-config", config, "-socket", unit)
		if code != 0 {
			t.Fatalf("check: %d\n%s", code, out)
		}
		if tc.want == "" && strings.Contains(out, unit) || tc.want != "" && !strings.Contains(out, tc.want) {
			t.Fatalf("ListenStream=%s: check said\n%s\nwant %q", tc.listen, out, tc.want)
		}
	}
}
