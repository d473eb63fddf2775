package web

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/ui"
)

// POST /api/v1/deliveries/replay (issue 44): deliveries named one by one,
// by id or as one event's, replayed by the server's rule, which answers
// for each what it did (hookbox replay ID… and -event SOURCE/ID print
// that answer, deciding nothing themselves).

// maxReplayIDs bounds the ids one call names.
const maxReplayIDs = app.ReplayBatch

// replayEachJSON is the body of POST /api/v1/deliveries/replay: ids, or
// source and event_id.
type replayEachJSON struct {
	IDs     []uint64 `json:"ids"`
	Source  string   `json:"source"`
	EventID string   `json:"event_id"`
	Force   bool     `json:"force"`
	DryRun  bool     `json:"dry_run"`
}

// replayEachAnswerJSON is its answer: what the replay did (a dry run:
// would do) with each delivery, in the order asked, and the counts.
type replayEachAnswerJSON struct {
	Matched int                  `json:"matched"`
	Counts  replayCountsJSON     `json:"counts"`
	Summary string               `json:"summary"`
	DryRun  bool                 `json:"dry_run"`
	Items   []replayEachItemJSON `json:"items"`
}

// replayEachItemJSON is one delivery of it. Outcome is sent, skipped
// (delivered, not forced), left (pending, on its way), not_found or
// changed (in another state when written).
type replayEachItemJSON struct {
	ID          uint64 `json:"id"`
	Name        string `json:"name"`
	Outcome     string `json:"outcome"`
	Destination string `json:"destination,omitempty"`
	State       string `json:"state,omitempty"`
	Source      string `json:"source,omitempty"`
	EventID     string `json:"event_id,omitempty"`
	Topic       string `json:"topic,omitempty"`
	// Updated is when it last changed (for a skipped one: when it was
	// delivered); absent when not found.
	Updated *time.Time `json:"updated,omitempty"`
}

func (s *Server) handleReplayEach(c *fiber.Ctx) error {
	var body replayEachJSON
	if err := decodeBody(c, &body); err != nil {
		return s.sendError(c, err)
	}
	byEvent := body.Source != "" || body.EventID != ""
	switch {
	case byEvent == (len(body.IDs) > 0):
		return s.sendError(c, app.Errorf(app.EINVALID, "give ids, or source and event_id (one event's deliveries), not both"))
	case byEvent && (body.Source == "" || body.EventID == ""):
		return s.sendError(c, app.Errorf(app.EINVALID, "give both source and event_id"))
	case len(body.IDs) > maxReplayIDs:
		return s.sendError(c, app.Errorf(app.EINVALID, "%d ids: give at most %d (POST /api/v1/replay replays by query)", len(body.IDs), maxReplayIDs))
	}
	if byEvent {
		c.Locals(ui.AuditTarget, "event "+app.CleanName(body.Source)+"/"+app.CleanName(body.EventID))
	} else {
		c.Locals(ui.AuditTarget, replayIDsTarget(body.IDs))
	}
	if body.DryRun {
		c.Locals(ui.AuditSkip, true)
	}
	var each app.ReplayEach
	var err error
	if byEvent {
		each, err = s.replays.Event(c.UserContext(), body.Source, body.EventID, body.Force, body.DryRun)
	} else {
		each, err = s.replays.Deliveries(c.UserContext(), body.IDs, body.Force, body.DryRun)
	}
	if err != nil {
		if app.ErrorCode(err) == app.ENOTFOUND {
			return s.sendError(c, err)
		}
		return s.replayError(c, err)
	}
	c.Locals(ui.AuditDetail, each.Counts.Say(true, apiForce))
	out := replayEachAnswerJSON{Matched: each.Counts.Matched(), Counts: countsJSON(each.Counts), Summary: each.Counts.Say(!body.DryRun, apiForce),
		DryRun: body.DryRun, Items: make([]replayEachItemJSON, 0, len(each.Items))}
	for _, o := range each.Items {
		j := replayEachItemJSON{ID: o.ID, Name: o.Name(), Outcome: string(o.Outcome)}
		if o.Outcome != app.ReplayNotFound {
			at := o.Updated.UTC()
			j.Destination, j.State, j.Updated = o.Destination, o.State.String(), &at
			j.Source, j.EventID, j.Topic = o.Event.Source, o.Event.ID, o.Event.Topic
		}
		out.Items = append(out.Items, j)
	}
	return c.JSON(out)
}

// replayIDsTarget names the deliveries of a replay by id in the audit log:
// the first few, and how many more.
func replayIDsTarget(ids []uint64) string {
	const shown = 5
	parts := make([]string, 0, shown)
	for _, id := range ids[:min(len(ids), shown)] {
		parts = append(parts, "#"+strconv.FormatUint(id, 10))
	}
	t := "deliveries " + strings.Join(parts, ", ")
	if len(ids) > shown {
		t += fmt.Sprintf(" and %d more", len(ids)-shown)
	}
	return t
}
