package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/replay"
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
	Delivered int `json:"delivered"`
	// Selected is how many the run replays (a dry run: would): every one
	// matched with force, else the dead ones.
	Selected int `json:"selected"`
	// Refused counts the delivered ones a run without force skips.
	Refused  int  `json:"refused"`
	Replayed int  `json:"replayed"`
	More     bool `json:"more"`
	// Counts splits matched by what the replay does with each, the same
	// in the dry run and the run; Summary says it in a sentence (the dry
	// run in the future, the run in the past tense).
	Counts  replayCountsJSON `json:"counts"`
	Summary string           `json:"summary"`
	// Limit is the most one replay selects: past it More says more
	// deliveries match, and a dry run and its run select the same first
	// Limit in accept order.
	Limit  int              `json:"limit"`
	DryRun bool             `json:"dry_run"`
	First  []replayItemJSON `json:"first"`
}

// replayCountsJSON is app.ReplayCounts: the deliveries a replay matched
// (or was asked for by id), by what it does with each.
type replayCountsJSON struct {
	DeadSent         int `json:"dead_sent"`
	DeliveredSent    int `json:"delivered_sent"`
	DeliveredSkipped int `json:"delivered_skipped"`
	PendingLeft      int `json:"pending_left"`
	NotFound         int `json:"not_found"`
	Changed          int `json:"changed"`
}

// countsJSON renders c.
func countsJSON(c app.ReplayCounts) replayCountsJSON {
	return replayCountsJSON{DeadSent: c.DeadSent, DeliveredSent: c.DeliveredSent, DeliveredSkipped: c.DeliveredSkipped,
		PendingLeft: c.PendingLeft, NotFound: c.NotFound, Changed: c.Changed}
}

// apiForce is what sends delivered ones too, in the API's sentences.
const apiForce = `"force": true`

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
// only with {"force": true}, since the receiver took it already; the
// rule is the domain's (app.ReplayVerdictOf, through replay.Service.One).
func (s *Server) handleReplay(c *fiber.Ctx) error {
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no such delivery"))
	}
	var body replayOneJSON
	if err := decodeBody(c, &body); err != nil {
		return s.sendError(c, err)
	}
	d, name, err := s.replays.One(c.UserContext(), id, body.Force)
	if err != nil {
		return s.replayError(c, err)
	}
	return c.JSON(fiber.Map{"replayed": 1, "id": id, "name": app.DeliveryName(d.ID, d.Destination, name), "was": d.State.String()})
}

// handleReplayQuery replays the finished deliveries a query selects (at
// most app.MaxReplay), or with dry_run counts and names them: both by the
// one selection (app/replay), so the dry run's numbers are the run's.
// Delivered ones in the match need force: without it the run skips them
// and sends the dead ones, and the dry run's counts say so.
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
	// A dry run stops when the caller leaves; the run goes on whoever
	// disconnects (the service detaches it, app.ReplayRunTime).
	ctx, stop := request.Watch(c)
	defer stop()
	id, _ := c.Locals("identity").(app.Identity)
	res, err := s.replays.Replay(ctx, replay.Request{Query: q, Force: body.Force, Caller: id.Actor()})
	if err != nil {
		return s.replayError(c, err)
	}
	c.Locals(ui.AuditDetail, ui.ReplayDetail(res))
	return c.JSON(replayAnswer(res, q.Limit, q.DryRun))
}

// replayError answers a failed replay: the request's own mistakes, its
// refusals and a full search gate as they are, the store's failures as
// storeError does.
func (s *Server) replayError(c *fiber.Ctx, err error) error {
	switch app.ErrorCode(err) {
	case app.EINVALID, app.ECONFLICT, app.EBUSY:
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
	out := replayAnswerJSON{Matched: res.Matched, Delivered: res.Delivered, Selected: res.Selected, Refused: res.Refused, Replayed: res.Replayed, More: res.More,
		Counts: countsJSON(res.Counts), Summary: res.Counts.Say(!dryRun, apiForce), Limit: limit, DryRun: dryRun,
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
