package ui

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/replay"
	"hookbox/app/request"
)

// Replay by query from the events page (issue 28): the page's filters
// offer "Replay these N deliveries", a confirm page shows the count and
// the first ten by their events, and its button replays them.

// replayFilters are the events page's filters a replay by query takes.
var replayFilters = []string{"source", "topic", "status", "since", "until", zoneField, "q"}

// replayStatus maps the events page's status filter to the deliveries a
// replay takes: an event listed as dead has a dead delivery, one listed
// as delivered has only delivered ones; the other statuses have nothing
// finished to replay (ok false).
func replayStatus(eventStatus string) (string, bool) {
	switch eventStatus {
	case "":
		return app.ReplayAny, true
	case "dead":
		return app.ReplayDead, true
	case "delivered":
		return app.ReplayDelivered, true
	}
	return "", false
}

// replayOffer is the events page's offer to replay what its filters
// select, nil when they select nothing replayable or too broadly.
type replayOffer struct {
	N      int // -1: not counted (see offerUncounted)
	More   bool
	Fields map[string]string // the filters, as hidden form fields
}

// offerReplay dry-runs the replay the events page's filters q (and the
// raw since and until) describe, for the page's button; nil when the
// filters name no source, status or time (a replay of everything is not
// offered) or nothing matches.
func (u *UI) offerReplay(ctx context.Context, c *fiber.Ctx, q app.EventQuery) (*replayOffer, error) {
	rq, fields, ok := u.replayQueryOf(q, func(k string) string { return c.Query(k) })
	if !ok {
		return nil, nil
	}
	rq.DryRun = true
	// Forced: the offer counts every match, as its confirm page does. The
	// page's own search holds the place in the gate, if it needs one.
	res, err := u.replays().Replay(ctx, replay.Request{Query: rq, Force: true, Gated: true, WithoutPending: true})
	if err != nil || res.Matched == 0 {
		return nil, err
	}
	return &replayOffer{N: res.Matched, More: res.More, Fields: fields}, nil
}

// offerUncounted is the offer of offerReplay without its count (N -1),
// for a body search too large to count on each view of the page.
func (u *UI) offerUncounted(c *fiber.Ctx, q app.EventQuery) *replayOffer {
	_, fields, ok := u.replayQueryOf(q, func(k string) string { return c.Query(k) })
	if !ok {
		return nil
	}
	return &replayOffer{N: -1, Fields: fields}
}

// replayQueryOf builds the replay by query that the events filters q
// describe; get reads the raw filter values (to carry them on). ok is
// false when they select nothing replayable or name no source, status
// or time.
func (u *UI) replayQueryOf(q app.EventQuery, get func(string) string) (app.ReplayQuery, map[string]string, bool) {
	status, ok := replayStatus(q.Status)
	if !ok || q.ID != "" {
		return app.ReplayQuery{}, nil, false
	}
	rq := app.ReplayQuery{Source: q.Source, Topic: q.Topic, Since: q.Since, Until: q.Until, Status: q.Status, Q: q.Q}
	if !rq.Filtered() {
		return app.ReplayQuery{}, nil, false
	}
	rq.Status = status
	fields := map[string]string{}
	for _, k := range replayFilters {
		if v := get(k); v != "" {
			fields[k] = v
		}
	}
	return rq, fields, true
}

// replayQuery is POST /replay: without confirm=yes it shows what the
// filters in the form select (the split by what the replay does with
// each, as the CLI and the API say it, and the first ten by their
// events) and asks; with it, it replays them and goes back to the
// events. Delivered ones go only from the button that says so
// (delivered=yes: forced); the other sends the dead ones and skips the
// delivered ones, as the split said.
func (u *UI) replayQuery(c *fiber.Ctx) error {
	get := func(k string) string { return request.PostValue(c, k) }
	q := app.EventQuery{Source: get("source"), Topic: get("topic"), Status: get("status"), Q: strings.TrimSpace(get("q"))}
	if msg := checkSearch(q.Q); q.Q != "" && msg != "" {
		return fiber.NewError(fiber.StatusBadRequest, msg)
	}
	loc, err := formZone(get(zoneField))
	if err != nil {
		return fiber.NewError(fiber.StatusBadRequest, err.Error())
	}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v := get(f.name); v != "" {
			t, err := parseWhen(v, loc)
			if err != nil {
				return fiber.NewError(fiber.StatusBadRequest, fmt.Sprintf("%s: %q is not a time", f.name, v))
			}
			*f.to = t
		}
	}
	rq, fields, ok := u.replayQueryOf(q, get)
	back := url.Values{}
	for k, v := range fields {
		back.Set(k, v)
	}
	if !ok {
		return c.Redirect("/events?"+back.Encode(), fiber.StatusSeeOther)
	}
	c.Locals(AuditTarget, ReplayTarget(rq))
	// As the API's: a body search takes a place in the gate, the count
	// stops when the browser leaves, the replay goes on (issue 42; the
	// service detaches it).
	ctx, stop := request.Watch(c)
	defer stop()
	id, _ := c.Locals("identity").(app.Identity)
	r := replay.Request{Query: rq, Caller: id.Actor(), Force: get("delivered") == "yes"}
	if get("confirm") != "yes" {
		// The confirm page says the split of the run without force; its
		// second button forces.
		skipAudit(c)
		r.Query.DryRun, r.Force = true, false
		res, err := u.replays().Replay(ctx, r)
		if err != nil {
			return u.replayError(c, err)
		}
		return u.render(c, 200, "replay", "Replay these deliveries?", map[string]any{"R": res, "Split": res.Counts.Say(false, pageForce),
			"Fields": fields, "Back": "/events?" + back.Encode(), "Max": app.MaxReplay})
	}
	res, err := u.replays().Replay(ctx, r)
	if err != nil {
		return u.replayError(c, err)
	}
	c.Locals(AuditDetail, ReplayDetail(res))
	back.Set("replayed", strconv.Itoa(res.Replayed))
	return c.Redirect("/events?"+back.Encode(), fiber.StatusSeeOther)
}

// pageForce is what sends delivered ones too, in the replay page's split:
// its second button.
const pageForce = "“Send all”"

// replays is the replay service over the pages' store, search gate,
// clock and dispatcher.
func (u *UI) replays() *replay.Service {
	return &replay.Service{Store: u.d.Store, Searches: u.d.Searches, Now: u.d.Now, Wake: u.d.Wake}
}

// replayError answers a replay by query the gate refused (429, with when
// to try again); other errors go to the pages' error handler.
func (u *UI) replayError(c *fiber.Ctx, err error) error {
	if app.ErrorCode(err) == app.EBUSY {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(app.SearchRetryAfter))
		return fiber.NewError(fiber.StatusTooManyRequests, app.ErrorMessage(err))
	}
	return err
}

// deadRow is a dead letter with the name of its event.
type deadRow struct {
	*app.Delivery
	Event app.EventName
	// Unconfigured says the config in force has no such destination: a
	// replay waits until a config names it again.
	Unconfigured bool
}
