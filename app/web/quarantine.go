package web

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/receive"
	"hookbox/ui"
)

// The admin API of the sources' quarantines (issue 45): the requests a
// source refused for their signature, listed with their signatures masked
// and their bodies cut short; recheck them with the secrets in force;
// clear them.
func (s *Server) routeQuarantine(r fiber.Router) {
	s.route(r, "/api/v1", fiber.MethodGet, "/sources/:name/quarantine", s.handleQuarantine)
	s.route(r, "/api/v1", fiber.MethodPost, "/sources/:name/quarantine/recheck", s.handleRecheck)
	s.route(r, "/api/v1", fiber.MethodDelete, "/sources/:name/quarantine", s.handleClearQuarantine)
}

// Bounds of the list: entries per page, and the body shown of each.
const (
	quarantinePage    = 100
	maxQuarantineBody = 4 << 10
)

// quarantineJSON is GET /api/v1/sources/{name}/quarantine.
type quarantineJSON struct {
	Source   string `json:"source"`
	Requests int    `json:"requests"`
	Bytes    int64  `json:"bytes"`
	// MaxRequests, MaxBytes and Keep are [quarantine]'s bounds.
	MaxRequests int               `json:"max_requests"`
	MaxBytes    int64             `json:"max_bytes"`
	Keep        string            `json:"keep"`
	Entries     []quarantinedJSON `json:"entries"`
	// Next is the after of the next page, when there is one.
	Next *uint64 `json:"next,omitempty"`
}

// quarantineHeaderJS is a header as the list shows it.
type quarantineHeaderJS struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Masked bool   `json:"masked,omitempty"`
}

// quarantinedJSON is one refused request: its signature headers masked,
// its body as text up to maxQuarantineBody bytes.
type quarantinedJSON struct {
	ID            uint64               `json:"id"`
	At            time.Time            `json:"at"`
	Client        string               `json:"client"`
	Reason        string               `json:"reason"`
	Size          int64                `json:"size"`
	Headers       []quarantineHeaderJS `json:"headers"`
	Body          string               `json:"body"`
	BodyBytes     int                  `json:"body_bytes"`
	BodyTruncated bool                 `json:"body_truncated,omitempty"`
}

// quarantineSource is the configured source the request names, or an
// answer of 404.
func (s *Server) quarantineSource(c *fiber.Ctx) (*app.Source, error) {
	src := s.config().SourceByName(c.Params("name"))
	if src == nil || s.deps.Quarantine == nil {
		return nil, s.sendError(c, app.Errorf(app.ENOTFOUND, "no such source"))
	}
	c.Locals(ui.AuditTarget, ui.QuarantineTarget(src.Name))
	return src, nil
}

func (s *Server) handleQuarantine(c *fiber.Ctx) error {
	src, err := s.quarantineSource(c)
	if src == nil {
		return err
	}
	ctx := c.UserContext()
	after, _ := strconv.ParseUint(c.Query("after"), 10, 64)
	n, size, err := s.deps.Quarantine.QuarantineUsage(ctx, src.Name)
	if err != nil {
		return s.storeError(c, err)
	}
	page, err := s.deps.Quarantine.Quarantined(ctx, src.Name, after, quarantinePage)
	if err != nil {
		return s.storeError(c, err)
	}
	lim := s.config().Quarantine
	out := quarantineJSON{Source: src.Name, Requests: n, Bytes: size, MaxRequests: lim.Requests, MaxBytes: lim.Bytes,
		Keep: lim.Keep.String(), Entries: make([]quarantinedJSON, 0, len(page))}
	for _, q := range page {
		e := quarantinedJSON{ID: q.ID, At: q.At.UTC(), Client: q.Client, Reason: q.Reason, Size: q.Size(), BodyBytes: len(q.Body),
			Headers: make([]quarantineHeaderJS, 0, len(q.Header))}
		for _, h := range app.MaskHeaders(q.Header, src) {
			e.Headers = append(e.Headers, quarantineHeaderJS{Name: h.Name, Value: h.Value, Masked: h.Masked})
		}
		e.Body, e.BodyTruncated = bodyText(q.Body, maxQuarantineBody)
		out.Entries = append(out.Entries, e)
	}
	if len(page) == quarantinePage {
		next := page[len(page)-1].ID
		out.Next = &next
	}
	return c.JSON(out)
}

// bodyText is b as text, cut at max bytes; bytes that are not UTF-8 (a
// rune cut in two too) are shown as U+FFFD.
func bodyText(b []byte, max int) (string, bool) {
	cut := len(b) > max
	if cut {
		b = b[:max]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), cut
}

func (s *Server) handleRecheck(c *fiber.Ctx) error {
	src, err := s.quarantineSource(c)
	if src == nil {
		return err
	}
	res, err := s.deps.Receiver.Recheck(c.UserContext(), src.Name)
	if err != nil {
		if app.ErrorCode(err) == app.EUNAVAILABLE || app.ErrorCode(err) == app.ENOTFOUND {
			return s.sendError(c, err)
		}
		return s.storeError(c, err)
	}
	c.Locals(ui.AuditDetail, ui.RecheckDetail(res))
	return c.JSON(res)
}

// clearedJSON is DELETE /api/v1/sources/{name}/quarantine's answer.
type clearedJSON struct {
	Source  string `json:"source"`
	Cleared int    `json:"cleared"`
}

func (s *Server) handleClearQuarantine(c *fiber.Ctx) error {
	src, err := s.quarantineSource(c)
	if src == nil {
		return err
	}
	n, err := s.deps.Quarantine.DeleteQuarantined(c.UserContext(), src.Name, nil)
	if err != nil {
		return s.storeError(c, err)
	}
	c.Locals(ui.AuditDetail, ui.ClearDetail(n))
	return c.JSON(clearedJSON{Source: src.Name, Cleared: n})
}

// recheckOf is the recheck of r's quarantines for the page's button; nil
// without a receiver.
func recheckOf(r *receive.Receiver) func(context.Context, string) (app.QuarantineRecheck, error) {
	if r == nil {
		return nil
	}
	return r.Recheck
}
