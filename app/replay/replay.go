// Package replay runs replays by query (POST /api/v1/replay, hookbox
// replay -since …, the events page's "Replay these"): the dry run and the
// run over the domain's one selection (app.SelectReplay), so a dry run
// says what its run does; the run detached from its caller and bounded in
// time; a body search within the node's search gate.
package replay

import (
	"context"
	"errors"
	"time"

	"hookbox/app"
)

// Service runs replays by query over a store. Its fields are set once,
// before the first call; it is safe for concurrent use.
type Service struct {
	// Store reads the candidates and writes the requeue.
	Store app.ReplayQueryStore
	// Searches bounds the body searches that run at once (nil: none).
	Searches *app.SearchGate
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Wake tells the dispatcher that deliveries are due (nil: nobody).
	Wake func()
}

// Request is one replay by query.
type Request struct {
	// Query selects the deliveries; Query.DryRun counts and names them
	// without changing anything.
	Query app.ReplayQuery
	// Force sends delivered ones again too (see app.ReplayVerdictOf).
	Force bool
	// Caller is who asks (app.Identity.Actor), for the search gate.
	Caller string
	// Gated says the caller holds a place in the search gate already
	// (the events page counts its offer within its own search).
	Gated bool
	// WithoutPending leaves the pending ones out of the counts (no second
	// read): for the events page's offer, which shows only how many
	// finished ones match.
	WithoutPending bool
}

// ErrNoStore is the error of a Service without a store.
var ErrNoStore = errors.New("replay: no store")

// Replay runs r: a dry run reads the candidates and returns the summary
// the run would report; the run reads them the same way, decides by the
// same rule (dead ones sent, delivered ones skipped unless forced), and
// makes the selected deliveries pending again, app.ReplayBatch per write,
// all due at now. Once it runs it goes on whoever cancels ctx (a replay
// half done is worse than one done or not begun), for at most
// app.ReplayRunTime; a dry run stops with ctx. A body search takes a
// place in the search gate for the whole call (an EBUSY error when there
// is none).
func (s *Service) Replay(ctx context.Context, r Request) (app.ReplayResult, error) {
	if s.Store == nil {
		return app.ReplayResult{}, ErrNoStore
	}
	q, err := r.Query.Check()
	if err != nil {
		return app.ReplayResult{}, err
	}
	if q.Q != "" && s.Searches != nil && !r.Gated {
		leave, err := s.Searches.Enter(r.Caller)
		if err != nil {
			return app.ReplayResult{}, err
		}
		defer leave()
	}
	if !q.DryRun {
		run, cancel := context.WithTimeout(context.WithoutCancel(ctx), app.ReplayRunTime)
		defer cancel()
		ctx = run
	}
	now := s.now()
	cands, more, err := s.Store.ReplayCandidates(ctx, q)
	if err != nil {
		return app.ReplayResult{}, err
	}
	plan := app.SelectReplay(q, r.Force, cands, more)
	res := plan.Result
	if q.Status == app.ReplayAny && !r.WithoutPending {
		// The pending ones in the same window: left alone, and said.
		if res.Counts.PendingLeft, err = s.Store.ReplayPending(ctx, q); err != nil {
			return app.ReplayResult{}, err
		}
	}
	if q.DryRun {
		return res, nil
	}
	for start := 0; start < len(plan.IDs); start += app.ReplayBatch {
		n, err := s.Store.Requeue(ctx, plan.IDs[start:min(start+app.ReplayBatch, len(plan.IDs))], plan.From, now)
		res.Replayed += n
		if err != nil {
			s.wake(res.Replayed)
			return res, err
		}
	}
	res.Counts.Changed = res.Selected - res.Replayed
	s.wake(res.Replayed)
	return res, nil
}

// One replays delivery id alone, forced or not, by the same rule: a dead
// one is made pending again if it is still dead when written, a
// delivered one only when forced (else an ECONFLICT error naming when it
// was delivered), a pending one is left as it is. It returns the
// delivery as it was and its event's name.
func (s *Service) One(ctx context.Context, id uint64, force bool) (*app.Delivery, app.EventName, error) {
	o, d, err := s.decide(ctx, id, force, false)
	if err != nil {
		return nil, app.EventName{}, err
	}
	switch o.Outcome {
	case app.ReplayNotFound:
		return nil, app.EventName{}, app.ErrNotFound
	case app.ReplaySkipped:
		return d, o.Event, deliveredAlready(o)
	}
	if o.Outcome == app.ReplaySent {
		s.wake(1)
	}
	return d, o.Event, nil
}

// Deliveries replays the deliveries ids one by one, forced or not, by the
// same rule as One, and says what it did with each (a dry run: would
// do): sent, skipped (delivered, not forced), left (pending) or not
// found. Only a store failure is an error.
func (s *Service) Deliveries(ctx context.Context, ids []uint64, force, dryRun bool) (app.ReplayEach, error) {
	var each app.ReplayEach
	for _, id := range ids {
		o, _, err := s.decide(ctx, id, force, dryRun)
		if err != nil {
			s.wake(each.Counts.Sent())
			return each, err
		}
		each.Add(o)
	}
	if !dryRun {
		s.wake(each.Counts.Sent())
	}
	return each, nil
}

// Event replays the deliveries of the event source sent as id (the
// newest stored with that name) as Deliveries does; an ENOTFOUND error
// when no such event is stored.
func (s *Service) Event(ctx context.Context, source, id string, force, dryRun bool) (app.ReplayEach, error) {
	evs, _, err := s.Store.ListEvents(ctx, app.EventQuery{Source: source, ID: id, Limit: 1})
	if err != nil {
		return app.ReplayEach{}, err
	}
	if len(evs) == 0 {
		return app.ReplayEach{}, app.Errorf(app.ENOTFOUND, "no event %s/%s is stored (is the source right, and was it received within the retention?); the events page lists what is", source, id)
	}
	ds, err := s.Store.EventDeliveries(ctx, evs[0].Seq)
	if err != nil {
		return app.ReplayEach{}, err
	}
	ids := make([]uint64, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return s.Deliveries(ctx, ids, force, dryRun)
}

// decide replays delivery id (unless dryRun) by app.ReplayVerdictOf and
// says what it did, with the delivery as it was read (nil when it is not
// found).
func (s *Service) decide(ctx context.Context, id uint64, force, dryRun bool) (app.ReplayOne, *app.Delivery, error) {
	o := app.ReplayOne{ID: id}
	d, _, err := s.Store.Delivery(ctx, id)
	if errors.Is(err, app.ErrNotFound) || app.ErrorCode(err) == app.ENOTFOUND {
		o.Outcome = app.ReplayNotFound
		return o, nil, nil
	}
	if err != nil {
		return o, nil, err
	}
	names, err := s.Store.EventNames(ctx, []uint64{d.EventSeq})
	if err != nil {
		return o, d, err
	}
	o.Destination, o.Event, o.State, o.Updated = d.Destination, names[d.EventSeq], d.State, d.Updated
	switch app.ReplayVerdictOf(d.State, force) {
	case app.ReplayRefusedDelivered:
		o.Outcome = app.ReplaySkipped
		return o, d, nil
	case app.ReplayLeftPending:
		o.Outcome = app.ReplayLeft
		return o, d, nil
	}
	o.Outcome = app.ReplaySent
	if dryRun {
		return o, d, nil
	}
	n, err := s.Store.Requeue(ctx, []uint64{id}, app.ReplayFrom(app.ReplayQuery{}, force), s.now())
	if err != nil || n > 0 {
		return o, d, err
	}
	// Dead when read, something else when written: delivered meanwhile
	// is not sent again unasked; swept or replayed by someone else is
	// left alone.
	o.Outcome = app.ReplayChanged
	if now, _, err := s.Store.Delivery(ctx, id); err == nil {
		o.State, o.Updated = now.State, now.Updated
		if now.State == app.Delivered && !force {
			o.Outcome = app.ReplaySkipped
		}
	}
	return o, d, nil
}

// deliveredAlready is the refusal of an unforced replay of delivered o.
func deliveredAlready(o app.ReplayOne) error {
	return app.Errorf(app.ECONFLICT, "delivery %s was delivered at %s; send {\"force\": true} to send it again",
		o.Name(), o.Updated.UTC().Format(time.RFC3339))
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Service) wake(replayed int) {
	if replayed > 0 && s.Wake != nil {
		s.Wake()
	}
}
