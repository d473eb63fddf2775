package postgres

import (
	"net/url"
	"strings"
)

// MaskURL returns a database URL with its password replaced by "xxxxx",
// fit for logs and errors. A string that is not a URL is shown as
// "(database URL)" whole, since it may hold a password anywhere.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" && u.User == nil {
		return "(database URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	masked := false
	for k := range q {
		if secretParam(k) {
			q.Set(k, "xxxxx")
			masked = true
		}
	}
	if masked {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// secretParam reports whether the URL parameter k holds a secret: the
// password, or the password of the TLS client key.
func secretParam(k string) bool {
	k = strings.ToLower(k)
	return k == "password" || k == "sslpassword"
}

// maskErr removes the URL and its secrets from an error text of pgx's
// URL parser.
func maskErr(text, rawURL string) string {
	text = strings.ReplaceAll(text, rawURL, MaskURL(rawURL))
	if u, err := url.Parse(rawURL); err == nil {
		secrets := []string{}
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
		for k, vs := range u.Query() {
			if secretParam(k) {
				secrets = append(secrets, vs...)
			}
		}
		for _, p := range secrets {
			if p != "" {
				text = strings.ReplaceAll(text, p, "xxxxx")
			}
		}
	}
	return text
}
