package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/config"
)

// script writes an executable file named name into dir and returns its path.
func script(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

func TestParseConfig_Command(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, "on-order", 0o755)
	cfg, err := config.Parse("c.toml", `
[[destination]]
name = "orders-script"
command = ["`+prog+`", "--shop", "a"]
env = ["SHOP_TOKEN", "MODE=live", "EMPTY="]
headers = { X-Shop = "a" }
timeout = "5s"
concurrency = 2
[[destination]]
name = "script-with-sigs"
command = ["`+prog+`"]
forward_signatures = true
`, env(map[string]string{"SHOP_TOKEN": "tok-123"}))
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.DestinationByName("orders-script")
	if got, want := d.Command, []string{prog, "--shop", "a"}; !slices.Equal(got, want) {
		t.Errorf("command = %q, want %q", got, want)
	}
	if got, want := d.Env, []string{"SHOP_TOKEN=tok-123", "MODE=live", "EMPTY="}; !slices.Equal(got, want) {
		t.Errorf("env = %q, want %q", got, want)
	}
	if d.URL != "" || d.Concurrency != 2 || d.Timeout.String() != "5s" || d.Headers["X-Shop"] != "a" {
		t.Errorf("destination = %+v", d)
	}
	if d.ForwardSignatures {
		t.Error("a command gets the provider's signatures by default; want them only with forward_signatures = true")
	}
	if d := cfg.DestinationByName("script-with-sigs"); !d.ForwardSignatures {
		t.Error("forward_signatures = true is not kept for a command")
	}
}

func TestParseConfig_CommandErrors(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, "ok", 0o755)
	noExec := script(t, dir, "noexec", 0o644)
	missing := filepath.Join(dir, "missing")
	const src = "[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret = \"x\"\n"
	dest := func(lines string) string {
		return src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\n[[destination]]\nname = \"orders-script\"\n" + lines
	}
	const key = "destination[1] (orders-script)"
	for _, tt := range []struct {
		name, toml, key, reason string
	}{
		{"Both", dest("url = \"https://y\"\ncommand = [\"" + prog + "\"]\n"), key + ".command", "either url or command, not both"},
		{"Neither", dest(""), key + ".url", "needs url (an absolute http(s) URL) or command"},
		{"Empty", dest("command = []\n"), key + ".command", "is empty"},
		{"EmptyProgram", dest("command = [\"\"]\n"), key + ".command[0]", "is empty"},
		{"Relative", dest("command = [\"on-order\", \"a\"]\n"), key + ".command[0]", "on-order is not an absolute path"},
		{"Missing", dest("command = [\"" + missing + "\"]\n"), key + ".command[0]", missing + " does not exist"},
		{"NotExecutable", dest("command = [\"" + noExec + "\"]\n"), key + ".command[0]", noExec + " is not executable"},
		{"Directory", dest("command = [\"" + dir + "\"]\n"), key + ".command[0]", dir + " is not a regular file"},
		{"NULInArgument", dest("command = [\"" + prog + "\", \"a\\u0000b\"]\n"), key + ".command[1]", "NUL"},
		{"EnvWithoutCommand", dest("env = [\"A=b\"]\n"), key + ".env", "env is for a command"},
		{"EnvUnset", dest("command = [\"" + prog + "\"]\nenv = [\"NOPE\"]\n"), key + ".env[0]", "environment variable NOPE is not set"},
		{"EnvBadName", dest("command = [\"" + prog + "\"]\nenv = [\"A-B=c\"]\n"), key + ".env[0]", "write NAME"},
		{"EnvReserved", dest("command = [\"" + prog + "\"]\nenv = [\"HOOKBOX_TOPIC=x\"]\n"), key + ".env[0]", "set by hookbox"},
		{"EnvTwice", dest("command = [\"" + prog + "\"]\nenv = [\"A=1\", \"A=2\"]\n"), key + ".env[1]", "A is named twice"},
		{"URLChecksStay", src + "[[destination]]\nname = \"pos\"\nurl = \"ftp://x\"\n", "destination[0] (pos).url", "absolute http(s) URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("hookbox.toml", tt.toml, env(nil))
			var ce *app.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			if ce.File != "hookbox.toml" || ce.Key != tt.key || !strings.Contains(ce.Reason, tt.reason) {
				t.Fatalf("err = %q (key %q); want key %q and reason containing %q", err, ce.Key, tt.key, tt.reason)
			}
		})
	}
}

// An error about a command names the program, never its arguments or the
// values env gives: either may hold a credential.
func TestParseConfig_CommandErrorsHideSecrets(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, "ok", 0o755)
	for _, toml := range []string{
		"[[destination]]\nname = \"d\"\ncommand = [\"" + filepath.Join(dir, "nope") + "\", \"--token=SUPER-SECRET\"]\n",
		"[[destination]]\nname = \"d\"\ncommand = [\"" + prog + "\"]\nenv = [\"TOKEN=SUPER-SECRET\", \"TOKEN=SUPER-SECRET\"]\n",
		"[[destination]]\nname = \"d\"\ncommand = [\"" + prog + "\"]\nenv = [\"TOKEN=SUPER-SECRET\", \"bad name=SUPER-SECRET\"]\n",
	} {
		_, err := config.Parse("c.toml", toml, env(nil))
		if err == nil {
			t.Fatalf("no error for %q", toml)
		}
		if strings.Contains(err.Error(), "SUPER-SECRET") {
			t.Fatalf("error leaks a secret: %v", err)
		}
	}
}

// A value written into the file under a name that says it is a secret
// makes a readable config file a warning, as a secret key does.
func TestInlineSecretKeys_CommandEnv(t *testing.T) {
	keys := config.InlineSecretKeys("[[destination]]\nname = \"d\"\ncommand = [\"/bin/true\"]\nenv = [\"SHOP\", \"MODE=live\", \"API_TOKEN=abc\"]\n")
	if got, want := keys, []string{"destination[0] (d).env[2]"}; !slices.Equal(got, want) {
		t.Fatalf("keys = %q, want %q", got, want)
	}
}

// README's example of a command destination loads, with its program in
// place (an executable file at a path of the test's).
func TestParseConfig_CommandReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## Run a script for each event\n")
	_, block, ok2 := strings.Cut(sec, "```toml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no toml example under ## Run a script for each event")
	}
	prog := script(t, t.TempDir(), "on-order", 0o755)
	block = strings.ReplaceAll(block, "/usr/local/bin/on-order", prog)
	src := "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"x\"\n"
	cfg, err := config.Parse("readme.toml", src+block, env(map[string]string{"SHOP_API_TOKEN": "t"}))
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.DestinationByName("orders-script")
	if d == nil || len(d.Command) != 3 || d.Command[0] != prog || !slices.Equal(d.Env, []string{"SHOP_API_TOKEN=t", "MODE=live"}) || d.Concurrency != 2 {
		t.Fatalf("destination %+v", d)
	}
}
