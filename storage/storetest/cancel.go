package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// testCancelled: a store call whose ctx is done returns ctx's error
// (context.Canceled) and writes nothing, whether it reads or writes.
func testCancelled(t *testing.T, open Opener) {
	s := open(t)
	e := NewEvent("shop", "kept", T0)
	mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("erp")})
	id := ds(t, s, e.Seq)
	done, cancel := context.WithCancel(context.Background())
	cancel()

	cancelled := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled ctx = %v; want context.Canceled", what, err)
		}
	}
	t.Run("Writes", func(t *testing.T) {
		gone := NewEvent("shop", "never", T0)
		dup, err := s.Accept(done, gone, T0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("erp")})
		cancelled(t, "Accept", err)
		if dup {
			t.Error("Accept with a cancelled ctx reported a duplicate")
		}
		cancelled(t, "SetMeta", s.SetMeta(done, "cancelled", []byte("x")))
		cancelled(t, "CreateUser", s.CreateUser(done, app.User{Name: "never", Role: app.RoleViewer, Hash: []byte("h"), Created: T0}))
		cancelled(t, "CreateToken", s.CreateToken(done, app.Token{Name: "never", Role: app.RoleViewer, Created: T0}))
		cancelled(t, "AppendAudit", s.AppendAudit(done, app.AuditEntry{At: T0, Actor: "never"}))
		_, err = s.EnsureFirstUser(done, "admin", T0, func() ([]byte, error) { t.Error("first called with a cancelled ctx"); return nil, nil })
		cancelled(t, "EnsureFirstUser", err)
		if a, err := s.LoadAccess(ctx); err != nil || len(a.Users)+len(a.Tokens) != 0 {
			t.Errorf("after cancelled writes: %+v, %v; want no user or token", a, err)
		}
		if es, err := s.Audit(ctx, app.AuditQuery{}); err != nil || len(es) != 0 {
			t.Errorf("after a cancelled AppendAudit: %d entries, %v", len(es), err)
		}
		errs := s.RecordAttempts(done, []app.AttemptRecord{{ID: id, Attempt: &app.Attempt{Start: T0, Status: 200},
			State: app.Delivered}})
		cancelled(t, "RecordAttempts", errs[0])
		cancelled(t, "Replay", s.Replay(done, id, T0))
		_, err = s.ReplayDead(done, T0)
		cancelled(t, "ReplayDead", err)
		_, err = s.ForgetExpiredIDs(done, T0.Add(48*time.Hour), 100)
		cancelled(t, "ForgetExpiredIDs", err)
		_, err = s.DeleteEventsBefore(done, T0.Add(48*time.Hour), 100)
		cancelled(t, "DeleteEventsBefore", err)
		_, err = s.PruneWindows(done, T0.Add(48*time.Hour), 100)
		cancelled(t, "PruneWindows", err)
		_, err = s.PruneCounts(done, T0.Add(48*time.Hour))
		cancelled(t, "PruneCounts", err)
		_, _, err = s.FirePending(done, T0.Add(48*time.Hour))
		cancelled(t, "FirePending", err)
		sessionCancelled(t, s, done)

		// Nothing was written: the event is neither stored nor remembered,
		// the meta value is absent, the delivery is still pending and the
		// kept event and its id are still there.
		if _, _, ok, err := s.LookupID(ctx, "shop", "never"); ok || err != nil {
			t.Errorf("LookupID(never) = %v, %v; want not remembered", ok, err)
		}
		if ids, events := counts(t, s); ids != 1 || events != 1 {
			t.Errorf("Counts = %d ids, %d events; want 1, 1", ids, events)
		}
		if v, err := s.Meta(ctx, "cancelled"); v != nil || err != nil {
			t.Errorf("Meta(cancelled) = %q, %v; want nil", v, err)
		}
		if d := deliveries(t, s, e.Seq, 1)[0]; d.State != app.Pending || d.Attempts != 0 {
			t.Errorf("delivery after cancelled writes = %+v; want pending, no attempt", d)
		}
	})
	t.Run("Reads", func(t *testing.T) {
		_, err := s.LoadAccess(done)
		cancelled(t, "LoadAccess", err)
		_, err = s.Audit(done, app.AuditQuery{})
		cancelled(t, "Audit", err)
		ev, err := s.Event(done, e.Seq)
		cancelled(t, "Event", err)
		if ev != nil {
			t.Errorf("Event with a cancelled ctx = %+v; want nil", ev)
		}
		_, _, err = s.ListEvents(done, app.EventQuery{Limit: 10})
		cancelled(t, "ListEvents", err)
		_, err = s.EventsAfter(done, 0, 10, 1<<20)
		cancelled(t, "EventsAfter", err)
		_, _, err = s.DueDeliveries(done, "erp", T0.Add(time.Hour), 10, nil)
		cancelled(t, "DueDeliveries", err)
		_, err = s.WaitingDeliveries(done, "erp", time.Time{}, 0, 10, nil)
		cancelled(t, "WaitingDeliveries", err)
		_, _, err = s.Delivery(done, id)
		cancelled(t, "Delivery", err)
		_, err = s.EventDeliveries(done, e.Seq)
		cancelled(t, "EventDeliveries", err)
		_, _, err = s.DeadLetters(done, 0, 10)
		cancelled(t, "DeadLetters", err)
		_, err = s.CountDead(done)
		cancelled(t, "CountDead", err)
		_, err = s.CountPending(done)
		cancelled(t, "CountPending", err)
		_, err = s.CountRetrying(done, 10)
		cancelled(t, "CountRetrying", err)
		_, err = s.Backlog(done, "erp", 10)
		cancelled(t, "Backlog", err)
		_, err = s.MergedInto(done, e.Seq)
		cancelled(t, "MergedInto", err)
		_, _, err = s.Poisoned(done, 10)
		cancelled(t, "Poisoned", err)
		_, err = s.Meta(done, app.PasswordHashKey)
		cancelled(t, "Meta", err)
		_, _, _, err = s.LookupID(done, "shop", "kept")
		cancelled(t, "LookupID", err)
		_, _, err = s.Counts(done)
		cancelled(t, "Counts", err)
		_, err = s.PendingCount(done)
		cancelled(t, "PendingCount", err)
		_, err = s.HourlyCounts(done, T0, T0)
		cancelled(t, "HourlyCounts", err)
		_, err = s.NamedCounts(done, T0, T0)
		cancelled(t, "NamedCounts", err)
		_, err = s.Lasts(done)
		cancelled(t, "Lasts", err)
		cancelled(t, "Ping", s.Ping(done))
	})
}

// ds returns the id of event seq's one delivery.
func ds(t *testing.T, s storage.Store, seq uint64) uint64 {
	t.Helper()
	return deliveries(t, s, seq, 1)[0].ID
}
