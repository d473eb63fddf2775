// Package apptest holds test helpers of the domain that need no disk:
// Store, an in-memory store of the roles the receive path and the sweep
// use, and the module's one way for a test to wait (Signal, Recv,
// Eventually, Until) instead of sleeping. It imports only the domain, so a domain test can use it without a
// storage technology; what needs durability, the outbox or debouncing is
// tested against the real stores (storage/storetest).
package apptest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"hookbox/app"
)

// ErrClosed is returned by Store's writes after Close.
var ErrClosed = errors.New("apptest: store closed")

// ErrDebounce is returned by Accept for a plan with debounced routes:
// Store does not debounce (storetest checks the real stores' debouncing).
var ErrDebounce = errors.New("apptest: Store does not debounce")

// Store keeps ids and events in maps, with the stores' rules for them: an
// id is a duplicate while it is remembered and unexpired at the event's
// receipt, an expired one that was not swept yet may be accepted again,
// the sweep forgets expired ids in expiry order and deletes old events
// but those with a delivery. A delivery is never sent (Store has no
// outbox): an event routed somewhere is kept by DeleteEventsBefore as the
// real stores keep an undelivered one. Every method honours ctx.
type Store struct {
	mu     sync.Mutex
	ids    map[idKey]remembered
	events map[uint64]*stored
	seq    uint64
	audit  []app.AuditEntry // in append order
	closed bool
}

var (
	_ app.IngestStore = (*Store)(nil)
	_ app.SweepStore  = (*Store)(nil)
)

type idKey struct{ source, id string }

// remembered is an id's expiry and the seq of the event accepted with it.
type remembered struct {
	exp time.Time
	seq uint64
}

// stored is an event and how many deliveries its plan opened.
type stored struct {
	e     app.Event
	dests int
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{ids: make(map[idKey]remembered), events: make(map[uint64]*stored)}
}

// Accept remembers e's id until idExpires and stores a copy of e, unless
// the id is remembered and unexpired at e.ReceivedAt (duplicate). It sets
// e.Seq. A plan with debounced routes is refused (ErrDebounce).
func (s *Store) Accept(ctx context.Context, e *app.Event, idExpires time.Time, plan *app.Plan) (bool, error) {
	if plan != nil && len(plan.Debounce) > 0 {
		return false, ErrDebounce
	}
	if err := s.lockWrite(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	k := idKey{e.Source, e.ID}
	if r, ok := s.ids[k]; ok && r.exp.After(e.ReceivedAt) {
		return true, nil
	}
	s.seq++
	c := *e
	c.Seq = s.seq
	c.Header = append([]app.HeaderField(nil), e.Header...)
	c.Body = append([]byte(nil), e.Body...)
	st := &stored{e: c}
	if plan != nil {
		st.dests = len(plan.Direct)
	}
	s.events[s.seq] = st
	s.ids[k] = remembered{exp: idExpires, seq: s.seq}
	e.Seq = s.seq
	return false, nil
}

// ForgetExpiredIDs forgets at most limit ids that expired at or before
// now, the earliest expiry first.
func (s *Store) ForgetExpiredIDs(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := s.lockWrite(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var expired []idKey
	for k, r := range s.ids {
		if !r.exp.After(now) {
			expired = append(expired, k)
		}
	}
	sort.Slice(expired, func(i, j int) bool {
		a, b := s.ids[expired[i]], s.ids[expired[j]]
		if !a.exp.Equal(b.exp) {
			return a.exp.Before(b.exp)
		}
		return a.seq < b.seq
	})
	if len(expired) > limit {
		expired = expired[:limit]
	}
	for _, k := range expired {
		delete(s.ids, k)
	}
	return len(expired), nil
}

// DeleteEventsBefore deletes at most limit events received before t, in
// seq order, stopping at the first one received at t or later; an event
// with a delivery is kept (Store never delivers one).
func (s *Store) DeleteEventsBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	if err := s.lockWrite(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	seqs := make([]uint64, 0, len(s.events))
	for seq := range s.events {
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	var doomed []uint64
	for _, seq := range seqs {
		if len(doomed) >= limit {
			break
		}
		st := s.events[seq]
		if !st.e.ReceivedAt.Before(t) {
			break
		}
		if st.dests == 0 {
			doomed = append(doomed, seq)
		}
	}
	for _, seq := range doomed {
		delete(s.events, seq)
	}
	return len(doomed), nil
}

// PruneWindows forgets nothing: Store keeps no rate-limit windows (it
// refuses debounced plans), so none ever empties.
func (s *Store) PruneWindows(ctx context.Context, now time.Time, limit int) (int, error) {
	return 0, ctx.Err()
}

// PruneCounts forgets nothing: Store keeps no hourly counts.
func (s *Store) PruneCounts(ctx context.Context, before time.Time) (int, error) {
	return 0, ctx.Err()
}

// LookupID reports whether source's id is remembered, until when, and the
// seq of the event accepted with it.
func (s *Store) LookupID(ctx context.Context, source, id string) (time.Time, uint64, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, 0, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.ids[idKey{source, id}]
	return r.exp, r.seq, ok, nil
}

// Event returns a copy of the event stored under seq, or nil.
func (s *Store) Event(ctx context.Context, seq uint64) (*app.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.events[seq]
	if !ok {
		return nil, nil
	}
	c := st.e
	c.Header = append([]app.HeaderField(nil), st.e.Header...)
	c.Body = append([]byte(nil), st.e.Body...)
	return &c, nil
}

// Counts reports how many ids are remembered and how many events stored.
func (s *Store) Counts(ctx context.Context) (ids, events int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids), len(s.events), nil
}

// lockWrite locks s for a write, unless ctx is done or s is closed: then
// it returns their error with s unlocked. The caller unlocks s.
func (s *Store) lockWrite(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Close makes later writes fail with ErrClosed, as a closed store's do.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// String describes the store's contents, for a test's failure message.
func (s *Store) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("apptest.Store{%d ids, %d events}", len(s.ids), len(s.events))
}

// AppendAudit adds e at the end of the audit log, setting its Seq.
func (s *Store) AppendAudit(ctx context.Context, e app.AuditEntry) error {
	if err := s.lockWrite(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.seq++
	e.Seq = s.seq
	s.audit = append(s.audit, app.CleanAuditEntry(e))
	return nil
}

// AuditLen returns the number of audit entries kept.
func (s *Store) AuditLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.audit)
}

// DeleteAuditBefore deletes at most limit of the oldest audit entries
// older than t, stopping at the first that is not, as the real stores do.
func (s *Store) DeleteAuditBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	if err := s.lockWrite(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for n < len(s.audit) && n < limit && s.audit[n].At.Before(t) {
		n++
	}
	s.audit = s.audit[n:]
	return n, nil
}

// DeleteQuarantinedBefore keeps no quarantine: it deletes nothing.
func (s *Store) DeleteQuarantinedBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	return 0, ctx.Err()
}
