package dispatch

// The recorder: the dispatcher's finished attempts written in batches,
// and what each written batch ends (leases, waits after a failed write,
// the counts and log lines of its outcomes).

import (
	"cmp"
	"context"
	"time"

	"hookbox/app"
)

// record stores finished attempts, as many per write as queued while the
// last write committed, until records is closed.
func (d *Dispatcher) record(records <-chan finishedAttempt) {
	batch := make([]finishedAttempt, 0, maxRecordBatch)
	recs := make([]app.AttemptRecord, 0, maxRecordBatch)
	for f := range records {
		batch = append(batch[:0], f)
	more:
		for len(batch) < maxRecordBatch {
			select {
			case f, ok := <-records:
				if !ok {
					break more
				}
				batch = append(batch, f)
			default:
				break more
			}
		}
		recs = recs[:0]
		for _, f := range batch {
			recs = append(recs, f.rec)
		}
		d.recorded(batch, d.store.RecordAttempts(context.Background(), recs)) // recorded even at shutdown: the attempts were sent
	}
}

// recorded ends the leases of a recorded batch. An attempt that could not
// be recorded keeps its lease for a while: the delivery is still due and
// goes out again then, not in a tight loop against the destination, and
// later each time it fails to be recorded again: StoreRetry, doubling up
// to StoreRetryMax.
func (d *Dispatcher) recorded(batch []finishedAttempt, errs []error) {
	var held map[time.Duration][]uint64 // by how long they wait
	retry := false
	var failed int
	var firstErr error
	d.mu.Lock()
	for i, f := range batch {
		id := f.rec.ID
		if d.heard(f, errs[i] == nil && !f.unsent) {
			retry = true // wake: the walk begins
		}
		if errs[i] != nil {
			n := min(d.leases.unrecorded[id]+1, 30)
			d.leases.unrecorded[id] = n
			wait := app.Backoff{First: d.StoreRetry, Max: d.StoreRetryMax}.Wait(n)
			if held == nil {
				held = map[time.Duration][]uint64{}
			}
			held[wait] = append(held[wait], id)
			failed++
			firstErr = cmp.Or(firstErr, errs[i])
			continue
		}
		delete(d.leases.unrecorded, id)
		d.release(id)
		// A retry's due time sets the timer; and the record of a delivery
		// with an order key, whatever its outcome, may have made the next
		// of its group the head (the stores hold that one back until now):
		// a pass looks for it at once rather than at the next commit.
		retry = retry || f.rec.State == app.Pending || f.w.Delivery.OrderKey != ""
	}
	holds := d.ctl.holds
	d.ctl.holds = nil
	d.mu.Unlock()
	d.storeHolds(holds)
	for wait, ids := range held {
		time.AfterFunc(wait, func() {
			d.mu.Lock()
			for _, id := range ids {
				d.release(id)
			}
			d.mu.Unlock()
			d.Wake()
		})
	}
	if failed > 0 {
		d.storage().Unrecorded(d.Logger, failed, firstErr)
	}
	// The first failures and recoveries heard are stored before the sends
	// count as done (Wait).
	d.flushHealth()
	if retry { // its next due time sets the timer
		d.Wake()
	}
	for i, f := range batch {
		if errs[i] != nil {
			d.sends.Done()
			continue
		}
		a := f.rec.Attempt
		d.Stats.Attempt(f.lane.name, f.rec.State, a.Duration)
		switch f.rec.State {
		case app.Dead:
			d.Logger.Warn("delivery dead", "delivery", f.rec.ID, "destination", f.lane.name,
				"event", f.w.Event.ID, "attempts", a.N, "last_error", a.Error)
		case app.Pending:
			d.Logger.Debug("delivery will retry", "delivery", f.rec.ID, "destination", f.lane.name, "due", f.rec.Due, "error", a.Error)
		}
		d.sends.Done()
	}
	if d.signals.onRecorded != nil {
		d.signals.onRecorded()
	}
}
