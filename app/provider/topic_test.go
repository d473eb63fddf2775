package provider_test

import (
	"testing"
	"time"

	"hookbox/app/provider"
)

func TestTestTopic(t *testing.T) {
	// Every provider that reads the topic from a header has a test topic,
	// and signing with it gives a request whose verdict has that topic.
	for _, name := range provider.Names() {
		topic := provider.TestTopic(name)
		switch name {
		case "stripe", "paddle", "square", "bigcommerce", "standard":
			if topic != "" {
				t.Errorf("%s reads the topic from the body, yet has test topic %q", name, topic)
			}
			continue
		}
		if topic == "" {
			t.Errorf("%s has no test topic", name)
			continue
		}
		s := provider.Settings{Secrets: [][]byte{[]byte("secret")}, SignatureHeader: "X-Signature"}
		now := time.Now()
		h, err := provider.Sign(name, s, []byte(`{}`), "", "id-1", topic, now)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := provider.New(name, s)
		got, err := v(provider.Request{Body: []byte(`{}`), Header: h}, now)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name != "hmac" && got.Topic != topic { // hmac's topic comes from the source's template
			t.Errorf("%s: verdict topic %q, want %q", name, got.Topic, topic)
		}
	}
}
