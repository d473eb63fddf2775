package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hookbox/app/config"
)

// ReadMentions lists what a config names from the TOML alone: no variable
// needs to be set, a value of the wrong type is passed over, and a secret
// pasted where a variable's name belongs is named by its key, not kept.
func TestReadMentions(t *testing.T) {
	const pasted = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(`[server]
public_url = "https://hooks.example.com"

[[source]]
name = "shop"
provider = "shopify"
secret_env = "SHOPIFY_SECRET"

[[source]]
provider = "stripe"
secrets_env = ["STRIPE_OLD", "SHOPIFY_SECRET", "`+pasted+`"]

[[destination]]
name = "job"
command = ["/bin/true"]
env = ["PATH", "JOB_TOKEN", "MODE=test", "bad-name"]
secret_env = "JOB_SIGNING"

[[destination]]
name = "d"
url = "https://d.example.com"
secret_env = 3

[status]
password_env = "HOOKBOX_STATUS_PASSWORD"

[alerts]
url_env = "ALERT_URL"
smtp_url_env = "SMTP_URL"

[storage]
backend = "postgres"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := config.ReadMentions(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []config.EnvUse{
		{Name: "SHOPIFY_SECRET", Where: []string{"[[source]] shop: secret_env", "[[source]] #2: secrets_env[1]"}},
		{Name: "STRIPE_OLD", Where: []string{"[[source]] #2: secrets_env[0]"}},
		{Name: "JOB_SIGNING", Where: []string{"[[destination]] job: secret_env"}},
		{Name: "PATH", Where: []string{"[[destination]] job: env"}},
		{Name: "JOB_TOKEN", Where: []string{"[[destination]] job: env"}},
		{Name: "HOOKBOX_STATUS_PASSWORD", Where: []string{"[status] password_env"}},
		{Name: "ALERT_URL", Where: []string{"[alerts] url_env"}},
		{Name: "SMTP_URL", Where: []string{"[alerts] smtp_url_env"}},
		{Name: "HOOKBOX_DATABASE_URL", Where: []string{`[storage] backend = "postgres" (url_env's default)`}},
	}
	if !reflect.DeepEqual(m.Env, want) {
		t.Errorf("Env:\n%v\nwant\n%v", m.Env, want)
	}
	if want := []string{"[[source]] #2: secrets_env[2]"}; !reflect.DeepEqual(m.Skipped, want) {
		t.Errorf("Skipped: %v, want %v", m.Skipped, want)
	}
	if want := []config.SourceName{{"shop", "shopify"}, {"", "stripe"}}; !reflect.DeepEqual(m.Sources, want) {
		t.Errorf("Sources: %v, want %v", m.Sources, want)
	}

	t.Run("ErrTOML", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.toml")
		if err := os.WriteFile(bad, []byte("[server\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.ReadMentions(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("err = %v, want one naming the file", err)
		}
	})
}

// With HOOKBOX_ENV_FILE set (install.sh's unit sets it), an error about a
// missing or empty variable says where to set it; without, it does not.
func TestParseConfig_EnvFileHint(t *testing.T) {
	const src = "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret_env = \"SHOPIFY_SECRET\"\n"
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "environment variable SHOPIFY_SECRET is not set"},
		{map[string]string{config.EnvFile: "/etc/hookbox/hookbox.env"}, "environment variable SHOPIFY_SECRET is not set: set it in /etc/hookbox/hookbox.env"},
		{map[string]string{config.EnvFile: "/etc/hookbox/hookbox.env", "SHOPIFY_SECRET": ""}, "environment variable SHOPIFY_SECRET is empty: set it in /etc/hookbox/hookbox.env"},
	} {
		_, err := config.Parse("c.toml", src, env(tt.env))
		if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("env %v: err = %v, want …%q", tt.env, err, tt.want)
		}
	}
}
