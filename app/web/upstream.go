package web

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/ui"
)

// The admin API of the providers' side (issue 45): a source's last
// upstream check, and a check now (of one source, or of every source
// with a [source.upstream] table), which hookbox upstream check calls.
func (s *Server) routeUpstream(r fiber.Router) {
	s.route(r, "/api/v1", fiber.MethodGet, "/sources/:name/upstream", s.handleUpstream)
	s.route(r, "/api/v1", fiber.MethodPost, "/sources/:name/upstream/check", s.handleUpstreamCheck)
	s.route(r, "/api/v1", fiber.MethodPost, "/upstream/check", s.handleUpstreamCheck)
}

// upstreamJSON is GET /api/v1/sources/{name}/upstream.
type upstreamJSON struct {
	Source   string `json:"source"`
	Provider string `json:"provider"`
	Endpoint string `json:"endpoint"`
	Check    string `json:"check"`
	Backfill string `json:"backfill"`
	Repair   bool   `json:"repair"`
	// LastCheck is the last check's result, null when none ran.
	LastCheck *app.UpstreamCheck `json:"last_check"`
}

func (s *Server) handleUpstream(c *fiber.Ctx) error {
	name := strings.Clone(c.Params("name"))
	src := s.config().SourceByName(name)
	switch {
	case s.deps.Upstream == nil || src == nil:
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no source %q", name))
	case src.Upstream == nil:
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "source %q has no [source.upstream] table", name))
	}
	last, err := s.deps.Upstream.LastCheck(c.UserContext(), name)
	if err != nil {
		return s.sendError(c, err)
	}
	u := src.Upstream
	return c.JSON(upstreamJSON{Source: name, Provider: src.Provider, Endpoint: u.Endpoint, Check: u.Check,
		Backfill: app.ShortDuration(u.Backfill), Repair: u.Repair, LastCheck: last})
}

// handleUpstreamCheck runs the checks now and answers what each found
// and did; a check that failed is in the answer (200), with its error.
// It goes on when the caller leaves, as a scheduled check would.
func (s *Server) handleUpstreamCheck(c *fiber.Ctx) error {
	if s.deps.Upstream == nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no upstream checks"))
	}
	name := strings.Clone(c.Params("name"))
	if name != "" {
		c.Locals(ui.AuditTarget, name)
	}
	res, err := s.deps.Upstream.CheckNow(context.WithoutCancel(c.UserContext()), name, s.who(c))
	if err != nil {
		return s.sendError(c, err)
	}
	return c.JSON(fiber.Map{"checks": res})
}
