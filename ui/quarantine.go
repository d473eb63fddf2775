package ui

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// The Quarantine page (issue 45, operators): per source, the requests it
// refused for a bad or stale signature and keeps until a fixed secret
// takes them in, with their headers (signatures masked, as on an event's
// page) and the start of their bodies. What GET
// /api/v1/sources/{name}/quarantine lists; hookbox quarantine recheck and
// clear act on it.

// Bounds of the page: requests shown per source, body shown of each.
const (
	quarantineShown     = 50
	quarantineShownBody = 4 << 10
)

// quarantineSource is a source's section of the page.
type quarantineSource struct {
	Name     string
	Requests int
	Bytes    int64
	Entries  []quarantineEntry
	// More counts the requests kept beyond those shown.
	More int
}

// quarantineEntry is one kept request as the page shows it.
type quarantineEntry struct {
	app.Quarantined
	Headers   []app.MaskedHeader
	Body      string
	BodyBytes int
	Cut       bool
}

// quarantine serves the Quarantine page.
func (u *UI) quarantine(c *fiber.Ctx) error {
	if u.d.Quarantine == nil {
		return fiber.ErrNotFound
	}
	ctx := c.UserContext()
	var unread []string
	var sources []quarantineSource
	for _, src := range u.cfg().Sources {
		qs := quarantineSource{Name: src.Name}
		var err error
		if qs.Requests, qs.Bytes, err = u.d.Quarantine.QuarantineUsage(ctx, src.Name); err != nil {
			u.d.Logger.Warn("read for the quarantine page", "source", src.Name, "error", err)
			unread = append(unread, src.Name)
			continue
		}
		if qs.Requests > 0 {
			page, err := u.d.Quarantine.Quarantined(ctx, src.Name, 0, quarantineShown)
			if err != nil {
				u.d.Logger.Warn("read for the quarantine page", "source", src.Name, "error", err)
				unread = append(unread, src.Name)
			}
			for _, q := range page {
				e := quarantineEntry{Quarantined: q, Headers: app.MaskHeaders(q.Header, src), BodyBytes: len(q.Body)}
				b := q.Body
				if e.Cut = len(b) > quarantineShownBody; e.Cut {
					b = b[:quarantineShownBody]
				}
				e.Body = strings.ToValidUTF8(string(b), "\uFFFD")
				qs.Entries = append(qs.Entries, e)
			}
			qs.More = max(0, qs.Requests-len(qs.Entries))
		}
		sources = append(sources, qs)
	}
	lim := u.cfg().Quarantine
	return u.render(c, 200, "quarantine", "Quarantine", map[string]any{
		"Sources": sources, "Unread": unread, "Limits": lim})
}
