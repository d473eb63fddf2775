package bboltstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// bucketAudit holds the audit log: 8-byte big-endian seq → auditVersion
// byte then JSON. The bucket's sequence gives the seq.
var bucketAudit = []byte("audit")

const auditVersion = 1

// auditV1 is the stored layout of an app.AuditEntry.
type auditV1 struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor,omitempty"`
	Via    string    `json:"via,omitempty"`
	From   string    `json:"from,omitempty"`
	Action string    `json:"action,omitempty"`
	Target string    `json:"target,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Result string    `json:"result,omitempty"`
}

var _ app.AuditStore = (*DB)(nil)

// AppendAudit adds e durably, setting its Seq.
func (d *DB) AppendAudit(ctx context.Context, e app.AuditEntry) error {
	e = app.CleanAuditEntry(e)
	b, err := json.Marshal(auditV1{At: e.At.UTC(), Actor: e.Actor, Via: e.Via, From: e.From, Action: e.Action, Target: e.Target, Detail: e.Detail, Result: e.Result})
	if err != nil {
		return err
	}
	v := append([]byte{auditVersion}, b...)
	return d.updateQuiet(ctx, func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketAudit)
		if err != nil {
			return err
		}
		bk.FillPercent = 1.0 // appended in order
		seq, err := bk.NextSequence()
		if err != nil {
			return err
		}
		return bk.Put(binary.BigEndian.AppendUint64(nil, seq), v)
	})
}

func decodeAudit(k, v []byte) (app.AuditEntry, error) {
	seq := binary.BigEndian.Uint64(k)
	var r auditV1
	if len(v) == 0 || v[0] != auditVersion {
		return app.AuditEntry{}, fmt.Errorf("audit entry %d: unknown encoding", seq)
	}
	if err := json.Unmarshal(v[1:], &r); err != nil {
		return app.AuditEntry{}, fmt.Errorf("audit entry %d: %w", seq, err)
	}
	return app.AuditEntry{Seq: seq, At: r.At, Actor: r.Actor, Via: r.Via, From: r.From, Action: r.Action, Target: r.Target, Detail: r.Detail, Result: r.Result}, nil
}

// Audit returns the entries q selects, newest first, from before q.Before.
func (d *DB) Audit(ctx context.Context, q app.AuditQuery) ([]app.AuditEntry, error) {
	limit := q.PageLimit()
	var out []app.AuditEntry
	err := d.view(ctx, func(tx *bolt.Tx) error {
		out = nil
		b := tx.Bucket(bucketAudit)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		// Seek lands on the first key at or after Before (none: every key
		// is before it); the page starts just below.
		k, v := c.Last()
		if q.Before != 0 {
			if sk, _ := c.Seek(binary.BigEndian.AppendUint64(nil, q.Before)); sk != nil {
				k, v = c.Prev()
			} else {
				k, v = c.Last()
			}
		}
		for ; k != nil && len(out) < limit; k, v = c.Prev() {
			e, err := decodeAudit(k, v)
			if err != nil {
				return err
			}
			if !q.Since.IsZero() && e.At.Before(q.Since) && e.At.Before(q.Since.Add(-time.Hour)) {
				break // entries are appended in time order, give or take a clock step
			}
			if q.Match(&e) {
				out = append(out, e)
			}
		}
		return nil
	})
	return out, err
}

// DeleteAuditBefore deletes at most limit entries older than t, oldest
// first, and stops at the first entry that is not older (entries are
// appended in time order).
func (d *DB) DeleteAuditBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	var n int
	err := d.update(ctx, func(tx *bolt.Tx) error {
		var err error
		n, err = deleteBefore(tx.Bucket(bucketAudit), t, limit, true, func(k, v []byte) (time.Time, error) {
			e, err := decodeAudit(k, v)
			return e.At, err
		})
		return err
	})
	return n, err
}
