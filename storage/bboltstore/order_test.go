package bboltstore

import (
	"encoding/binary"
	"testing"
	"time"

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
