package receive

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
)

// The quarantine's outcomes, as the metric counts them (Stats.Quarantine).
const (
	quarantineKept    = "kept"
	quarantineLimited = "limited" // past the rate of the source or the address
	quarantineFull    = "full"    // the store refused it: the address's share
	quarantineFailed  = "failed"  // the write failed, or the queue was full
	quarantineBack    = "recovered"
)

// Bounds of what waits to be written: at most queueLen refused requests
// (QuarantinePerSourceMinute a source a minute come through the gate),
// written keepBatch at a time in one commit.
const (
	queueLen = 256
	// queueBytes bounds the bytes of the copies waiting, whatever
	// max_body_bytes allows: a store that stalls must not make the queue
	// hold 256 bodies of a megabyte each.
	queueBytes   = 8 << 20
	keepBatch    = 64
	recheckPage  = 100
	drainTimeout = 5 * time.Second
)

// quarantine is the receiver's side of the sources' quarantines: the gate
// that bounds how fast requests enter, the queue a writer empties in
// batches (the 401 never waits for it), and the rechecks that take in what
// a fixed secret verifies.
type quarantine struct {
	store app.QuarantineStore
	mu    sync.Mutex
	gate  app.QuarantineGate
	// due are the sources to recheck; wake tells the writer.
	due  map[string]bool
	wake chan struct{}

	queue chan *app.Quarantined
	// queued is the bytes (Size) of the copies in queue.
	queued atomic.Int64
	// rechecking lets one recheck run at a time.
	rechecking sync.Mutex
	// Written, when set, hears each batch written (tests).
	written func(kept []bool)
}

// KeepQuarantine turns the quarantine on over store: requests refused for
// a bad or stale signature are kept (within [quarantine]) until a fixed
// secret takes them in. RunQuarantine writes them and rechecks.
func (r *Receiver) KeepQuarantine(store app.QuarantineStore) {
	r.q = &quarantine{store: store, due: map[string]bool{}, wake: make(chan struct{}, 1), queue: make(chan *app.Quarantined, queueLen)}
}

// quarantinable reports whether a request refused with err may be kept:
// it carried its provider's signature, which did not match or was too old.
// One without it (a scan, a ping) or with a malformed one is not worth
// keeping, nor a wrong bearer token (it is the credential itself).
func quarantinable(src *app.Source, err error) bool {
	return src.Provider != "token" && (errors.Is(err, provider.ErrBadSignature) || errors.Is(err, provider.ErrStaleTimestamp))
}

// offer queues a copy of in, refused for err at now, for source's
// quarantine when the gate lets it in; otherwise it is only counted. It
// never blocks and never writes: the answer goes at once (a refused
// request was never acknowledged, so keeping it is best effort).
func (r *Receiver) offer(rt *routing, src *app.Source, in *app.Inbound, now time.Time, err error) {
	q := r.q
	if q == nil || !rt.cfg.Quarantine.On() || !quarantinable(src, err) {
		return
	}
	q.mu.Lock()
	ok := q.gate.Allow(src.Name, in.Client, now)
	q.mu.Unlock()
	if !ok {
		r.Stats.Quarantine(src.Name, quarantineLimited)
		return
	}
	// What one address may hold at most (QuarantineFit would refuse it),
	// and what the queue has room for, before the body is copied.
	e := &app.Quarantined{Source: src.Name, At: now, Client: in.Client, Reason: err.Error(),
		Header: keptHeaders(in.Header), Body: in.Body}
	size := e.Size()
	if _, perB := rt.cfg.Quarantine.PerClient(); size > perB {
		r.Stats.Quarantine(src.Name, quarantineFull)
		return
	}
	if q.queued.Add(size) > queueBytes {
		q.queued.Add(-size)
		r.Stats.Quarantine(src.Name, quarantineFailed)
		return
	}
	e.Body = bytes.Clone(in.Body) // the body is the connection's buffer
	select {
	case q.queue <- e:
	default:
		q.queued.Add(-size)
		r.Stats.Quarantine(src.Name, quarantineFailed)
	}
}

// RunQuarantine writes the refused requests offered, in batches, and
// rechecks the sources' quarantines: every source's at start, and a
// source's again after a reload changed its secrets (Apply). It returns
// when ctx is done, after writing what waits within drainTimeout.
func (r *Receiver) RunQuarantine(ctx context.Context) {
	q := r.q
	if q == nil {
		<-ctx.Done()
		return
	}
	for _, s := range r.routing.Load().cfg.Sources {
		r.recheckSoon(s.Name)
	}
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
			defer cancel()
			for batch := q.take(nil); len(batch) > 0; batch = q.take(nil) {
				r.keep(dctx, batch)
			}
			return
		case e := <-q.queue:
			r.keep(ctx, q.take(e))
		case <-q.wake:
			q.mu.Lock()
			due := q.due
			q.due = map[string]bool{}
			q.mu.Unlock()
			for source := range due {
				res, err := r.Recheck(ctx, source)
				switch {
				case err != nil && ctx.Err() == nil:
					r.Logger.Warn("quarantine recheck failed", "source", source, slog.Any("error", err))
				case res.Recovered > 0:
					r.Logger.Info("quarantine rechecked: requests taken in", "source", source,
						"recovered", res.Recovered, "duplicate", res.Duplicate, "remaining", res.Remaining)
				}
			}
		}
	}
}

// take returns first (when not nil) and what else waits, up to keepBatch.
func (q *quarantine) take(first *app.Quarantined) []*app.Quarantined {
	var batch []*app.Quarantined
	if first != nil {
		batch = append(batch, first)
	}
	for len(batch) < keepBatch {
		select {
		case e := <-q.queue:
			batch = append(batch, e)
		default:
			return q.taken(batch)
		}
	}
	return q.taken(batch)
}

// taken gives back the queue's room of batch, taken from it.
func (q *quarantine) taken(batch []*app.Quarantined) []*app.Quarantined {
	for _, e := range batch {
		q.queued.Add(-e.Size())
	}
	return batch
}

// keep writes batch in one commit and counts what became of each.
func (r *Receiver) keep(ctx context.Context, batch []*app.Quarantined) {
	q := r.q
	kept, err := q.store.KeepQuarantined(ctx, batch, r.routing.Load().cfg.Quarantine)
	if err != nil {
		r.Logger.Warn("quarantine write failed", "requests", len(batch), slog.Any("error", err))
		kept = make([]bool, len(batch))
	}
	for i, e := range batch {
		switch {
		case err != nil:
			r.Stats.Quarantine(e.Source, quarantineFailed)
		case kept[i]:
			r.Stats.Quarantine(e.Source, quarantineKept)
		default:
			r.Stats.Quarantine(e.Source, quarantineFull)
		}
	}
	if q.written != nil {
		q.written(kept)
	}
}

// recheckSoon asks RunQuarantine to recheck source.
func (r *Receiver) recheckSoon(source string) {
	q := r.q
	if q == nil {
		return
	}
	q.mu.Lock()
	q.due[source] = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// secretsChanged reports whether a's and b's secrets or tolerance differ.
func secretsChanged(a, b *app.Source) bool {
	if len(a.Settings.Secrets) != len(b.Settings.Secrets) || a.Settings.Tolerance != b.Settings.Tolerance {
		return true
	}
	for i := range a.Settings.Secrets {
		if !bytes.Equal(a.Settings.Secrets[i], b.Settings.Secrets[i]) {
			return true
		}
	}
	return false
}

// Recheck verifies source's quarantined requests again with the secrets
// in force, each at the time it arrived (so a timestamp's tolerance counts
// from then), and takes in those that pass through the receive path
// (dedup, routes, debounce), with their arrival time and without the
// provider's signature headers; they leave the quarantine. One recheck
// runs at a time.
func (r *Receiver) Recheck(ctx context.Context, source string) (app.QuarantineRecheck, error) {
	res := app.QuarantineRecheck{Source: source}
	rt := r.routing.Load()
	src, ok := rt.sources[source]
	if !ok {
		return res, app.Errorf(app.ENOTFOUND, "no source %s", source)
	}
	q := r.q
	if q == nil {
		return res, nil
	}
	q.rechecking.Lock()
	defer q.rechecking.Unlock()
	var after uint64
	for {
		page, err := q.store.Quarantined(ctx, source, after, recheckPage)
		if err != nil || len(page) == 0 {
			return res, err
		}
		after = page[len(page)-1].ID
		var done []uint64
		for i := range page {
			e := &page[i]
			res.Checked++
			dup, ok, err := r.takeIn(ctx, rt, src, e)
			if err != nil {
				if len(done) > 0 {
					_, _ = q.store.DeleteQuarantined(ctx, source, done)
				}
				return res, err
			}
			if !ok {
				res.Remaining++
				continue
			}
			res.Recovered++
			if dup {
				res.Duplicate++
			}
			r.Stats.Quarantine(source, quarantineBack)
			done = append(done, e.ID)
		}
		if len(done) > 0 {
			if _, err := q.store.DeleteQuarantined(ctx, source, done); err != nil {
				return res, err
			}
		}
	}
}

// takeIn verifies e with src's secrets at its arrival and, when genuine
// and identified, accepts it: ok false leaves it in the quarantine (still
// refused, or genuine without a usable id); err is the store's.
func (r *Receiver) takeIn(ctx context.Context, rt *routing, src *app.Source, e *app.Quarantined) (dup, ok bool, err error) {
	in := &app.Inbound{Body: e.Body, Header: e.Header, Client: e.Client}
	v, err := src.Verify(provider.Request{Body: e.Body, Header: in, URL: src.URL}, e.At)
	if err != nil || v.Ping {
		return false, false, nil
	}
	id, topic, err := r.identify(src, v, in)
	if err != nil {
		return false, false, nil
	}
	res, err := r.accept(ctx, rt, src, in, &app.Event{
		Source:     src.Name,
		ID:         id,
		Topic:      topic,
		ReceivedAt: e.At,
		Header:     unsigned(src, e.Header),
		Body:       e.Body,
		Origin:     app.OriginQuarantine,
	})
	if err != nil {
		return false, false, err
	}
	dup = res.Outcome == app.Duplicate
	return dup, true, nil
}

// unsigned is h without the provider's signature headers: a recovered
// event was verified with a secret the sender may not have signed with
// for its destination, so its signature goes nowhere (hookbox signs the
// delivery when the destination has a secret).
func unsigned(src *app.Source, h []app.HeaderField) []app.HeaderField {
	out := make([]app.HeaderField, 0, len(h))
	for _, f := range h {
		if provider.SignatureHeader(f.Name) || src.Settings.SignatureHeader != "" && strings.EqualFold(f.Name, src.Settings.SignatureHeader) {
			continue
		}
		out = append(out, f)
	}
	return out
}
