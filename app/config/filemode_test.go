package config_test

import (
	"slices"
	"testing"

	"hookbox/app/config"
)

func TestInlineSecretKeys(t *testing.T) {
	const text = `
[status]
password = "p"
[alerts]
url = "https://hooks.slack.com/services/T/B/x"
[[source]]
name = "a"
provider = "github"
secrets = ["s1", "s2"]
[[source]]
name = "b"
provider = "github"
secret_env = "B_SECRET"
[[destination]]
name = "pos"
url = "https://pos.example/hook?api_key=k"
secret = "whsec_eA=="
headers = { Authorization = "Bearer t", X-Api-Key = "k", X-Shop = "s" }
[[destination]]
name = "erp"
url = "https://erp.example/hook"
secret_env = "ERP_SECRET"
`
	want := []string{"status.password", "alerts.url", "source[0] (a).secrets", "destination[0] (pos).secret",
		"destination[0] (pos).url", "destination[0] (pos).headers.Authorization", "destination[0] (pos).headers.X-Api-Key"}
	if got := config.InlineSecretKeys(text); !slices.Equal(got, want) {
		t.Errorf("InlineSecretKeys = %q\nwant %q", got, want)
	}
	if got := config.InlineSecretKeys("[status]\npassword_env = \"P\"\n"); len(got) != 0 {
		t.Errorf("only *_env: %q", got)
	}
	// The database URL is a secret when it carries a password.
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{"postgres://hookbox:pw@db/hookbox", []string{"storage.url"}},
		{"postgres://db/hookbox?password=pw", []string{"storage.url"}},
		{"postgres://db/hookbox?sslpassword=pw", []string{"storage.url"}},
		{"postgres://hookbox@db/hookbox?sslmode=verify-full", nil}, // .pgpass, or a certificate
	} {
		text := "[storage]\nbackend = \"postgres\"\nurl = \"" + tc.url + "\"\n"
		if got := config.InlineSecretKeys(text); !slices.Equal(got, tc.want) {
			t.Errorf("storage.url %s: %q, want %q", tc.url, got, tc.want)
		}
	}
}
