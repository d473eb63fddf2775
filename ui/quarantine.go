package ui

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
)

// The Quarantine page (issue 45, operators): per source, the requests it
// refused for a bad or stale signature and keeps until a fixed secret
// takes them in, with their headers (signatures masked, as on an event's
// page) and the start of their bodies. What GET
// /api/v1/sources/{name}/quarantine lists; its buttons (below), hookbox
// quarantine recheck and clear act on it.

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
		"Sources": sources, "Unread": unread, "Limits": lim, "Notice": u.quarantineNotice(c)})
}

// The page's buttons, for those who may (issue 45): Recheck now and
// Clear, per source, which do what POST
// /api/v1/sources/{name}/quarantine/recheck and DELETE
// /api/v1/sources/{name}/quarantine do, audited the same way; Clear asks
// first. Both come back to the page, which says what came of it.

// pageSource is the configured source the route names, nil when none.
func (u *UI) pageSource(c *fiber.Ctx) *app.Source {
	name, err := url.PathUnescape(c.Params("name")) // the page escapes names as any path
	if err != nil {
		return nil
	}
	src := u.cfg().SourceByName(name)
	if src != nil {
		c.Locals(AuditTarget, QuarantineTarget(src.Name))
	}
	return src
}

// recheckQuarantine checks source :name's kept requests again with the
// secrets in force and takes in those that pass.
func (u *UI) recheckQuarantine(c *fiber.Ctx) error {
	src := u.pageSource(c)
	if src == nil || u.d.Quarantine == nil || u.d.Recheck == nil {
		return fiber.ErrNotFound
	}
	res, err := u.d.Recheck(c.UserContext(), src.Name)
	if err != nil {
		return err
	}
	c.Locals(AuditDetail, RecheckDetail(res))
	return c.Redirect("/quarantine?"+url.Values{"source": {src.Name}, "recovered": {strconv.Itoa(res.Recovered)},
		"duplicate": {strconv.Itoa(res.Duplicate)}, "remaining": {strconv.Itoa(res.Remaining)}}.Encode(), fiber.StatusSeeOther)
}

// clearQuarantine asks for confirmation first (a form that works without
// JavaScript), then deletes every request source :name keeps.
func (u *UI) clearQuarantine(c *fiber.Ctx) error {
	src := u.pageSource(c)
	if src == nil || u.d.Quarantine == nil {
		return fiber.ErrNotFound
	}
	ctx := c.UserContext()
	if request.PostValue(c, "confirm") != "yes" {
		skipAudit(c)
		n, _, err := u.d.Quarantine.QuarantineUsage(ctx, src.Name)
		if err != nil {
			return err
		}
		return u.render(c, 200, "confirm", "Clear the quarantine?", map[string]any{
			"Action":   "/sources/" + url.PathEscape(src.Name) + "/quarantine/clear",
			"Question": fmt.Sprintf("Delete the %s %s keeps? No recheck can take them in afterwards.", plural(n, "request", "requests"), src.Name),
			"Yes":      "Yes, delete them", "Cancel": "/quarantine"})
	}
	n, err := u.d.Quarantine.DeleteQuarantined(ctx, src.Name, nil)
	if err != nil {
		return err
	}
	c.Locals(AuditDetail, ClearDetail(n))
	return c.Redirect("/quarantine?"+url.Values{"source": {src.Name}, "cleared": {strconv.Itoa(n)}}.Encode(), fiber.StatusSeeOther)
}

// quarantineNotice is the page's line after a button, from its query
// (only a configured name and numbers are shown).
func (u *UI) quarantineNotice(c *fiber.Ctx) string {
	src := u.cfg().SourceByName(c.Query("source"))
	if src == nil {
		return ""
	}
	count := func(k string) (int, bool) {
		n, err := strconv.Atoi(c.Query(k))
		return n, err == nil && n >= 0
	}
	if n, ok := count("cleared"); ok {
		return fmt.Sprintf("%s: %s deleted.", src.Name, plural(n, "request", "requests"))
	}
	in, ok1 := count("recovered")
	left, ok2 := count("remaining")
	if !ok1 || !ok2 {
		return ""
	}
	s := fmt.Sprintf("%s rechecked: %d taken in", src.Name, in)
	if dup, ok := count("duplicate"); ok && dup > 0 {
		s += fmt.Sprintf(" (%d of them held already)", dup)
	}
	return s + fmt.Sprintf(", %d still refused.", left)
}

// QuarantineTarget is the audit target of a source's quarantine.
func QuarantineTarget(source string) string { return "source " + source }

// RecheckDetail is the audit detail of a recheck of a quarantine.
func RecheckDetail(res app.QuarantineRecheck) string {
	return fmt.Sprintf("checked %d, recovered %d (%d held already), remaining %d", res.Checked, res.Recovered, res.Duplicate, res.Remaining)
}

// ClearDetail is the audit detail of a clear of a quarantine.
func ClearDetail(n int) string { return fmt.Sprintf("cleared %d", n) }
