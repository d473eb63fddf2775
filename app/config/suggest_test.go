package config

import "testing"

func TestSuggest(t *testing.T) {
	for _, tt := range []struct {
		s     string
		names []string
		want  string
	}{
		{"provder", []string{"name", "provider", "secret"}, "provider"},
		{"concurency", []string{"concurrency", "timeout"}, "concurrency"},
		{"listne", []string{"listen", "public_url"}, "listen"},
		{"ap", []string{"app", "sink"}, "app"},
		{"strpe", []string{"shopify", "stripe", "square"}, "stripe"},
		{"ab", []string{"cb"}, ""},
		{"x", []string{"shop"}, ""},
		{"warehouse", []string{"pos", "crm"}, ""},
	} {
		if got := suggest(tt.s, tt.names); got != tt.want {
			t.Errorf("suggest(%q, %q) = %q, want %q", tt.s, tt.names, got, tt.want)
		}
	}
}
