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
}

// ErrNoStore is the error of a Service without a store.
var ErrNoStore = errors.New("replay: no store")

// Replay runs r: a dry run reads the candidates and returns the summary
// the run would report; the run reads them the same way, decides by the
// same rule, and unless the rule refuses it (an ECONFLICT error with the
// summary) makes the selected deliveries pending again,
// app.ReplayBatch per write, all due at now. Once it runs it goes on
// whoever cancels ctx (a replay half done is worse than one done or not
// begun), for at most app.ReplayRunTime; a dry run stops with ctx. A body
// search takes a place in the search gate for the whole call (an EBUSY
// error when there is none).
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
	if q.DryRun {
		return res, nil
	}
	if plan.Refusal != nil {
		return res, plan.Refusal
	}
	for start := 0; start < len(plan.IDs); start += app.ReplayBatch {
		n, err := s.Store.Requeue(ctx, plan.IDs[start:min(start+app.ReplayBatch, len(plan.IDs))], plan.From, now)
		res.Replayed += n
		if err != nil {
			s.wake(res.Replayed)
			return res, err
		}
	}
	s.wake(res.Replayed)
	return res, nil
}

// One replays delivery id alone, forced or not, by the same rule: a dead
// one is made pending again if it is still dead when written, a
// delivered one only when forced (else an ECONFLICT error naming when it
// was delivered), a pending one is left as it is. It returns the
// delivery as it was and its event's name.
func (s *Service) One(ctx context.Context, id uint64, force bool) (*app.Delivery, app.EventName, error) {
	d, _, err := s.Store.Delivery(ctx, id)
	if err != nil {
		return nil, app.EventName{}, err
	}
	names, err := s.Store.EventNames(ctx, []uint64{d.EventSeq})
	if err != nil {
		return nil, app.EventName{}, err
	}
	name := names[d.EventSeq]
	if app.ReplayVerdictOf(d.State, force) != app.ReplayIt {
		if d.State == app.Delivered {
			return d, name, deliveredAlready(d, name)
		}
		return d, name, nil // pending: on its way already
	}
	n, err := s.Store.Requeue(ctx, []uint64{id}, app.ReplayFrom(app.ReplayQuery{}, force), s.now())
	if err != nil {
		return d, name, err
	}
	if n == 0 && !force {
		// Dead when read, delivered when written: not sent again unasked.
		if now, _, err := s.Store.Delivery(ctx, id); err == nil && now.State == app.Delivered {
			return d, name, deliveredAlready(now, name)
		}
	}
	s.wake(n)
	return d, name, nil
}

// deliveredAlready is the refusal of an unforced replay of delivered d.
func deliveredAlready(d *app.Delivery, n app.EventName) error {
	return app.Errorf(app.ECONFLICT, "delivery %s was delivered at %s; send {\"force\": true} to send it again",
		app.DeliveryName(d.ID, d.Destination, n), d.Updated.UTC().Format(time.RFC3339))
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
