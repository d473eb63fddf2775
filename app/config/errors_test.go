package config_test

import (
	"fmt"
	"strings"
	"testing"

	"hookbox/app/config"
)

// Each mistake a new user made in issue 32 and the message that says it:
// the file and line, the table's index and name, the key, a sentence, a
// "did you mean", never the value of a secret.
func TestParseConfig_Mistakes(t *testing.T) {
	const shop = "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret_env = \"SHOPIFY_SECRET\"\n"
	const pos = "[[destination]]\nname = \"pos\"\nurl = \"https://pos.example.com/hooks\"\n"
	set := map[string]string{"SHOPIFY_SECRET": "s"}
	for _, tt := range []struct {
		name, toml string
		env        map[string]string
		want       string // the whole message
		hidden     string // never in it
	}{
		{"UnknownKeyInSecondSource", shop + "[[source]]\nname = \"shop2\"\nprovder = \"shopify\"\nsecret = \"x\"\n", set,
			"c.toml:7: source[1] (shop2).provder: unknown key; did you mean provider?", ""},
		{"UnknownTable", "[sever]\nlisten = \"127.0.0.1:1\"\n", nil,
			"c.toml:1: sever: unknown key; did you mean server?", ""},
		{"UnknownKeyFarFromAny", "[server]\nlisten = \"127.0.0.1:1\"\nwhatever = 1\n", nil,
			"c.toml:3: server.whatever: unknown key", ""},
		{"ProviderTypo", "[[source]]\nname = \"shop\"\nprovider = \"shopfy\"\nsecret = \"x\"\n", nil,
			`c.toml:3: source[0] (shop).provider: unknown provider "shopfy"; did you mean shopify? (known: bigcommerce, github, hmac, paddle, shopify, square, standard, stripe, token, woocommerce)`, ""},
		{"DestinationTypo", shop + pos + "[[route]]\nsource = \"shop\"\nto = [\"poss\"]\n", set,
			`c.toml:10: route[0].to[0]: no [[destination]] named "poss"; did you mean pos?`, ""},
		{"TopicsString", shop + pos + "[[route]]\nsource = \"shop\"\ntopics = \"orders/*\"\nto = [\"pos\"]\n", set,
			`c.toml:10: route[0].topics: must be a list: topics = ["orders/*"]`, ""},
		{"TopicsNumberInList", shop + pos + "[[route]]\nsource = \"shop\"\ntopics = [\"orders/*\", 5]\nto = [\"pos\"]\n", set,
			`c.toml:10: route[0].topics[1]: must be a string, in quotes: "5"`, ""},
		{"NumberForString", "[server]\nlisten = 8080\n", nil,
			`c.toml:2: server.listen: must be a string, in quotes: listen = "8080"`, ""},
		{"StringForNumber", shop + pos + "concurrency = \"4\"\n", set,
			"c.toml:8: destination[0] (pos).concurrency: must be a whole number, without quotes: concurrency = 4", ""},
		{"StringForBool", "[status]\nmetrics_public = \"true\"\n", nil,
			"c.toml:2: status.metrics_public: must be true or false, without quotes: metrics_public = true", ""},
		{"TableForList", "[source]\nname = \"shop\"\n", nil,
			"c.toml:1: source: is a list of tables: write [[source]] (two brackets), not [source]", ""},
		{"NumberForSecret", "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = 918273645\n", nil,
			"c.toml:4: source[0] (shop).secret: must be a string, in quotes", "918273645"},
		{"SecretsNotAList", "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecrets = \"shpss_0a1b2c3d4e5f\"\n", nil,
			`c.toml:4: source[0] (shop).secrets: must be a list, in brackets: secrets = ["…"]`, "shpss_0a1b2c3d4e5f"},
		{"SecretUnquoted", "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = shpss_0a1b2c3d4e5f\n", nil,
			`c.toml:4: source.secret: expected value but found … instead (a string goes in quotes: key = "…")`, "shpss_0a1b2c3d4e5f"},
		{"SecretInSecretEnv", "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret_env = \"shpss_0a1b2c3d4e5f\"\n", nil,
			"c.toml:4: source[0] (shop).secret_env: holds what looks like a secret itself: put the secret in an environment variable and name the variable here (e.g. SHOPIFY_SECRET)", "0a1b2c3d4e5f"},
		{"HexSecretInPasswordEnv", "[status]\npassword_env = \"9f86d081884c7d659a2feaa0c55ad015\"\n", nil,
			"c.toml:2: status.password_env: holds what looks like a secret itself: put the secret in an environment variable and name the variable here (e.g. SHOPIFY_SECRET)", "9f86d081"},
		{"SecretInSecretsEnv", "[[source]]\nname = \"st\"\nprovider = \"stripe\"\nsecrets_env = [\"STRIPE_OLD\", \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n", map[string]string{"STRIPE_OLD": "s"},
			"c.toml:4: source[0] (st).secrets_env[1]: holds what looks like a secret itself: put the secret in an environment variable and name the variable here (e.g. SHOPIFY_SECRET)", "MfKQ9r8G"},
		{"InvalidVariableName", "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret_env = \"SHOPIFY-SECRET\"\n", nil,
			`c.toml:4: source[0] (shop).secret_env: "SHOPIFY-SECRET" is not a valid environment variable name: use letters, digits and '_', not starting with a digit (e.g. SHOPIFY_SECRET)`, ""},
		{"VariableNotSet", shop, nil,
			"c.toml:4: source[0] (shop).secret_env: environment variable SHOPIFY_SECRET is not set", ""},
		{"VariableNotSetUnderTheService", shop, map[string]string{config.EnvFile: "/etc/hookbox/hookbox.env"},
			"c.toml:4: source[0] (shop).secret_env: environment variable SHOPIFY_SECRET is not set: set it in /etc/hookbox/hookbox.env", ""},
		{"ProviderMisspeltKey", "[[source]]\nname = \"shop\"\nprovidr = \"shopify\"\nsecret = \"x\"\n", nil,
			// Once: the provider is missing because of the typo.
			"c.toml:3: source[0] (shop).providr: unknown key; did you mean provider?", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("c.toml", tt.toml, env(tt.env))
			if err == nil {
				t.Fatal("accepted")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("err =\n%s\nwant\n%s", got, tt.want)
			}
			if tt.hidden != "" && strings.Contains(err.Error(), tt.hidden) {
				t.Errorf("the error shows the secret %q: %v", tt.hidden, err)
			}
		})
	}
}

// One config with the mistakes of issue 32 gets them all in one run, in
// the order of the file, each on its own line.
func TestParseConfig_AllMistakesAtOnce(t *testing.T) {
	const data = `[server]
listen = 8080
public_url = "https://hooks.example.com"

[[source]]
name = "demo"
provider = "github"
secret_env = "SHOPIFY-SECRET"

[[source]]
name = "shop"
provder = "shopify"
secret_env = "shpss_4f9a0c2b7d1e8f3a6b5c"

[[source]]
name = "stripe"
provider = "strpe"
secret_env = "STRIPE_SECRET"

[[destination]]
name = "pos"
url = "https://pos.example.com/hooks"
concurrency = "4"

[[route]]
source = "shop"
topics = "orders/*"
to = ["poss"]
`
	_, err := config.Parse("c.toml", data, env(nil))
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		`c.toml:2: server.listen: must be a string, in quotes: listen = "8080"`,
		`c.toml:8: source[0] (demo).secret_env: "SHOPIFY-SECRET" is not a valid environment variable name`,
		`c.toml:12: source[1] (shop).provder: unknown key; did you mean provider?`,
		`c.toml:13: source[1] (shop).secret_env: holds what looks like a secret itself`,
		`c.toml:17: source[2] (stripe).provider: unknown provider "strpe"; did you mean stripe?`,
		`c.toml:18: source[2] (stripe).secret_env: environment variable STRIPE_SECRET is not set`,
		`c.toml:23: destination[0] (pos).concurrency: must be a whole number, without quotes: concurrency = 4`,
		`c.toml:27: route[0].topics: must be a list: topics = ["orders/*"]`,
		`c.toml:28: route[0].to[0]: no [[destination]] named "poss"; did you mean pos?`,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d mistakes reported, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("mistake %d = %q\nwant it to start with %q", i, lines[i], w)
		}
	}
	if strings.Contains(err.Error(), "4f9a0c2b") {
		t.Errorf("the error shows the secret: %v", err)
	}
}

// More than twenty mistakes: the first twenty, then how many more.
func TestParseConfig_TwentyMistakesAndMore(t *testing.T) {
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, "[[source]]\nname = \"s%d\"\nprovider = \"github\"\nsecret_env = \"UNSET_%d\"\n", i, i)
	}
	_, err := config.Parse("c.toml", b.String(), env(nil))
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 21 || lines[20] != "c.toml: and 5 more" || !strings.HasPrefix(lines[19], "c.toml:80: source[19] (s19).secret_env: environment variable UNSET_19 is not set") {
		t.Fatalf("err =\n%v", err)
	}
}

// The line of a mistake is found past what spans lines (a list written
// over several, a multi-line string holding "[[source]]" and "x = 1"),
// in a sub-table of an array of tables, and after comments.
func TestParseConfig_MistakeLines(t *testing.T) {
	const data = `# a comment [[source]]
[server]
trusted_proxies = [
  "127.0.0.1", # the proxy
  "::1",
]

[[source]]
name = "a"
provider = "github"
secret = "x"

[[destination]]
name = "pos"
url = "https://pos.example.com"
[destination.headers]
X-A = "a"

[[destination]]
name = "erp"
url = "https://erp.example.com"
[destination.headers]
X-B = 5

[[route]]
source = "a"
to = ["pos", "erp"]
filter = '''
topic != "[[source]]"
  && topic != "x = 1"
'''
topis = ["push"]
`
	_, err := config.Parse("c.toml", data, env(nil))
	want := "c.toml:23: destination[1] (erp).headers.X-B: must be a string, in quotes: X-B = \"5\"\n" +
		"c.toml:32: route[0].topis: unknown key; did you mean topics?"
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
}
