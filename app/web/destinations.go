package web

import (
	"cmp"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/ui"
)

// The admin API of destinations (issue 28): list them with their pause,
// hold and backlog; pause and resume one.
func (s *Server) routeDestinations(r fiber.Router) {
	s.route(r, "/api/v1", fiber.MethodGet, "/destinations", s.handleDestinations)
	s.route(r, "/api/v1", fiber.MethodPost, "/destinations/:name/pause", s.handlePause)
	s.route(r, "/api/v1", fiber.MethodPost, "/destinations/:name/resume", s.handleResume)
}

// maxWaitingCount bounds the count of a destination's waiting deliveries.
const maxWaitingCount = 100000

// destinationJSON is one destination in GET /api/v1/destinations.
type destinationJSON struct {
	Name string `json:"name"`
	// State is its word, as the Destinations page shows it
	// (app.DestinationWord).
	State        string     `json:"state"`
	Paused       bool       `json:"paused"`
	PausedAt     *time.Time `json:"paused_at"`
	PausedReason string     `json:"paused_reason,omitempty"`
	PausedBy     string     `json:"paused_by,omitempty"`
	// Waiting counts its pending deliveries, up to maxWaitingCount.
	Waiting      int        `json:"waiting"`
	FailingSince *time.Time `json:"failing_since"`
	Rate         string     `json:"rate,omitempty"`
	// HeldUntil is the end of the Retry-After that holds it, if in the future.
	HeldUntil *time.Time `json:"held_until"`
	// Kind is "http" (it has a url) or "command"; a command's Program is
	// its path and Arguments how many it has, never what they are (one
	// may be a token). Neither is there for a url, which may carry one.
	Kind      string `json:"kind"`
	Program   string `json:"program,omitempty"`
	Arguments *int   `json:"arguments,omitempty"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func (s *Server) handleDestinations(c *fiber.Ctx) error {
	ctx := c.UserContext()
	status := c.Query("status")
	if err := app.CheckDestinationStatus(status); err != nil {
		return s.sendError(c, err)
	}
	controls := map[string]app.DestinationControl{}
	if s.deps.Pauser != nil {
		var err error
		if controls, err = s.deps.Pauser.Controls(ctx); err != nil {
			return s.storeError(c, err)
		}
	}
	health := map[string]app.DestInfo{}
	if s.deps.Stats != nil {
		tables, err := s.deps.Stats.Tables(ctx)
		if err != nil {
			return s.storeError(c, err)
		}
		for _, d := range tables.Destinations {
			health[d.Name] = d
		}
	}
	now := s.deps.Now()
	out := []destinationJSON{}
	for _, d := range s.config().Destinations {
		n, err := s.deps.Store.Backlog(ctx, d.Name, maxWaitingCount)
		if err != nil {
			return s.storeError(c, err)
		}
		ctl, h := controls[d.Name], health[d.Name]
		j := destinationJSON{Name: d.Name, Paused: ctl.Paused, PausedAt: timeOrNil(ctl.PausedAt), PausedReason: ctl.Reason,
			PausedBy: ctl.PausedBy, Waiting: n, FailingSince: timeOrNil(h.FailingSince), Rate: d.Rate.String(),
			State: app.DestinationWord(ctl.Paused, ctl.HeldUntil.After(now), !h.FailingSince.IsZero() || h.LastAttemptFailed())}
		if ctl.HeldUntil.After(now) {
			j.HeldUntil = timeOrNil(ctl.HeldUntil)
		}
		if status != "" && j.State != status {
			continue
		}
		j.Kind = "http"
		if len(d.Command) > 0 {
			args := len(d.Command) - 1
			j.Kind, j.Program, j.Arguments = "command", d.Command[0], &args
		}
		out = append(out, j)
	}
	return c.JSON(fiber.Map{"destinations": out})
}

// maxPauseBody bounds the JSON body of a pause.
const maxPauseBody = 4 << 10

func (s *Server) handlePause(c *fiber.Ctx) error {
	if s.deps.Pauser == nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "pause not available"))
	}
	var in struct {
		Reason string `json:"reason"`
	}
	body := c.Request().Body() // as received, never inflated
	if len(body) > maxPauseBody {
		return s.sendError(c, app.Errorf(app.EINVALID, "the body of a pause is at most 4 KiB: {\"reason\": \"…\"}"))
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return s.sendError(c, app.Errorf(app.EINVALID, "the body of a pause must be JSON like {\"reason\": \"ERP maintenance\"}, or empty"))
		}
	}
	name := strings.Clone(c.Params("name"))
	by := pausedBy(c)
	if in.Reason != "" {
		c.Locals(ui.AuditDetail, "reason: "+in.Reason)
	}
	if err := s.deps.Pauser.Pause(c.UserContext(), name, by, in.Reason); err != nil {
		return s.controlError(c, err)
	}
	s.Logger.Info("destination paused", "destination", name, "by", by)
	return c.JSON(fiber.Map{"destination": name, "paused": true})
}

func (s *Server) handleResume(c *fiber.Ctx) error {
	if s.deps.Pauser == nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "resume not available"))
	}
	name := strings.Clone(c.Params("name"))
	if err := s.deps.Pauser.Resume(c.UserContext(), name); err != nil {
		return s.controlError(c, err)
	}
	s.Logger.Info("destination resumed", "destination", name, "by", pausedBy(c))
	return c.JSON(fiber.Map{"destination": name, "paused": false})
}

// pausedBy is who pauses: the request's identity as the audit log names
// it (a user's name, "token:NAME"), however it came, by the page, the API
// or hookbox pause.
func pausedBy(c *fiber.Ctx) string {
	id, _ := c.Locals("identity").(app.Identity)
	return cmp.Or(id.Actor(), "admin")
}

func (s *Server) controlError(c *fiber.Ctx, err error) error {
	if errors.Is(err, app.ErrNoDestination) {
		return s.sendError(c, err)
	}
	return s.storeError(c, err)
}
