package bboltstore

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"testing"
	"time"

	"hookbox/app"
)

// The record decoders read bytes from the data file, which a bad disk, a
// bad restore or an older version may have garbled: they must return an
// error or a record, never panic, and what they return must survive a
// round trip through its encoder.

func FuzzDecodeDelivery(f *testing.F) {
	f.Add(encodeDelivery(&app.Delivery{State: app.Pending, EventSeq: 7, Attempts: 2, Tries: 1, Due: t1,
		Created: t1, Updated: t1, LastStatus: 503, Destination: "pos", LastError: "HTTP 503"}))
	f.Add(encodeDelivery(&app.Delivery{State: app.Dead, Destination: "", LastError: "x\x00\xff"}))
	f.Add([]byte{deliveryVersion, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDelivery(42, b)
		if err != nil {
			return
		}
		again, err := decodeDelivery(42, encodeDelivery(d))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", d, err)
		}
		if !sameDelivery(d, again) {
			t.Fatalf("round trip changed %+v into %+v", d, again)
		}
	})
}

func sameDelivery(a, b *app.Delivery) bool {
	return a.ID == b.ID && a.State == b.State && a.EventSeq == b.EventSeq && a.Attempts == b.Attempts &&
		a.Tries == b.Tries && a.Due.Equal(b.Due) && a.Created.Equal(b.Created) && a.Updated.Equal(b.Updated) &&
		a.LastStatus == b.LastStatus && a.Destination == b.Destination && a.LastError == b.LastError
}

func FuzzDecodeAttempt(f *testing.F) {
	f.Add(encodeAttempt(&app.Attempt{Start: t1, Duration: 3 * time.Millisecond, Status: 500, Error: "HTTP 500", Response: []byte("boom")}))
	f.Add(encodeAttempt(&app.Attempt{Start: t1, Error: "no answer within 15s"}))
	f.Add(encodeAttempt(&app.Attempt{Start: t1, Status: 503, Error: "HTTP 503", Probe: true}))
	f.Add(attemptV1(t1, 500, "HTTP 500"))
	f.Add([]byte{attemptVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAttempt(3, b)
		if err != nil {
			return
		}
		if len(a.Response) > len(b) {
			t.Fatalf("decoded a %d-byte response from %d bytes", len(a.Response), len(b))
		}
		again, err := decodeAttempt(3, encodeAttempt(a))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", a, err)
		}
		if again.N != a.N || !again.Start.Equal(a.Start) || again.Duration != a.Duration || again.Status != a.Status ||
			again.Error != a.Error || !bytes.Equal(again.Response, a.Response) || again.Probe != a.Probe {
			t.Fatalf("round trip changed %+v into %+v", a, again)
		}
	})
}

func FuzzDecodePending(f *testing.F) {
	f.Add(encodePending(&pending{Due: t1, EventSeq: 9, Deferred: true, Merged: []uint64{3, 5}, To: []string{"pos", "erp"}}))
	f.Add(encodePending(&pending{Due: t1, EventSeq: 1}))
	f.Add([]byte{pendingVersion, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePending(b)
		if err != nil {
			return
		}
		if len(p.To)+len(p.Merged) > len(b) {
			t.Fatalf("decoded %d destinations and %d merged seqs from %d bytes", len(p.To), len(p.Merged), len(b))
		}
		again, err := decodePending(encodePending(p))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", p, err)
		}
		if !again.Due.Equal(p.Due) || again.EventSeq != p.EventSeq || again.Deferred != p.Deferred ||
			!slices.Equal(again.To, p.To) || !slices.Equal(again.Merged, p.Merged) {
			t.Fatalf("round trip changed %+v into %+v", p, again)
		}
	})
}

func FuzzDecodeWindow(f *testing.F) {
	f.Add(window{Length: time.Minute, Times: []time.Time{t1, t1.Add(time.Second)}}.encode())
	f.Add(window{Length: time.Hour}.encode())
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		w := decodeWindow(b)
		if len(w.Times)*8 > len(b) {
			t.Fatalf("decoded %d times from %d bytes", len(w.Times), len(b))
		}
		w.Times = app.PruneSends(w.Times, w.Length, t1) // must not panic on any window
		again := decodeWindow(w.encode())
		if again.Length != w.Length || len(again.Times) != len(w.Times) {
			t.Fatalf("round trip changed %+v into %+v", w, again)
		}
		for i := range w.Times {
			if !again.Times[i].Equal(w.Times[i]) {
				t.Fatalf("time %d: %v became %v", i, w.Times[i], again.Times[i])
			}
		}
	})
}

func FuzzParseIDValue(f *testing.F) {
	f.Add(idValue(t1, 12))
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		exp, seq, err := parseIDValue(b)
		if err != nil {
			return
		}
		if got := idValue(exp, seq); !bytes.Equal(got, b) {
			t.Fatalf("round trip changed %x into %x", b, got)
		}
	})
}

func FuzzDecodePoison(f *testing.F) {
	f.Add(encodePoison(&app.Poison{At: t1, Kind: "event", Key: "42", Reason: "corrupt record: version 9", Delivery: 7, Destination: "pos"}, []byte{9, 1, 2}))
	f.Add(encodePoison(&app.Poison{Kind: "pending delivery", Key: `route "r", key "c1"`}, nil))
	f.Add([]byte{poisonVersion, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePoison(5, b)
		if err != nil {
			return
		}
		again, err := decodePoison(5, encodePoison(&p, nil))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", p, err)
		}
		if again.ID != p.ID || !again.At.Equal(p.At) || again.Kind != p.Kind || again.Key != p.Key || again.Reason != p.Reason ||
			again.Delivery != p.Delivery || again.Destination != p.Destination {
			t.Fatalf("round trip changed %+v into %+v", p, again)
		}
	})
}

var t1 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// attemptV1 is an attempt as the encoding before probes wrote it.
func attemptV1(start time.Time, status int, text string) []byte {
	b := []byte{1}
	b = binary.BigEndian.AppendUint64(b, uint64(start.UnixNano()))
	b = binary.AppendUvarint(b, uint64(time.Millisecond))
	b = binary.AppendUvarint(b, uint64(status))
	b = appendString(b, text)
	return appendString(b, "")
}

// An attempt recorded before probes were marked reads as no probe; one
// recorded since keeps its mark.
func TestDecodeAttempt_Probe(t *testing.T) {
	old, err := decodeAttempt(1, attemptV1(t1, 500, "HTTP 500"))
	if err != nil || old.Probe || old.Status != 500 || old.Error != "HTTP 500" {
		t.Fatalf("version 1 attempt = %+v, %v; want status 500, no probe", old, err)
	}
	for _, probe := range []bool{false, true} {
		a, err := decodeAttempt(2, encodeAttempt(&app.Attempt{Start: t1, Status: 503, Probe: probe}))
		if err != nil || a.Probe != probe {
			t.Fatalf("attempt with Probe %v decoded as %+v, %v", probe, a, err)
		}
	}
}

// The decoders copy what they return out of the input: bbolt's bytes die
// with the transaction.
func TestDecoders_Copy(t *testing.T) {
	d := encodeDelivery(&app.Delivery{Destination: "pos", LastError: "err"})
	dl, _ := decodeDelivery(1, d)
	a := encodeAttempt(&app.Attempt{Start: t1, Error: "err", Response: []byte("resp")})
	at, _ := decodeAttempt(1, a)
	p := encodePending(&pending{Due: t1, To: []string{"pos"}})
	pd, _ := decodePending(p)
	want := []any{dl.Destination, dl.LastError, at.Error, string(at.Response), pd.To[0]}
	for _, b := range [][]byte{d, a, p} {
		for i := range b {
			b[i] = 'Z'
		}
	}
	if got := []any{dl.Destination, dl.LastError, at.Error, string(at.Response), pd.To[0]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the input changed: %v, want %v", got, want)
	}
}
