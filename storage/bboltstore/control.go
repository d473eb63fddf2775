package bboltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// bucketControls holds the destinations' controls and health: name →
// controlV1 JSON prefixed by its version byte. A handful of small records,
// read whole by DestinationControls and DestinationHealths. (The health
// fields came later in the same version: JSON leaves out what an older
// build does not know, and it reads the rest.)
var bucketControls = []byte("controls")

const controlVersion = 1

// controlV1 is the stored layout of an app.DestinationControl.
type controlV1 struct {
	Paused    bool      `json:"paused,omitempty"`
	PausedAt  time.Time `json:"paused_at,omitzero"`
	PausedBy  string    `json:"paused_by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	HeldUntil time.Time `json:"held_until,omitzero"`
	// The destination's health (app.DestinationHealth).
	FailingSince time.Time `json:"failing_since,omitzero"`
	LastError    string    `json:"last_error,omitempty"`
	NextTry      time.Time `json:"next_try,omitzero"`
	RecoveredAt  time.Time `json:"recovered_at,omitzero"`
	Alerted      time.Time `json:"alerted,omitzero"`
}

var (
	_ app.ControlStore = (*DB)(nil)
	_ app.HealthStore  = (*DB)(nil)
)

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

// SaveDestinationHealth merges view into dest's stored health
// (app.MergeHealth) in one write.
func (d *DB) SaveDestinationHealth(ctx context.Context, dest string, view app.DestinationHealth) error {
	return d.changeControl(ctx, dest, func(c *controlV1) {
		c.setHealth(app.MergeHealth(c.health(), view))
	})
}

// MarkDestinationAlerted sets dest's Alerted to to when it is from (a
// destination with nothing stored has no mark to set).
func (d *DB) MarkDestinationAlerted(ctx context.Context, dest string, from, to time.Time) (bool, error) {
	var won bool
	err := d.update(ctx, func(tx *bolt.Tx) error {
		won = false // the function may run more than once
		b := tx.Bucket(bucketControls)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(dest))
		if v == nil {
			return nil
		}
		c, err := decodeControl(v)
		if err != nil {
			return fmt.Errorf("control of destination %s: %w", dest, err)
		}
		if !c.Alerted.Equal(from) {
			return nil
		}
		c.Alerted = to.UTC()
		if v, err = json.Marshal(c); err != nil {
			return err
		}
		won = true
		return b.Put([]byte(dest), append([]byte{controlVersion}, v...))
	})
	return won && err == nil, err
}

// DestinationHealths returns every stored health by destination name.
func (d *DB) DestinationHealths(ctx context.Context) (map[string]app.DestinationHealth, error) {
	out := map[string]app.DestinationHealth{}
	err := d.eachControl(ctx, func(name string, c controlV1) {
		if h := c.health(); h != (app.DestinationHealth{}) {
			out[name] = h
		}
	})
	return out, err
}

func (c *controlV1) health() app.DestinationHealth {
	return app.DestinationHealth{FailingSince: c.FailingSince, LastError: c.LastError, NextTry: c.NextTry,
		RecoveredAt: c.RecoveredAt, Alerted: c.Alerted}
}

func (c *controlV1) setHealth(h app.DestinationHealth) {
	c.FailingSince, c.LastError, c.NextTry = h.FailingSince.UTC(), h.LastError, h.NextTry.UTC()
	c.RecoveredAt, c.Alerted = h.RecoveredAt.UTC(), h.Alerted.UTC()
}

// changeControl applies change to dest's stored control in one write.
// change may run more than once (a batch retried): it sets, never adds.
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
	err := d.eachControl(ctx, func(name string, c controlV1) {
		out[name] = app.DestinationControl{Paused: c.Paused, PausedAt: c.PausedAt, PausedBy: c.PausedBy,
			Reason: c.Reason, HeldUntil: c.HeldUntil, Health: c.health()}
	})
	return out, err
}

// eachControl calls f with every stored record of the controls bucket.
func (d *DB) eachControl(ctx context.Context, f func(name string, c controlV1)) error {
	return d.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketControls)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			c, err := decodeControl(v)
			if err != nil {
				return fmt.Errorf("control of destination %s: %w", k, err)
			}
			f(string(k), c)
			return nil
		})
	})
}

func decodeControl(v []byte) (controlV1, error) {
	var c controlV1
	if len(v) == 0 || v[0] != controlVersion {
		return c, fmt.Errorf("unknown encoding version")
	}
	err := json.Unmarshal(v[1:], &c)
	return c, err
}
