package bboltstore

import (
	"encoding/binary"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// encodeDeliveryV1 is encodeDelivery as builds before routes had rules
// wrote it: no route, no order key.
func encodeDeliveryV1(d *app.Delivery) []byte {
	b := []byte{1, byte(d.State)}
	b = binary.BigEndian.AppendUint64(b, d.EventSeq)
	b = binary.AppendUvarint(b, uint64(d.Attempts))
	b = binary.AppendUvarint(b, uint64(d.Tries))
	b = binary.BigEndian.AppendUint64(b, uint64(d.Due.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(d.Created.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(d.Updated.UnixNano()))
	b = binary.AppendUvarint(b, uint64(d.LastStatus))
	b = appendString(b, d.Destination)
	return appendString(b, d.LastError)
}

// A delivery record of the old layout still decodes, with no route or
// order key; the new layout keeps both.
func TestDecodeDelivery_Versions(t *testing.T) {
	at := time.Unix(0, 1_700_000_000_000_000_000)
	old := &app.Delivery{ID: 7, EventSeq: 3, Destination: "pos", State: app.Dead, Attempts: 2, Tries: 1,
		Due: at, Created: at, Updated: at, LastStatus: 503, LastError: "HTTP 503"}
	got, err := decodeDelivery(7, encodeDeliveryV1(old))
	if err != nil || *got != *old {
		t.Fatalf("v1 record decoded as %+v, %v; want %+v", got, err, old)
	}
	now := *old
	now.Route, now.OrderKey = "customers", "cust\x00\xff42"
	got, err = decodeDelivery(7, encodeDelivery(&now))
	if err != nil || *got != now {
		t.Fatalf("v2 record decoded as %+v, %v; want %+v", got, err, now)
	}
}

// A pending record of the old layout still decodes, with no order key.
func TestDecodePending_Versions(t *testing.T) {
	at := time.Unix(0, 1_700_000_000_000_000_000)
	p := &pending{Due: at, EventSeq: 9, To: []string{"pos"}, Merged: []uint64{3}, OrderKey: "A"}
	v2 := encodePending(p)
	v1 := append([]byte{1}, v2[1:len(v2)-2]...) // the old layout: no order key at the end
	got, err := decodePending(v1)
	if err != nil || got.OrderKey != "" || got.EventSeq != 9 || len(got.To) != 1 || len(got.Merged) != 1 {
		t.Fatalf("v1 pending decoded as %+v, %v", got, err)
	}
	if got, err := decodePending(v2); err != nil || got.OrderKey != "A" {
		t.Fatalf("v2 pending decoded as %+v, %v", got, err)
	}
}

// Retention takes a deleted delivery's key out of the group index: the
// index holds no more keys than there are ordered deliveries.
func TestDeleteEventsBefore_DropsGroupIndex(t *testing.T) {
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Unix(1_700_000_000, 0)
	for _, id := range []string{"a1", "a2"} {
		e := &app.Event{Source: "shop", ID: id, ReceivedAt: at, Body: []byte(`{}`)}
		if _, err := db.Accept(t.Context(), e, at.Add(time.Hour), &app.Plan{Direct: []app.Direct{{Dest: "pos", Route: "r", OrderKey: "A"}}}); err != nil {
			t.Fatal(err)
		}
		ds, _ := db.EventDeliveries(t.Context(), e.Seq)
		if err := db.RecordAttempt(t.Context(), ds[0].ID, &app.Attempt{Start: at, Status: 200}, app.Delivered, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	keys := func() (n int) {
		db.db().View(func(tx *bolt.Tx) error { n = tx.Bucket(bucketOrderAll).Stats().KeyN; return nil })
		return n
	}
	if n := keys(); n != 2 {
		t.Fatalf("group index has %d keys, want 2", n)
	}
	if n, err := db.DeleteEventsBefore(t.Context(), at.Add(time.Second), 10); err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 2", n, err)
	}
	if n := keys(); n != 0 {
		t.Fatalf("group index has %d keys after retention deleted both deliveries, want 0", n)
	}
}
