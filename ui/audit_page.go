package ui

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// auditPageSize is how many entries the audit page shows at a time.
const auditPageSize = 50

// audit is the admin's audit page: filters by actor, action, result and
// since; newest first; a link to the next page.
func (u *UI) audit(c *fiber.Ctx) error {
	q := app.AuditQuery{Actor: strings.TrimSpace(c.Query("actor")), Action: strings.TrimSpace(c.Query("action")),
		Result: c.Query("result"), Limit: auditPageSize}
	q.Before, _ = strconv.ParseUint(c.Query("before"), 10, 64)
	data := map[string]any{"Actor": q.Actor, "Action": q.Action, "Result": q.Result, "Since": c.Query("since"),
		"Results":  []string{app.AuditOK, app.AuditFailed, app.AuditDenied},
		"Filtered": q.Actor != "" || q.Action != "" || q.Result != "" || c.Query("since") != ""}
	loc, err := formZone(c.Query(zoneField))
	if err != nil {
		data["Bad"], loc = err.Error(), time.UTC
	}
	data["Zone"], data["ZoneLabel"] = c.Query(zoneField), zoneLabel(loc)
	if v := c.Query("since"); v != "" {
		t, err := parseWhen(v, loc)
		if err != nil {
			data["Bad"] = "since: " + strconv.Quote(v) + " is not a time (use 2006-01-02 or 2006-01-02 15:04)"
		}
		q.Since = t
	}
	var entries []app.AuditEntry
	if u.d.Access != nil {
		if entries, err = u.d.Access.Audit(c.UserContext(), q); err != nil {
			return err
		}
	}
	data["Entries"] = entries
	if len(entries) == auditPageSize {
		next := url.Values{"before": {strconv.FormatUint(entries[len(entries)-1].Seq, 10)}}
		for _, k := range []string{"actor", "action", "result", "since", zoneField} {
			if v := c.Query(k); v != "" {
				next.Set(k, v)
			}
		}
		data["Next"] = "/audit?" + next.Encode()
	}
	return u.render(c, fiber.StatusOK, "audit", "Audit log", data)
}
