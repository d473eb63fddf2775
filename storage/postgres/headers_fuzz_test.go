package postgres

import (
	"slices"
	"testing"

	"hookbox/app"
)

// decodeHeaders returns an error or headers for any bytes, never panics,
// and what it returns survives encoding and decoding again.
func FuzzDecodeHeaders(f *testing.F) {
	f.Add(encodeHeaders(nil))
	f.Add(encodeHeaders([]app.HeaderField{{Name: "X-Shopify-Topic", Value: "orders/create"}, {Name: "X-Bin", Value: "\x00\xff"}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{2, 1, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeaders(b)
		if err != nil {
			return
		}
		again, err := decodeHeaders(encodeHeaders(h))
		if err != nil || !slices.Equal(again, h) {
			t.Fatalf("%x decodes to %q, which encodes and decodes to %q, %v", b, h, again, err)
		}
	})
}

func TestHeaders_RoundTrip(t *testing.T) {
	for _, h := range [][]app.HeaderField{nil, {{Name: "", Value: ""}}, {{Name: "A", Value: "1"}, {Name: "B", Value: string(make([]byte, 300))}}} {
		got, err := decodeHeaders(encodeHeaders(h))
		if err != nil || !slices.Equal(got, h) {
			t.Fatalf("%q → %q, %v", h, got, err)
		}
	}
	if _, err := decodeHeaders(nil); err == nil {
		t.Fatal("no bytes decoded as headers")
	}
}
