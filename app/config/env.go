// The *_env keys: each names an environment variable that holds a secret
// (secret_env, password_env, url_env, smtp_url_env). A value that is no
// variable's name is refused as such, and one that looks like the secret
// itself is called that and never shown.

package config

import (
	"fmt"
	"math"
	"regexp"
	"strings"
)

// EnvFile is the environment variable that names the file the service's
// variables are set in (install.sh's unit sets it to
// /etc/hookbox/hookbox.env): a variable that is not set is to be set
// there, not in the config.
const EnvFile = "HOOKBOX_ENV_FILE"

// upperName is what a variable's name usually looks like: such a value is
// never taken for a secret.
var upperName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// secretPrefixes start the secrets of the platforms hookbox takes
// webhooks from (and a few API keys pasted by mistake).
var secretPrefixes = []string{"whsec_", "shpss_", "shpat_", "shpca_", "shppa_", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "ghp_", "github_pat_", "xox"}

// looksLikeSecret reports whether s, written where a variable's name goes,
// is more likely a secret: a platform's secret prefix, or a long string
// of mixed letters and digits.
func looksLikeSecret(s string) bool {
	if upperName.MatchString(s) {
		return false
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	if len(s) < 16 {
		return false
	}
	digits := strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' }) >= 0
	return digits && entropy(s) >= 3
}

// entropy is the Shannon entropy of s, in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// envNameOK reports whether name, the value of key, is a variable's name;
// when not, it records why, without showing a value that looks like a
// secret.
func (v *validator) envNameOK(key, name string) bool {
	switch {
	case looksLikeSecret(name):
		v.fail(key, "holds what looks like a secret itself: put the secret in an environment variable and name the variable here (e.g. SHOPIFY_SECRET)")
		return false
	case !envName.MatchString(name):
		v.fail(key, fmt.Sprintf("%q is not a valid environment variable name: use letters, digits and '_', not starting with a digit (e.g. %s)", name, suggestEnvName(name)))
		return false
	}
	return true
}

// suggestEnvName is name made a valid variable's name, for the example
// of an error.
func suggestEnvName(name string) string {
	out := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_':
			return r
		}
		return '_'
	}, name)
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "_" + out
	}
	if !envName.MatchString(out) {
		return "SHOPIFY_SECRET"
	}
	return out
}

// notSet is the reason for a variable that is not set: where to set it,
// when hookbox runs as a service whose variables are in a file.
func (v *validator) notSet(name string) string {
	return fmt.Sprintf("environment variable %s is not set", name) + v.setItIn()
}

// env1 reads one environment variable named by key, which must be set.
func (v *validator) env1(key, name string) string {
	if !v.envNameOK(key, name) {
		return ""
	}
	val, ok := v.env(name)
	switch {
	case !ok:
		v.fail(key, v.notSet(name))
	case val == "":
		v.fail(key, fmt.Sprintf("environment variable %s is empty", name)+v.setItIn())
	}
	return val
}
