package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// A packed event decodes to the event it was, headers, body and unrouted
// reason exact, whether its payload was compressed (a JSON body) or kept
// raw (a short one, which zstd would only make longer); the sweep, the
// lists and the search read it too.
func TestPackEvent_RoundTrip(t *testing.T) {
	order := []byte(`{"id":5500043464097,"email":"mia@example.com","line_items":[` +
		string(bytes.Repeat([]byte(`{"title":"Tea","price":"14.00","quantity":1},`), 40)) + `{}]}`)
	for _, tc := range []struct {
		e     *app.Event
		codec byte
	}{
		{&app.Event{Source: "shop", ID: "evt_1", Topic: "orders/create", ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			Header: []app.HeaderField{{Name: "X-Shopify-Topic", Value: "orders/create"}, {Name: "X", Value: "\x00\xff"}}, Body: order}, codecZstd},
		{&app.Event{Source: "s", ID: "i", ReceivedAt: time.Unix(0, 1), Body: []byte("{}")}, codecRaw},
		{&app.Event{Source: "s", ID: "u", ReceivedAt: time.Unix(5, 0), Body: order, Unrouted: `route "erp": filter false`}, codecZstd},
		{&app.Event{Source: "s", ID: "e", ReceivedAt: time.Unix(5, 0)}, codecRaw},
		{&app.Event{Source: "s", ID: "f", ReceivedAt: time.Unix(5, 0), Body: order, Origin: "fetched", ProviderAt: time.Unix(4, 0)}, codecZstd},
	} {
		rec := packEvent(tc.e, zstdEncoder())
		if rec[0] != eventPacked {
			t.Fatalf("version %d; want packed", rec[0])
		}
		_, bodyLen, codec, _, _, err := packedHead(rec)
		if err != nil || codec != tc.codec || bodyLen != uint64(len(tc.e.Body)) {
			t.Fatalf("head: codec %d, body %d, %v; want codec %d, body %d", codec, bodyLen, err, tc.codec, len(tc.e.Body))
		}
		if codec == codecZstd && len(rec) >= len(encodeEvent(tc.e)) {
			t.Fatalf("packed %d bytes, plain %d: not smaller", len(rec), len(encodeEvent(tc.e)))
		}
		kept := bytes.Clone(rec)
		got, err := decodeEvent(rec)
		if err != nil || !sameEvent(got, tc.e) || got.Origin != tc.e.Origin || !got.ProviderAt.Equal(tc.e.ProviderAt) {
			t.Fatalf("decoded %+v, %v; want %+v", got, err, tc.e)
		}
		clear(rec) // nothing decoded lies in the record (a bbolt page)
		if !sameEvent(got, tc.e) {
			t.Fatal("the decoded event changed with its record's bytes")
		}
		rec = kept
		if at, err := receivedAt(rec); err != nil || !at.Equal(tc.e.ReceivedAt) {
			t.Fatalf("receivedAt = %v, %v", at, err)
		}
		row, size, err := eventHead(rec)
		if err != nil || row.name != (app.EventName{Source: tc.e.Source, ID: tc.e.ID, Topic: tc.e.Topic}) || !row.at.Equal(tc.e.ReceivedAt) || size != len(tc.e.Body) {
			t.Fatalf("eventHead = %+v, %d, %v", row, size, err)
		}
		var buf []byte
		if body, ok := eventBody(rec, &buf); !ok || !bytes.Equal(body, tc.e.Body) {
			t.Fatalf("eventBody = %q, %v", body, ok)
		}
	}
}

// A packed record that lies (a length past the bound, a frame that makes
// more or less than the record says, a flipped byte the frame's checksum
// catches, any truncation) is corrupt, never a panic nor a large
// allocation.
func TestPackEvent_Corrupt(t *testing.T) {
	e := &app.Event{Source: "s", ID: "i", Body: bytes.Repeat([]byte(`{"a":"bcdefgh"},`), 200)}
	good := packEvent(e, zstdEncoder())
	for i := range good {
		if _, err := decodeEvent(good[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", i)
		}
	}
	headEnd, _, _, size, payload, err := packedHead(good)
	if err != nil {
		t.Fatal(err)
	}
	// Re-lay the record with another unpacked length.
	withSize := func(n uint64) []byte {
		b := append([]byte(nil), good[:headEnd]...)
		b = binary.AppendUvarint(b, uint64(len(e.Body)))
		b = append(b, codecZstd)
		b = binary.AppendUvarint(b, n)
		return append(b, payload...)
	}
	for _, n := range []uint64{size - 1, size + 1, maxUnpacked + 1, 1 << 62} {
		if _, err := decodeEvent(withSize(n)); err == nil {
			t.Fatalf("unpacked length %d said, %d made: no error", n, size)
		}
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)-10] ^= 0x55
	if _, err := decodeEvent(flipped); err == nil {
		t.Fatal("a flipped byte: no error")
	}
	var buf []byte
	if _, ok := eventBody(flipped, &buf); ok {
		t.Fatal("eventBody of a flipped byte: ok")
	}
	// A frame that would make 64 MiB from a few bytes, said to be small.
	bomb := zstdEncoder().EncodeAll(make([]byte, 64<<20), nil)
	b := append([]byte(nil), good[:headEnd]...)
	b = binary.AppendUvarint(b, 0)
	b = append(b, codecZstd)
	b = binary.AppendUvarint(b, 100)
	if _, err := decodeEvent(append(b, bomb...)); err == nil {
		t.Fatal("a 64 MiB frame said to be 100 bytes: no error")
	}
}

func FuzzUnpack(f *testing.F) {
	f.Add(packEvent(&app.Event{Source: "s", ID: "i", Topic: "t", Header: []app.HeaderField{{Name: "a", Value: "b"}}, Body: bytes.Repeat([]byte("{}"), 100)}, zstdEncoder()))
	f.Add(packEvent(&app.Event{Source: "s", ID: "i", Body: []byte("{}")}, zstdEncoder()))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEvent(b)
		if err != nil {
			return
		}
		again, err := decodeEvent(packEvent(e, zstdEncoder()))
		if err != nil || !sameEvent(e, again) {
			t.Fatalf("round trip changed %+v into %+v (%v)", e, again, err)
		}
	})
}

// Once the file holds dictAfter events a dictionary is trained from them,
// durably, and the events after it are packed with it and smaller; the
// events from before and after it read back exact, also after the file
// is closed and opened again (the dictionary is loaded with it).
func TestDictionary_TrainedAndKept(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	ctx := context.Background()
	body := func(i int) []byte {
		return fmt.Appendf(nil, `{"id":%d,"email":"customer%d@example.com","financial_status":"paid","line_items":[{"title":"Tea %d","price":"%d.00","quantity":%d,"requires_shipping":true,"taxable":true}],"shipping_address":{"city":"Lyon","country_code":"FR"}}`,
			5500000000000+i, i*7919%1000, i%13, i%50, 1+i%3)
	}
	events := make([]*app.Event, dictAfter+50)
	for i := range events {
		events[i] = &app.Event{Source: "shop", ID: fmt.Sprintf("evt_%d", i), Topic: "orders/create", ReceivedAt: time.Unix(int64(i), 0), Body: body(i),
			Header: []app.HeaderField{{Name: "X-Shopify-Topic", Value: "orders/create"}}}
		if _, err := db.Accept(ctx, events[i], time.Unix(int64(i), 0).Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
		if i == dictAfter-1 {
			settle(t, db)      // the last accept applied: it starts the training
			db.trainers.Wait() // the training the last accept started
			if db.packer.Load() == nil {
				t.Fatalf("no dictionary after %d events", dictAfter)
			}
		}
	}
	size := func(seq uint64) (n int) {
		settle(t, db) // the file as the committer left it
		db.db().View(func(tx *bolt.Tx) error { n = len(tx.Bucket(bucketEvents).Get(seqKey(seq))); return nil })
		return n
	}
	before, after := size(events[dictAfter-2].Seq), size(events[dictAfter+40].Seq)
	t.Logf("a %d-byte body packed in %d bytes without the dictionary, %d with it", len(events[0].Body), before, after)
	if after >= before {
		t.Errorf("packed with the dictionary %d bytes, without %d: no smaller", after, before)
	}
	check := func(db *DB) {
		for _, e := range events {
			got, err := db.Event(ctx, e.Seq)
			if err != nil || got == nil || !bytes.Equal(got.Body, e.Body) || !slices.Equal(got.Header, e.Header) {
				t.Fatalf("event %d: %+v, %v", e.Seq, got, err)
			}
		}
	}
	check(db)
	db.Close()
	db = openT(t, dir)
	t.Cleanup(func() { db.Close() })
	if db.packer.Load() == nil {
		t.Fatal("the dictionary was not loaded again")
	}
	check(db)
}

// Events with nothing to learn from (the same short body each time) train
// no dictionary, and the training is not tried again before dictAfter more
// accepts: the builder's panic on such input is an error, not a crash.
func TestDictionary_NothingToLearn(t *testing.T) {
	db := openT(t, t.TempDir())
	t.Cleanup(func() { db.Close() })
	for i := range dictAfter {
		e := &app.Event{Source: "s", ID: fmt.Sprint(i), ReceivedAt: time.Unix(int64(i), 0), Body: []byte(`{"ok":true}`)}
		if _, err := db.Accept(context.Background(), e, time.Unix(int64(i), 0).Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, db)
	db.trainers.Wait()
	if db.packer.Load() != nil || db.training.Load() || db.accepted.Load() != 0 {
		t.Fatalf("dictionary %v, training %v, accepted %d; want none, not training, counting again from 0",
			db.packer.Load() != nil, db.training.Load(), db.accepted.Load())
	}
	// The builder itself, on samples that share nothing it counts.
	if _, err := buildDict([][]byte{make([]byte, 64<<10)}); err == nil {
		t.Log("the builder made a dictionary of zeros")
	}
}

// BenchmarkPack packs and unpacks the synthetic Shopify orders (with the
// headers Shopify sends) as Accept and the readers do: zstd alone, and
// with a dictionary trained from 256 of them. It reports the packed bytes
// per event against the plain record's.
func BenchmarkPack(b *testing.B) {
	var events []*app.Event
	for i, line := range shopifyOrders(b) {
		events = append(events, &app.Event{Source: "shop", ID: fmt.Sprintf("evt_%016x", i*7919), Topic: "orders/create", ReceivedAt: time.Unix(int64(i), 0), Body: line,
			Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Shopify-Topic", Value: "orders/create"},
				{Name: "X-Shopify-Hmac-Sha256", Value: "XWmrwMey6OsLMeiZKwP4FppHH3cmAiiJJAweH5Jo4bM="}, {Name: "X-Shopify-Webhook-Id", Value: fmt.Sprintf("%08x-2f1c-4b8e-9d3a-%012x", i, i*31)}}})
	}
	var samples [][]byte
	for _, e := range events[:256] {
		plain := encodeEvent(e)
		samples = append(samples, plain[len(plain)-len(e.Body)-20:])
	}
	d, err := buildDict(samples)
	if err != nil {
		b.Fatal(err)
	}
	id, err := registerDict(d)
	if err != nil {
		b.Fatal(err)
	}
	withDict, err := newPacker(id, d)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		enc  *zstd.Encoder
	}{{"zstd", zstdEncoder()}, {"zstd+dict", withDict.enc}} {
		var plain, packed int
		recs := make([][]byte, len(events))
		for i, e := range events {
			recs[i] = packEvent(e, c.enc)
			plain += len(encodeEvent(e))
			packed += len(recs[i])
		}
		b.Run(c.name+"/pack", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				packEvent(events[i%len(events)], c.enc)
			}
			b.ReportMetric(float64(plain)/float64(len(events)), "plain-bytes")
			b.ReportMetric(float64(packed)/float64(len(events)), "packed-bytes")
		})
		b.Run(c.name+"/unpack", func(b *testing.B) {
			var buf []byte
			for i := 0; b.Loop(); i++ {
				if _, ok := eventBody(recs[i%len(recs)], &buf); !ok {
					b.Fatal("unreadable")
				}
			}
		})
	}
}

// A data file of format 2 (events stored plain) opens without a step of
// its own, is marked format 3, and its plain events read, list and are
// found by a search beside the packed ones accepted after.
func TestPackEvent_OldFileReads(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	old := &app.Event{Source: "shop", ID: "old", Topic: "orders/create", ReceivedAt: time.Unix(10, 0),
		Header: []app.HeaderField{{Name: "X-Shopify-Topic", Value: "orders/create"}}, Body: []byte(`{"note":"written plain by an older build"}`)}
	err := db.db().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		old.Seq = seq
		if err := b.Put(seqKey(seq), encodeEvent(old)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(formatKey, binary.BigEndian.AppendUint32(nil, 2))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openT(t, dir)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	newer := &app.Event{Source: "shop", ID: "new", Topic: "orders/create", ReceivedAt: time.Unix(20, 0), Body: bytes.Repeat([]byte(`{"note":"packed"},`), 20)}
	if _, err := db.Accept(ctx, newer, time.Unix(20, 0).Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*app.Event{old, newer} {
		got, err := db.Event(ctx, e.Seq)
		if err != nil || got == nil || !sameEvent(got, e) {
			t.Fatalf("event %s: %+v, %v", e.ID, got, err)
		}
	}
	if format, err := checkFormat(db.db(), dir); err != nil || format {
		t.Fatalf("format older after open: %v, %v", format, err)
	}
	for q, want := range map[string]string{"older build": "old", `"packed"`: "new"} {
		res, err := db.SearchEvents(ctx, app.EventQuery{Q: q})
		if err != nil || len(res.Rows) != 1 || res.Rows[0].ID != want {
			t.Fatalf("search %q: %+v, %v; want %s", q, res, err, want)
		}
	}
	rows, _, err := db.ListEvents(ctx, app.EventQuery{})
	if err != nil || len(rows) != 2 || rows[0].Size != len(newer.Body) || rows[1].Size != len(old.Body) {
		t.Fatalf("list: %+v, %v", rows, err)
	}
}
