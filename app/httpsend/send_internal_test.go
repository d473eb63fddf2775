package httpsend

import "testing"

// Bytes that only claim to be gzip, and other encodings, are kept as
// received (app's TestSend_GzipAnswerRecordedAsText records a real one).
func TestInflateSnippet(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"not gzip at all", "not gzip at all"},
		{"", ""},
	} {
		if got := string(inflateSnippet("gzip", []byte(c.in))); got != c.want {
			t.Errorf("InflateSnippet(gzip, %q) = %q; want it as received", c.in, got)
		}
	}
	if got := string(inflateSnippet("br", []byte("x"))); got != "x" {
		t.Errorf("InflateSnippet(br) = %q; want it as received", got)
	}
}
