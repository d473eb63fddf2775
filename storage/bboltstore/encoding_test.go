package bboltstore

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"hookbox/app"
)

func TestEncodeEvent_RoundTrip(t *testing.T) {
	for _, e := range []*app.Event{
		{Source: "s", ID: "i", ReceivedAt: time.Unix(0, 1)},
		{Source: "shop", ID: "evt_1", Topic: "orders/create", ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			Header: []app.HeaderField{{Name: "A", Value: ""}, {Name: "X-Y", Value: "z\x00\xff"}},
			Body:   []byte("{\"a\":\"\\/\"}\n\x00\xff")},
		{Source: "x", ID: string(bytes.Repeat([]byte("i"), 300)), ReceivedAt: time.Unix(1<<33, 0), Body: bytes.Repeat([]byte{7}, 1<<16)},
		{Source: "shop", ID: "u", ReceivedAt: time.Unix(5, 0), Body: []byte("{}"), Unrouted: `route "erp": filter false; route "é": filter error: no such key: amount`},
	} {
		got, err := decodeEvent(encodeEvent(e))
		if err != nil {
			t.Fatal(err)
		}
		if got.Source != e.Source || got.ID != e.ID || got.Topic != e.Topic || !got.ReceivedAt.Equal(e.ReceivedAt) ||
			!bytes.Equal(got.Body, e.Body) || len(got.Header) != len(e.Header) || got.Unrouted != e.Unrouted {
			t.Fatalf("round trip: got %+v, want %+v", got, e)
		}
		for i := range e.Header {
			if got.Header[i] != e.Header[i] {
				t.Fatalf("header %d: got %+v, want %+v", i, got.Header[i], e.Header[i])
			}
		}
		if at, err := receivedAt(encodeEvent(e)); err != nil || !at.Equal(e.ReceivedAt) {
			t.Fatalf("receivedAt = %v, %v", at, err)
		}
	}
}

// A record written before events kept an unrouted reason (version 1,
// written out here byte by byte as that build laid it out) still decodes,
// and an event without a reason is still written that way: the common
// record is no longer, and an older build reads it.
func TestDecodeEvent_Version1(t *testing.T) {
	old := []byte{1, 0, 0, 0, 0, 0, 0, 0, 42, // version 1, received at 42 ns
		4, 's', 'h', 'o', 'p', 2, 'e', '1', 3, 'a', '/', 'b', // source, id, topic
		1, 1, 'A', 1, 'b', // one header A: b
		2, '{', '}'} // the body
	e, err := decodeEvent(old)
	if err != nil {
		t.Fatal(err)
	}
	if e.Source != "shop" || e.ID != "e1" || e.Topic != "a/b" || e.ReceivedAt.UnixNano() != 42 ||
		len(e.Header) != 1 || e.Header[0] != (app.HeaderField{Name: "A", Value: "b"}) || string(e.Body) != "{}" || e.Unrouted != "" {
		t.Fatalf("old record decoded as %+v", e)
	}
	if at, err := receivedAt(old); err != nil || at.UnixNano() != 42 {
		t.Fatalf("receivedAt(old) = %v, %v", at, err)
	}
	if again := encodeEvent(e); !bytes.Equal(again, old) {
		t.Fatalf("an event without a reason encodes as %v; want version 1's %v", again, old)
	}
	e.Unrouted = "route \"r\": filter false"
	if v2 := encodeEvent(e); v2[0] != 2 || !bytes.Equal(v2[:len(old)], append([]byte{2}, old[1:]...)) {
		t.Fatalf("with a reason: %v; want version 2, version 1's layout, then the reason", v2)
	}
}

func TestDecodeEvent_Corrupt(t *testing.T) {
	good := encodeEvent(&app.Event{Source: "s", ID: "i", Header: []app.HeaderField{{Name: "a", Value: "b"}}, Body: []byte("body"), Unrouted: "why"})
	for i := range good { // every truncation is an error, never a panic
		if _, err := decodeEvent(good[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", i)
		}
	}
	if _, err := decodeEvent(append(good, 0)); err == nil {
		t.Fatal("trailing byte: no error")
	}
	bad := append([]byte{}, good...)
	bad[0] = 9
	if _, err := decodeEvent(bad); err == nil {
		t.Fatal("unknown version: no error")
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(encodeEvent(&app.Event{Source: "s", ID: "i", Topic: "t", Header: []app.HeaderField{{Name: "a", Value: "b"}}, Body: []byte("{}")}))
	f.Add(encodeEvent(&app.Event{Source: "s", ID: "i", Body: []byte("{}"), Unrouted: "route \"r\": filter false"}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		kept := bytes.Clone(b)
		e, err := decodeEvent(b)
		if err != nil {
			return
		}
		// Nothing of the event lies in b (a bbolt page, reused after the
		// transaction): overwriting b changes nothing.
		clear(b)
		was, err := decodeEvent(kept)
		if err != nil || !sameEvent(e, was) {
			t.Fatalf("decoded %+v, then %+v (%v) once b was overwritten", was, e, err)
		}
		// Whatever decodes survives a round trip unchanged.
		again, err := decodeEvent(encodeEvent(e))
		if err != nil {
			t.Fatal(err)
		}
		if !sameEvent(e, again) {
			t.Fatalf("round trip changed %+v into %+v", e, again)
		}
	})
}

func sameEvent(a, b *app.Event) bool {
	return a.Source == b.Source && a.ID == b.ID && a.Topic == b.Topic && a.ReceivedAt.Equal(b.ReceivedAt) &&
		bytes.Equal(a.Body, b.Body) && slices.Equal(a.Header, b.Header) && a.Unrouted == b.Unrouted
}

// BenchmarkDecodeEvent decodes a 2 KiB Shopify order with the headers
// Shopify sends, as the dispatcher does for each delivery it reads.
func BenchmarkDecodeEvent(b *testing.B) {
	e := &app.Event{Source: "shop", ID: "b6e3d0d5-7f0e-4c2c-9a59-0c6f1c1a2b3c", Topic: "orders/create", ReceivedAt: time.Now(),
		Body: bytes.Repeat([]byte("x"), 2048)}
	for _, name := range []string{"Content-Type", "User-Agent", "X-Shopify-Topic", "X-Shopify-Hmac-Sha256",
		"X-Shopify-Shop-Domain", "X-Shopify-Webhook-Id", "X-Shopify-Api-Version", "X-Shopify-Event-Id", "X-Shopify-Triggered-At"} {
		e.Header = append(e.Header, app.HeaderField{Name: name, Value: "value-of-" + name})
	}
	rec := encodeEvent(e)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeEvent(rec); err != nil {
			b.Fatal(err)
		}
	}
}
