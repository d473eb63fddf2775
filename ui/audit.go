package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// Keys of c.Locals through which a handler tells the server's audit of
// its route what to record: AuditDetail, a string (counts, a reason), and
// AuditTarget, a string, say more; AuditSkip, true, says nothing changed
// (a confirmation page, a dry run) and nothing is recorded.
const (
	AuditDetail = "audit.detail"
	AuditTarget = "audit.target"
	AuditSkip   = "audit.skip"
)

// ReplayTarget describes a replay's query for the audit log.
func ReplayTarget(q app.ReplayQuery) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("source", q.Source)
	add("topic", q.Topic)
	add("destination", q.Destination)
	add("status", q.Status)
	add("q", q.Q)
	if !q.Since.IsZero() {
		add("since", q.Since.UTC().Format(time.RFC3339))
	}
	if !q.Until.IsZero() {
		add("until", q.Until.UTC().Format(time.RFC3339))
	}
	if q.Delivery != 0 {
		add("delivery", fmt.Sprint(q.Delivery))
	}
	return strings.Join(parts, " ")
}

// ReplayDetail is the audit detail of a replay by query.
func ReplayDetail(res app.ReplayResult) string {
	d := fmt.Sprintf("matched %d, replayed %d", res.Matched, res.Replayed)
	if res.Refused > 0 {
		d += fmt.Sprintf(", skipped %d delivered", res.Refused)
	}
	return d
}

// skipAudit marks a request that changed nothing.
func skipAudit(c *fiber.Ctx) { c.Locals(AuditSkip, true) }
