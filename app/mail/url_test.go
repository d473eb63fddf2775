package mail_test

import (
	"strings"
	"testing"

	"hookbox/app/mail"
)

func TestParseURL(t *testing.T) {
	for _, tt := range []struct {
		url, want, security string
		user, password      string
	}{
		{"smtp://u:p%40ss@smtp.example.com", "smtp://u@smtp.example.com:587", "STARTTLS", "u", "p@ss"},
		{"smtp://u:pass@smtp.example.com:2525", "smtp://u@smtp.example.com:2525", "STARTTLS", "u", "pass"},
		{"smtps://u:pass@smtp.example.com", "smtps://u@smtp.example.com:465", "TLS", "u", "pass"},
		{"SMTPS://smtp.example.com:465/", "smtps://smtp.example.com:465", "TLS", "", ""},
		{"smtp+insecure://127.0.0.1", "smtp+insecure://127.0.0.1:25", "no TLS", "", ""},
		{"smtp+insecure://relay.lan:25", "smtp+insecure://relay.lan:25", "no TLS", "", ""},
		{"smtp+insecure://u:pass@localhost:25", "smtp+insecure://u@localhost:25", "no TLS", "u", "pass"},
		{"smtp://[::1]:587", "smtp://[::1]:587", "STARTTLS", "", ""},
	} {
		s, err := mail.ParseURL(tt.url)
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		if s.String() != tt.want || s.Security() != tt.security || s.User != tt.user || s.Password != tt.password {
			t.Errorf("%s: %s %s %q %q, want %s %s %q %q", tt.url, s, s.Security(), s.User, s.Password, tt.want, tt.security, tt.user, tt.password)
		}
	}
}

// Every error says what is wrong without any part of the URL but its
// scheme: the password is in it.
func TestParseURL_Errors(t *testing.T) {
	const pw = "pw-Secret-1q2w"
	for _, tt := range []struct{ url, want string }{
		{"smtp://u:" + pw + "@mx-hidden.example:port", "is not a URL"},
		{"smtp://u:" + pw + "@mx-hidden. example", "is not a URL"},
		{"u:" + pw + "@mx-hidden.example:587", "scheme"},
		{"//u:" + pw + "@mx-hidden.example:587", "has no scheme"},
		{"http://u:" + pw + "@mx-hidden.example", `has the scheme "http", not`},
		{"smtp://u:" + pw + "@", "names no host"},
		{"smtp://u:" + pw + "@mx-hidden.example/path?x=" + pw, "path, query or fragment"},
		{"smtp://:" + pw + "@mx-hidden.example", "no user name"},
		{"smtp+insecure://u:" + pw + "@relay.lan", "only for a server on this machine"},
	} {
		_, err := mail.ParseURL(tt.url)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.url, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "mx-hidden") {
			t.Errorf("%s: the error shows the URL: %v", tt.url, err)
		}
	}
}
