package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"hookbox/app/bench"
	"hookbox/app/cli/clitest"
	"hookbox/storage/bboltstore"
)

// freePort is bench's PickPort for tests: a free port on 127.0.0.1, below
// the kernel's ephemeral range, that a config can name before the server
// starts.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := bench.PickPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// hookbox runs the built binary with args and stdin, and returns its
// stdout, stderr and exit code.
func hookbox(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	return hookboxWith(t, nil, stdin, args...)
}

// runCLI runs the binary with the e2e environment (e2eEnv).
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return hookboxWith(t, e2eEnv(), nil, args...)
}

// hookboxAt runs a hookbox command with -config config and -listen addr
// (the server's bound address: its file says 127.0.0.1:0) and the e2e
// environment.
func hookboxAt(t *testing.T, config, addr string, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	return hookboxWith(t, e2eEnv(), stdin, append([]string{args[0], "-config", config, "-listen", addr}, args[1:]...)...)
}

// hookboxWith is hookbox with env added to the environment.
func hookboxWith(t *testing.T, env []string, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(clitest.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run hookbox %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// signSources is one [[source]] per provider, each named after its provider.
func signSources() string {
	std := "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-webhooks-key-for-tests"))
	var b strings.Builder
	for _, s := range []struct{ provider, secret, extra string }{
		{"shopify", "shpss_cli_secret", ""},
		{"stripe", "whsec_stripe_cli_secret", ""},
		{"woocommerce", "woo cli secret", ""},
		{"bigcommerce", "bigcommerce-client-secret", ""},
		{"square", "square-signature-key", ""},
		{"paddle", "pdl_ntfset_cli_secret", ""},
		{"github", "github-cli-secret", ""},
		{"standard", std, ""},
		{"hmac", "hmac-cli-secret", "signature_header = \"X-Signature\"\nsignature_encoding = \"base64\"\n" +
			"signature_prefix = \"sha256=\"\nid = \"{header.X-Event-Id}\"\ntopic = \"{header.X-Event-Type}\"\n"},
		{"token", "token-cli-secret", ""},
	} {
		fmt.Fprintf(&b, "\n[[source]]\nname = %q\nprovider = %q\nsecret = %q\n%s", s.provider, s.provider, s.secret, s.extra)
	}
	return b.String()
}

// signBody is a body that carries the event id and topic of every provider
// that reads them from the body, unique per tag; it has a quote, a percent
// sign and characters a JSON encoder would escape.
func signBody(tag string) []byte {
	return []byte(fmt.Sprintf(`{"id":"evt_%[1]s","type":"test.event","event_id":"ev_%[1]s",`+
		`"event_type":"test.event","hash":"h_%[1]s","scope":"store/order/created",`+
		`"note":"it's a/b & <c> 100%%"}`, tag) + "\n")
}

// acceptedAnswer checks that out is an accepted answer of POST /in/.
func acceptedAnswer(t *testing.T, out string) {
	t.Helper()
	out = strings.TrimSpace(out)
	var answer struct{ Status, ID string }
	if err := json.Unmarshal([]byte(out), &answer); err != nil || answer.Status != "accepted" || answer.ID == "" {
		t.Fatalf("answer %q is not accepted (%v)", out, err)
	}
}

// `hookbox sign` makes requests a running hookbox accepts, for every
// provider: sent by the command itself, and as the curl command it prints.
// Then `hookbox backup` saves a copy that holds the accepted events.
func TestSign(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	config := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf("[server]\nlisten = \"127.0.0.1:%d\"\npublic_url = \"http://127.0.0.1:%d\"\ndata_dir = %q\n\n[status]\npassword = \"pw-cli\"\n",
		port, port, filepath.Join(dir, "data")) + signSources()
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, config)
	if want := "127.0.0.1:" + strconv.Itoa(port); p.addr != want {
		t.Fatalf("listening on %s, want %s", p.addr, want)
	}
	_, curlErr := exec.LookPath("curl")
	providers := []string{"shopify", "stripe", "woocommerce", "bigcommerce", "square", "paddle", "github", "standard", "hmac", "token"}
	headerTopic := map[string]bool{"shopify": true, "woocommerce": true, "github": true, "hmac": true, "token": true}

	t.Run("Providers", func(t *testing.T) {
		for i, name := range providers {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				args := []string{"sign", "-config", config, "-source", name}
				if headerTopic[name] {
					args = append(args, "-topic", "test.event")
				}
				t.Run("Send", func(t *testing.T) {
					body := signBody(name + "-send")
					file := filepath.Join(dir, name+"-send.json")
					os.WriteFile(file, body, 0o600)
					// Flags after the file work too; odd ones read the body from stdin.
					a := append(append([]string{}, args...), file, "-send")
					if i%2 == 1 {
						a[len(a)-2] = "-"
					}
					out, errOut, code := hookbox(t, body, a...)
					if code != 0 || !strings.HasPrefix(out, "200 ") {
						t.Fatalf("sign -send: exit %d\n%s%s", code, out, errOut)
					}
					acceptedAnswer(t, strings.TrimPrefix(out, "200 "))
				})
				t.Run("Curl", func(t *testing.T) {
					if curlErr != nil {
						t.Skip("curl is not installed")
					}
					body := signBody(name + "-curl")
					file := filepath.Join(dir, name+"-curl.json")
					os.WriteFile(file, body, 0o600)
					a := append(append([]string{}, args...), file)
					if i%2 == 0 {
						a[len(a)-1] = "-"
					}
					out, errOut, code := hookbox(t, body, a...)
					if code != 0 || !strings.Contains(out, "curl ") {
						t.Fatalf("sign: exit %d\n%s%s", code, out, errOut)
					}
					got, err := exec.Command("bash", "-c", out).CombinedOutput()
					if err != nil {
						t.Fatalf("the curl command failed: %v\n%s\ncommand:\n%s", err, got, out)
					}
					acceptedAnswer(t, string(got))
				})
			})
		}
	})

	t.Run("Errors", func(t *testing.T) {
		file := filepath.Join(dir, "no-id.json")
		os.WriteFile(file, []byte(`{"type":"charge.succeeded"}`), 0o600)
		for _, tt := range []struct {
			name string
			args []string
			want string
		}{
			{"NoIDInBody", []string{"-source", "stripe", "-send", file}, `the body has no event id (field "id")`},
			{"IDFlagForBodyID", []string{"-source", "paddle", "-id", "x", file}, `takes the event id from the body (field "event_id")`},
			{"TopicFlagForBodyTopic", []string{"-source", "standard", "-topic", "x", file}, `takes the topic from the body (field "type")`},
			{"UnknownSource", []string{"-source", "nope", file}, `has no [[source]] named "nope"`},
			{"NoBody", []string{"-source", "github", filepath.Join(dir, "missing.json")}, "read the body"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				out, errOut, code := hookbox(t, nil, append([]string{"sign", "-config", config}, tt.args...)...)
				if code != 1 || out != "" || !strings.Contains(errOut, tt.want) {
					t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errOut, tt.want)
				}
			})
		}
		// A wrong signature is reported with the server's answer and exit 1.
		wrong := filepath.Join(dir, "wrong.toml")
		os.WriteFile(wrong, bytes.Replace([]byte(cfg), []byte("github-cli-secret"), []byte("other"), 1), 0o600)
		out, _, code := hookbox(t, nil, "sign", "-config", wrong, "-source", "github", "-send", file)
		if code != 1 || !strings.HasPrefix(out, "401 ") {
			t.Fatalf("wrong secret: exit %d, %q; want 401 and exit 1", code, out)
		}
	})

	t.Run("ShopifyHeaders", func(t *testing.T) {
		for _, form := range []string{"legacy", "new", "both"} {
			body := signBody("shopify-" + form)
			out, errOut, code := hookbox(t, body, "sign", "-config", config, "-source", "shopify", "-shopify-headers", form, "-send", "-")
			if code != 0 || !strings.HasPrefix(out, "200 ") {
				t.Fatalf("-shopify-headers %s: exit %d\n%s%s", form, code, out, errOut)
			}
			acceptedAnswer(t, strings.TrimPrefix(out, "200 "))
			// The printed command carries the form asked for, and only it.
			out, errOut, code = hookbox(t, body, "sign", "-config", config, "-source", "shopify", "-shopify-headers", form, "-")
			legacy, modern := strings.Contains(out, "'X-Shopify-Shop-Domain: "), strings.Contains(out, "'Shopify-Shop-Domain: ")
			if code != 0 || legacy != (form != "new") || modern != (form != "legacy") || !strings.Contains(out, "Api-Version: ") {
				t.Fatalf("-shopify-headers %s: exit %d\n%s%s", form, code, out, errOut)
			}
		}
		for _, tt := range []struct{ name, source, form, want string }{
			{"ErrUnknownForm", "shopify", "lowercase", `-shopify-headers: unknown Shopify header form "lowercase" (use legacy, new, both)`},
			{"ErrNotShopify", "github", "new", `-shopify-headers: source "github" is github, not shopify`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				out, errOut, code := hookbox(t, nil, "sign", "-config", config, "-source", tt.source, "-shopify-headers", tt.form, "/dev/null")
				if code != 2 || out != "" || !strings.Contains(errOut, tt.want) {
					t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errOut, tt.want)
				}
			})
		}
	})

	t.Run("Backup", func(t *testing.T) {
		backupFile := filepath.Join(dir, "backups", "hookbox.db")
		os.Mkdir(filepath.Dir(backupFile), 0o700)
		out, errOut, code := hookbox(t, nil, "backup", "-config", config, "-o", backupFile)
		if code != 0 || !strings.Contains(out, backupFile) || !strings.Contains(out, "check passed") {
			t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
		}
		fi, err := os.Stat(backupFile)
		if err != nil || fi.Size() == 0 || fi.Mode().Perm() != 0o600 {
			t.Fatalf("backup file: %v, %v", fi, err)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(backupFile), ".*")); len(left) > 0 {
			t.Errorf("temp files left: %v", left)
		}
		if err := bboltstore.CheckFile(backupFile); err != nil {
			t.Fatalf("bbolt check of the backup: %v", err)
		}
		// The copy is a data file hookbox can open, holding what was accepted.
		restore := filepath.Join(dir, "restore")
		os.Mkdir(restore, 0o700)
		data, _ := os.ReadFile(backupFile)
		os.WriteFile(filepath.Join(restore, bboltstore.FileName), data, 0o600)
		db, err := bboltstore.Open(restore)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, _, ok, err := db.LookupID(context.Background(), "stripe", "evt_stripe-send"); err != nil || !ok {
			t.Fatalf("the backup lacks an accepted event: %v, %v", ok, err)
		}

		// A wrong password: exit 1, nothing written. Its data_dir is
		// elsewhere: no local socket there, so the password is what the
		// command sends, to the same server.
		bad := filepath.Join(dir, "badpw.toml")
		badCfg := bytes.Replace([]byte(cfg), []byte(`"pw-cli"`), []byte(`"wrong"`), 1)
		badCfg = bytes.Replace(badCfg, []byte(strconv.Quote(filepath.Join(dir, "data"))), []byte(strconv.Quote(filepath.Join(dir, "elsewhere"))), 1)
		os.WriteFile(bad, badCfg, 0o600)
		other := filepath.Join(dir, "backups", "other.db")
		out, errOut, code = hookbox(t, nil, "backup", "-config", bad, "-o", other)
		if _, err := os.Stat(other); code != 1 || !strings.Contains(errOut, "401") || err == nil {
			t.Fatalf("backup with a wrong password: exit %d, %q %q, file: %v", code, out, errOut, err)
		}
	})
	p.stop(t)
}

func TestBackup_AdminAPIClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	os.WriteFile(config, []byte("[[source]]\nname = \"a\"\nprovider = \"github\"\nsecret = \"s\"\n"), 0o600)
	_, errOut, code := hookbox(t, nil, "backup", "-config", config, "-o", filepath.Join(dir, "b.db"))
	if code != 1 || !strings.Contains(errOut, "no credential: set HOOKBOX_TOKEN") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	if _, errOut, code = hookbox(t, nil, "backup", "-config", config); code != 2 || !strings.Contains(errOut, "-o FILE") {
		t.Fatalf("without -o: exit %d, %q", code, errOut)
	}
}

// `hookbox check` on a broken config prints one line naming the file and
// the key, and exits 1.
func TestCheck_BrokenConfigs(t *testing.T) {
	const src = "[[source]]\nname = \"a\"\nprovider = \"github\"\nsecret = \"s\"\n"
	const dst = "[[destination]]\nname = \"d\"\nurl = \"http://127.0.0.1:9/hook\"\n"
	for _, tt := range []struct {
		name, toml, key string
	}{
		{"UnknownKey", src + "secrett = \"y\"\n", "source[0] (a).secrett: unknown key; did you mean secret?"},
		{"UnknownTable", src + "[sever]\nlisten = \"x\"\n", "sever: unknown key; did you mean server?"},
		{"BadDuration", src + "[retention]\nevent_ids = \"30d\"\n", "retention.event_ids: \"30d\" is not a duration"},
		{"BadTolerance", src + "tolerance = \"5 minutes\"\n", "source[0] (a).tolerance:"},
		{"MissingSecret", "[[source]]\nname = \"a\"\nprovider = \"github\"\n", "source[0] (a).secret: no secret"},
		{"EnvUnset", "[[source]]\nname = \"a\"\nprovider = \"github\"\nsecret_env = \"HOOKBOX_TEST_UNSET_VAR\"\n",
			"source[0] (a).secret_env: environment variable HOOKBOX_TEST_UNSET_VAR is not set"},
		{"DuplicateSource", src + src, "source[1] (a).name: duplicate source name"},
		{"UnknownProvider", "[[source]]\nname = \"a\"\nprovider = \"gitlab\"\nsecret = \"s\"\n", "source[0] (a).provider: unknown provider \"gitlab\""},
		{"RouteToUnknownDestination", src + dst + "[[route]]\nsource = \"a\"\nto = [\"d\", \"nowhere\"]\n", "route[0].to[1]: no [[destination]] named \"nowhere\""},
		{"RouteFromUnknownSource", src + dst + "[[route]]\nsource = \"b\"\nto = [\"d\"]\n", "route[0].source: no [[source]] named \"b\""},
		{"BadDestinationURL", src + "[[destination]]\nname = \"d\"\nurl = \"ftp://example.com/x\"\n", "destination[0] (d).url:"},
		{"DestinationURLWithPassword", src + "[[destination]]\nname = \"d\"\nurl = \"https://u:p@example.com/x\"\n", "destination[0] (d).url:"},
		{"BadRateLimit", src + dst + "[[route]]\nsource = \"a\"\nto = [\"d\"]\nkey = \"{body.id}\"\nrate_limit = \"five per minute\"\n", "route[0].rate_limit:"},
		{"BadListen", "[server]\nlisten = \"nohost\"\n" + src, "server.listen:"},
		{"SquareWithoutPublicURL", "[[source]]\nname = \"sq\"\nprovider = \"square\"\nsecret = \"s\"\n", "server.public_url:"},
		{"HMACWithoutHeader", "[[source]]\nname = \"h\"\nprovider = \"hmac\"\nsecret = \"s\"\nid = \"{body.id}\"\n", "source[0] (h).signature_header:"},
		{"TOMLSyntax", src + "secret = \n", "source.secret: expected value"},
		{"CommandMissing", src + "[[destination]]\nname = \"orders-script\"\ncommand = [\"/nonexistent/on-order\", \"--token\", \"t0k3n\"]\n",
			"destination[0] (orders-script).command[0]: /nonexistent/on-order does not exist"},
		{"CommandAndURL", src + "[[destination]]\nname = \"d\"\nurl = \"http://127.0.0.1:9/\"\ncommand = [\"/bin/true\"]\n",
			"destination[0] (d).command: a destination has either url or command, not both"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "hookbox.toml")
			if err := os.WriteFile(path, []byte(tt.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := hookbox(t, nil, "check", "-config", path)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, out, errOut)
			}
			lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
			if out != "" || len(lines) != 1 {
				t.Fatalf("want one line on stderr and nothing on stdout; stdout %q stderr %q", out, errOut)
			}
			// The line number is the config's own tests' business.
			got := regexp.MustCompile("^"+regexp.QuoteMeta(path)+`:\d+:`).ReplaceAllString(lines[0], path+":")
			if want := path + ": " + tt.key; !strings.HasPrefix(got, want) {
				t.Fatalf("got  %q\nwant %q…", lines[0], want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out, errOut, code := hookbox(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "hookbox ") || len(strings.TrimSpace(out)) <= len("hookbox ") ||
		strings.Count(out, "\n") != 1 || errOut != "" {
		t.Fatalf("version: exit %d, %q %q", code, out, errOut)
	}
	t.Logf("%s", strings.TrimSpace(out))
}

// Each command prints its own usage for -h, on stdout, and exits 0.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	usage, _, _ := hookbox(t, nil, "help")
	var names []string
	for line := range strings.Lines(usage) {
		if rest, ok := strings.CutPrefix(line, "  hookbox "); ok {
			names = append(names, strings.Fields(rest)[0])
		}
	}
	if len(names) < 8 {
		t.Fatalf("hookbox help lists %v:\n%s", names, usage)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{{name, "-h"}, {"help", name}} {
				out, errOut, code := hookbox(t, nil, args...)
				if code != 0 || !strings.HasPrefix(out, "Usage: hookbox "+name) || errOut != "" {
					t.Fatalf("%v: exit %d, %q %q", args, code, out, errOut)
				}
				// listen talks to a remote hookbox, not to the config's.
				if name != "version" && name != "listen" && !strings.Contains(out, "-config") {
					t.Errorf("%v: no -config flag in %q", args, out)
				}
			}
		})
	}
	// replay's help shows each way to choose what to send again.
	if out, _, _ := hookbox(t, nil, "help", "replay"); !strings.Contains(out, "-since") || !strings.Contains(out, "-event SOURCE/ID") ||
		!strings.Contains(out, "-force") || !strings.Contains(out, "-dry-run") || !strings.Contains(out, "-json") {
		t.Errorf("hookbox help replay lacks the query, -event, -force, -dry-run or -json: %s", out)
	}
	out, _, code := hookbox(t, nil, "-h")
	if code != 0 || !strings.Contains(out, "hookbox sign") || !strings.Contains(out, "hookbox backup") || !strings.Contains(out, "hookbox retry") {
		t.Fatalf("hookbox -h: exit %d, %q", code, out)
	}
	if _, errOut, code := hookbox(t, nil, "sign", "-nope"); code != 2 || !strings.Contains(errOut, "-nope") {
		t.Fatalf("bad flag: exit %d, %q", code, errOut)
	}
	if _, _, code := hookbox(t, nil, "frobnicate"); code != 2 {
		t.Fatalf("unknown command: exit %d", code)
	}
}
