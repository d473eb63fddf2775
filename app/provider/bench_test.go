package provider_test

import (
	"bytes"
	"fmt"
	"testing"

	"hookbox/app/provider"
)

// benchBody is a 2 KiB JSON event carrying every id and topic field.
func benchBody() []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":"evt_1","type":"order.created","event_id":"evt_1","event_type":"order.created","hash":"evt_1","scope":"order.created","data":"`)
	for b.Len() < 2048-2 {
		b.WriteByte('x')
	}
	b.WriteString(`"}`)
	return b.Bytes()
}

func BenchmarkVerify(b *testing.B) {
	body := benchBody()
	for _, f := range fixtures() {
		f := f.withDefaults()
		b.Run(f.label, func(b *testing.B) {
			s := f.settings(f.new)
			verify := mustVerifier(b, f.name, s)
			h := mustSign(b, f, f.new, body, testNow)
			r := provider.Request{Body: body, Header: h, URL: testURL}
			if _, err := verify(r, testNow); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := verify(r, testNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// A rejected request must stay cheap too: it is what an attacker sends.
	b.Run("stripe-rejected", func(b *testing.B) {
		s := provider.Settings{Secrets: [][]byte{[]byte("a"), []byte("b")}}
		verify := mustVerifier(b, "stripe", s)
		h := mustSign(b, fixture{name: "stripe"}, []byte("c"), body, testNow)
		r := provider.Request{Body: body, Header: h}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := verify(r, testNow); err == nil {
				b.Fatal(fmt.Errorf("verified"))
			}
		}
	})
}
