package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// check -env lists the variables of a config none of which is set (what
// plain check refuses), one NAME<TAB>where line each; a secret pasted in
// place of a name is named by its key on stderr and shown nowhere.
// check -sources lists NAME<TAB>PROVIDER.
func TestCheck_Env(t *testing.T) {
	const pasted = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	config := writeTestConfig(t, "", `[[source]]
name = "shop"
provider = "shopify"
secret_env = "CHECK_ENV_SHOPIFY"
[[source]]
name = "pay"
provider = "stripe"
secrets_env = ["CHECK_ENV_OLD", "`+pasted+`"]
[status]
password_env = "CHECK_ENV_PASSWORD"
`)
	if code, out := runCmd("check", "-config", config); code != 1 || !strings.Contains(out, "CHECK_ENV_SHOPIFY is not set") {
		t.Fatalf("plain check: %d\n%s", code, out)
	}
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"check", "-env", "-config", config}, &out, &errOut); code != 0 {
		t.Fatalf("check -env: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	want := "CHECK_ENV_SHOPIFY\t[[source]] shop: secret_env\n" +
		"CHECK_ENV_OLD\t[[source]] pay: secrets_env[0]\n" +
		"CHECK_ENV_PASSWORD\t[status] password_env\n"
	if out.String() != want {
		t.Errorf("check -env:\n%s\nwant:\n%s", out.String(), want)
	}
	if !strings.Contains(errOut.String(), "[[source]] pay: secrets_env[1]: not an environment variable's name") {
		t.Errorf("check -env does not name the key holding no variable's name:\n%s", errOut.String())
	}
	if strings.Contains(out.String()+errOut.String(), pasted) {
		t.Errorf("check -env shows the pasted secret:\n%s%s", out.String(), errOut.String())
	}
	if code, got := runCmd("check", "-sources", "-config", config); code != 0 || got != "gh\tgithub\nshop\tshopify\npay\tstripe\n" {
		t.Errorf("check -sources: %d\n%q", code, got)
	}
}
