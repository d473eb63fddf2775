package bboltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// bucketControls holds the destinations' controls: name → controlV1 JSON
// prefixed by its version byte. A handful of small records, read whole by
// DestinationControls.
var bucketControls = []byte("controls")

const controlVersion = 1

// controlV1 is the stored layout of an app.DestinationControl.
type controlV1 struct {
	Paused    bool      `json:"paused,omitempty"`
	PausedAt  time.Time `json:"paused_at,omitzero"`
	PausedBy  string    `json:"paused_by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	HeldUntil time.Time `json:"held_until,omitzero"`
}

var _ app.ControlStore = (*DB)(nil)

// PauseDestination pauses dest, durably; a paused one keeps its first pause.
func (d *DB) PauseDestination(ctx context.Context, dest string, at time.Time, by, reason string) error {
	return d.changeControl(ctx, dest, func(c *controlV1) {
		if c.Paused {
			return
		}
		c.Paused, c.PausedAt, c.PausedBy, c.Reason = true, at.UTC(), by, reason
	})
}

// ResumeDestination ends dest's pause, durably.
func (d *DB) ResumeDestination(ctx context.Context, dest string) error {
	return d.changeControl(ctx, dest, func(c *controlV1) {
		c.Paused, c.PausedAt, c.PausedBy, c.Reason = false, time.Time{}, "", ""
	})
}

// HoldDestination holds dest until until, unless held longer already.
func (d *DB) HoldDestination(ctx context.Context, dest string, until time.Time) error {
	return d.changeControl(ctx, dest, func(c *controlV1) {
		if until.After(c.HeldUntil) {
			c.HeldUntil = until.UTC()
		}
	})
}

// changeControl applies change to dest's stored control in one write.
func (d *DB) changeControl(ctx context.Context, dest string, change func(*controlV1)) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketControls)
		if err != nil {
			return err
		}
		var c controlV1
		if v := b.Get([]byte(dest)); v != nil {
			if c, err = decodeControl(v); err != nil {
				return fmt.Errorf("control of destination %s: %w", dest, err)
			}
		}
		change(&c)
		if c == (controlV1{}) {
			return b.Delete([]byte(dest))
		}
		v, err := json.Marshal(c)
		if err != nil {
			return err
		}
		return b.Put([]byte(dest), append([]byte{controlVersion}, v...))
	})
}

// DestinationControls returns every stored control by destination name.
func (d *DB) DestinationControls(ctx context.Context) (map[string]app.DestinationControl, error) {
	out := map[string]app.DestinationControl{}
	err := d.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketControls)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			c, err := decodeControl(v)
			if err != nil {
				return fmt.Errorf("control of destination %s: %w", k, err)
			}
			out[string(k)] = app.DestinationControl{Paused: c.Paused, PausedAt: c.PausedAt, PausedBy: c.PausedBy,
				Reason: c.Reason, HeldUntil: c.HeldUntil}
			return nil
		})
	})
	return out, err
}

func decodeControl(v []byte) (controlV1, error) {
	var c controlV1
	if len(v) == 0 || v[0] != controlVersion {
		return c, fmt.Errorf("unknown encoding version")
	}
	err := json.Unmarshal(v[1:], &c)
	return c, err
}
