package web

import (
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzBasicAuth feeds the Authorization header parser anything a caller
// can send: it never panics, and what it accepts is exactly the user and
// password the header encodes.
func FuzzBasicAuth(f *testing.F) {
	for _, s := range []string{"", "Basic ", "Basic b3BzOnB3", "basic b3BzOnB3", "BASIC b3BzOnB3", "Basic b3Bz",
		"Basic !!!", "Bearer tok", "Basic " + base64.StdEncoding.EncodeToString([]byte("u:p:w")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte("\xff:\x00")), "Basic  b3BzOnB3", "Basi"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		user, pass, ok := basicAuth(h)
		if !ok {
			return // the caller ignores user and password then
		}
		if strings.Contains(user, ":") {
			t.Fatalf("basicAuth(%q): user %q holds a colon", h, user)
		}
		raw, err := base64.StdEncoding.DecodeString(h[len("Basic "):])
		if err != nil || string(raw) != user+":"+pass {
			t.Fatalf("basicAuth(%q) = %q, %q; the header says %q (%v)", h, user, pass, raw, err)
		}
	})
}
