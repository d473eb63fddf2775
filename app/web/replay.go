package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
	"hookbox/ui"
)

// The replay routes of the admin API: one delivery, every dead one, and
// replay by query (issue 28). Re-sending a delivered delivery needs
// "force": true; a dead one does not.

// replayOneJSON is the body POST /deliveries/{id}/replay and
// /dead-letters/{id}/replay take (optional).
type replayOneJSON struct {
	Force bool `json:"force"`
}

// replayQueryJSON is the body of POST /api/v1/replay (docs/API.md).
type replayQueryJSON struct {
	Source      string `json:"source"`
	Topic       string `json:"topic"`
	Destination string `json:"destination"`
	Status      string `json:"status"`
	Since       string `json:"since"`
	Until       string `json:"until"`
	Q           string `json:"q"`
	DryRun      bool   `json:"dry_run"`
	Force       bool   `json:"force"`
	// Limit is how many to replay at most (0: app.MaxReplay, the most).
	Limit int `json:"limit"`
}

// replayAnswerJSON is the answer of POST /api/v1/replay.
type replayAnswerJSON struct {
	Matched int `json:"matched"`
	// Delivered is how many of the matched had been delivered.
	Delivered int  `json:"delivered"`
	Replayed  int  `json:"replayed"`
	More      bool `json:"more"`
	// Limit is the most one replay selects: past it More says more
	// deliveries match, and a dry run and its run select the same first
	// Limit in accept order.
	Limit  int              `json:"limit"`
	DryRun bool             `json:"dry_run"`
	First  []replayItemJSON `json:"first"`
}

// replayItemJSON is one matched delivery, named as merchants know it.
type replayItemJSON struct {
	Delivery    uint64 `json:"delivery"`
	Destination string `json:"destination"`
	State       string `json:"state"`
	EventSeq    uint64 `json:"event_seq"`
	Source      string `json:"source"`
	EventID     string `json:"event_id"`
	Topic       string `json:"topic"`
	Name        string `json:"name"`
}

// decodeBody reads the request's JSON body (as received, never inflated)
// into v, refusing fields v does not have; an empty body leaves v as is.
func decodeBody(c *fiber.Ctx, v any) error {
	raw := bytes.TrimSpace(c.Request().Body())
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return app.Errorf(app.EINVALID, "the body is not the JSON this route takes (%s); see docs/API.md", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

func (s *Server) handleReplayDead(c *fiber.Ctx) error {
	ctx := c.UserContext()
	n, err := s.deps.Store.ReplayDead(ctx, s.deps.Now())
	if err != nil {
		return s.storeError(c, err)
	}
	c.Locals(ui.AuditDetail, fmt.Sprintf("replayed %d", n))
	s.deps.Wake()
	return c.JSON(fiber.Map{"replayed": n})
}

// handleReplay replays one delivery: a dead one at once, a delivered one
// only with {"force": true}, since the receiver took it already.
func (s *Server) handleReplay(c *fiber.Ctx) error {
	ctx := c.UserContext()
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no such delivery"))
	}
	var body replayOneJSON
	if err := decodeBody(c, &body); err != nil {
		return s.sendError(c, err)
	}
	d, _, err := s.deps.Store.Delivery(ctx, id)
	if err != nil {
		return s.storeError(c, err)
	}
	names, err := s.deps.Store.EventNames(ctx, []uint64{d.EventSeq})
	if err != nil {
		return s.storeError(c, err)
	}
	name := app.DeliveryName(d.ID, d.Destination, names[d.EventSeq])
	if d.State == app.Delivered && !body.Force {
		return s.sendError(c, app.Errorf(app.ECONFLICT, "delivery %s was delivered at %s; send {\"force\": true} to send it again",
			name, d.Updated.UTC().Format(time.RFC3339)))
	}
	if body.Force || d.State == app.Pending { // a pending one is left as it is
		if err := s.deps.Store.Replay(ctx, id, s.deps.Now()); err != nil {
			return s.storeError(c, err)
		}
	} else {
		// Dead when read: replayed only if still dead in the write, so one
		// replayed and delivered meanwhile is not sent again unasked.
		res, err := s.deps.Store.ReplayQuery(ctx, app.ReplayQuery{Delivery: id, Status: app.ReplayDead}, s.deps.Now())
		if err != nil {
			return s.storeError(c, err)
		}
		if res.Replayed == 0 {
			if now, _, err := s.deps.Store.Delivery(ctx, id); err == nil && now.State == app.Delivered {
				return s.sendError(c, app.Errorf(app.ECONFLICT, "delivery %s was delivered at %s; send {\"force\": true} to send it again",
					name, now.Updated.UTC().Format(time.RFC3339)))
			}
		}
	}
	s.deps.Wake()
	return c.JSON(fiber.Map{"replayed": 1, "id": id, "name": name, "was": d.State.String()})
}

// handleReplayQuery replays the finished deliveries a query selects (at
// most app.MaxReplay), or with dry_run counts and names them. Delivered
// ones in the match need force: without it the answer is 409, and a
// match without delivered ones replays only dead ones, so one that is
// delivered meanwhile is never sent again unasked.
func (s *Server) handleReplayQuery(c *fiber.Ctx) error {
	var body replayQueryJSON
	if err := decodeBody(c, &body); err != nil {
		return s.sendError(c, err)
	}
	q, err := s.replayQuery(body)
	if err != nil {
		return s.sendError(c, err)
	}
	c.Locals(ui.AuditTarget, ui.ReplayTarget(q))
	if q.DryRun {
		c.Locals(ui.AuditSkip, true)
	}
	// A body search takes a place in the gate for the whole request; what
	// only looks (the dry runs) stops when the caller leaves, and the run
	// goes on whoever disconnects (its own bound, app.ReplayRunTime).
	var ctx context.Context
	if q.Q != "" {
		sctx, done, err := request.Search(c, s.deps.Searches)
		if err != nil {
			return s.sendError(c, err)
		}
		defer done()
		ctx = sctx
	} else {
		wctx, stop := request.Watch(c)
		defer stop()
		ctx = wctx
	}
	now := s.deps.Now()
	if !body.Force && !q.DryRun && q.Status != app.ReplayDead {
		dry := q
		dry.DryRun = true
		res, err := s.deps.Store.ReplayQuery(ctx, dry, now)
		if err != nil {
			return s.replayError(c, err)
		}
		if res.Delivered > 0 {
			return s.sendError(c, app.Errorf(app.ECONFLICT, "%d of the %d matched deliveries were delivered already; add \"force\": true to send them again, or \"status\": \"dead\" to replay only the dead ones",
				res.Delivered, res.Matched))
		}
		if q.Status == app.ReplayDelivered { // none matched
			return c.JSON(replayAnswer(res, q.Limit, false))
		}
		q.Status = app.ReplayDead
	}
	if !q.DryRun {
		run, cancel := context.WithTimeout(context.WithoutCancel(ctx), app.ReplayRunTime)
		defer cancel()
		ctx = run
	}
	res, err := s.deps.Store.ReplayQuery(ctx, q, now)
	if err != nil {
		return s.replayError(c, err)
	}
	c.Locals(ui.AuditDetail, ui.ReplayDetail(res))
	if res.Replayed > 0 {
		s.deps.Wake()
	}
	return c.JSON(replayAnswer(res, q.Limit, q.DryRun))
}

// replayError answers a failed replay by query: the query's own mistakes
// as they are, the store's failures as storeError does.
func (s *Server) replayError(c *fiber.Ctx, err error) error {
	if app.ErrorCode(err) == app.EINVALID {
		return s.sendError(c, err)
	}
	return s.storeError(c, err)
}

// replayQuery checks the body of POST /api/v1/replay and turns it into
// the store's query.
func (s *Server) replayQuery(b replayQueryJSON) (app.ReplayQuery, error) {
	q := app.ReplayQuery{Source: b.Source, Topic: b.Topic, Destination: b.Destination, Status: b.Status, Q: b.Q, DryRun: b.DryRun, Limit: b.Limit}
	if b.Limit < 0 || b.Limit > app.MaxReplay {
		return q, app.Errorf(app.EINVALID, "limit %d: give 1 to %d (0 or none: %d)", b.Limit, app.MaxReplay, app.MaxReplay)
	}
	now := s.deps.Now()
	var err error
	if q.Since, err = ParseSince("since", b.Since, now); err != nil {
		return q, err
	}
	if q.Until, err = ParseSince("until", b.Until, now); err != nil {
		return q, err
	}
	if !q.Filtered() {
		return q, app.Errorf(app.EINVALID, "give at least one of since, until, source, destination or status (or q, a body search): a replay of every delivery is refused (use \"status\": \"any\" to mean it)")
	}
	if q.Destination != "" && s.config().DestinationByName(q.Destination) == nil {
		return q, app.Errorf(app.EINVALID, "destination %q is not in the config", q.Destination)
	}
	return q.Check()
}

// ParseSince reads a time given as RFC 3339 or as a duration before now
// ("2h", "90m", "3d"), for the field called name; "" is the zero time.
func ParseSince(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, app.Errorf(app.EINVALID, "%s %q: give an RFC 3339 time (2026-11-29T10:00:00Z) or a duration ago (2h, 30m, 3d)", name, v)
}

// replayAnswer renders a replay by query's result.
func replayAnswer(res app.ReplayResult, limit int, dryRun bool) replayAnswerJSON {
	out := replayAnswerJSON{Matched: res.Matched, Delivered: res.Delivered, Replayed: res.Replayed, More: res.More, Limit: limit, DryRun: dryRun,
		First: make([]replayItemJSON, 0, len(res.First))}
	for _, it := range res.First {
		out.First = append(out.First, replayItemJSON{Delivery: it.Delivery, Destination: it.Destination, State: it.State.String(),
			EventSeq: it.EventSeq, Source: it.Event.Source, EventID: it.Event.ID, Topic: it.Event.Topic, Name: it.Name()})
	}
	return out
}

// nameDeliveries adds each delivery's event name to its JSON (one read
// for the page), so lists show deliveries the way merchants know them.
func (s *Server) nameDeliveries(c *fiber.Ctx, items []deliveryJSON) error {
	seqs := make([]uint64, 0, len(items))
	for _, j := range items {
		seqs = append(seqs, j.EventSeq)
	}
	names, err := s.deps.Store.EventNames(c.UserContext(), seqs)
	if err != nil {
		return fmt.Errorf("name deliveries: %w", err)
	}
	for i := range items {
		n := names[items[i].EventSeq]
		items[i].Source, items[i].EventID, items[i].Topic = n.Source, n.ID, n.Topic
		items[i].Name = app.DeliveryName(items[i].ID, items[i].Destination, n)
	}
	return nil
}
