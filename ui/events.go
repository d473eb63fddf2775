package ui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
)

func (u *UI) events(c *fiber.Ctx) error {
	ctx := c.UserContext()
	q := app.EventQuery{Source: c.Query("source"), Topic: c.Query("topic"), Status: c.Query("status"),
		ID: strings.TrimSpace(c.Query("id")), Q: strings.TrimSpace(c.Query("q")), Limit: 50}
	q.Before, _ = strconv.ParseUint(c.Query("before"), 10, 64)
	var bad string
	if q.Q != "" {
		bad = checkSearch(q.Q)
	}
	loc, err := formZone(c.Query(zoneField))
	if err != nil {
		bad, loc = err.Error(), time.UTC
	}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v := c.Query(f.name); v != "" {
			t, err := parseWhen(v, loc)
			if err != nil {
				bad = fmt.Sprintf("%s: %q is not a time (use 2006-01-02 or 2006-01-02 15:04)", f.name, v)
				continue
			}
			*f.to = t
		}
	}
	var res app.EventSearch
	status := fiber.StatusOK
	if err := app.CheckEventStatus(q.Status); err != nil {
		bad, status = app.ErrorMessage(err), fiber.StatusBadRequest
	}
	if q.Q != "" && bad == "" {
		// The search and the count of its replay stop when the browser
		// leaves, and take a place in the node's gate (issue 42).
		sctx, done, berr := request.Search(c, u.d.Searches)
		if berr != nil {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(app.SearchRetryAfter))
			bad, status = "search: "+app.ErrorMessage(berr), fiber.StatusTooManyRequests
		} else {
			defer done()
			ctx = sctx
		}
	}
	switch {
	case status == fiber.StatusBadRequest, q.Q != "" && bad != "": // refused: nothing to list
	case q.Q != "":
		res, err = u.d.Store.SearchEvents(ctx, q)
	default:
		res.Rows, res.Next, err = u.d.Store.ListEvents(ctx, q)
	}
	if errors.Is(err, context.Canceled) { // the browser left mid-search: no one reads the page
		return fiber.NewError(fiber.StatusRequestTimeout)
	}
	if err != nil {
		return err
	}
	if res.Stopped && res.SearchedUntil.IsZero() {
		bad = fmt.Sprintf("search: stopped at its budget of %v before it had looked at every event; narrow it by source, since or until", app.DefaultSearchBudget.Time)
	}
	rows, err := u.eventRows(ctx, res.Rows)
	if err != nil {
		return err
	}
	nextURL := ""
	if res.Next > 0 {
		v := url.Values{}
		for _, k := range []string{"source", "topic", "status", "since", "until", zoneField} {
			if c.Query(k) != "" {
				v.Set(k, c.Query(k))
			}
		}
		if q.Q != "" {
			v.Set("q", q.Q)
		}
		v.Set("before", strconv.FormatUint(res.Next, 10))
		nextURL = "/events?" + v.Encode()
	}
	window := newSearchWindow(res, u.d.Now(), nextURL, q.Before > 0)
	var sources []string
	for _, s := range u.cfg().Sources {
		sources = append(sources, s.Name)
	}
	var offer *replayOffer
	switch {
	case bad != "":
	case q.Q != "" && res.Next != 0:
		// A search with more to look at (a bbolt search that stopped at
		// its budget, or more than a page): counting its replay could
		// read every body; the confirm page counts when asked.
		offer = u.offerUncounted(c, q)
	default:
		if offer, err = u.offerReplay(ctx, c, q); err != nil {
			return err
		}
	}
	return u.render(c, status, "events", "Events", map[string]any{"Rows": rows, "Next": nextURL, "Q": q, "Window": window,
		"Since": c.Query("since"), "Until": c.Query("until"), "Zone": c.Query(zoneField), "ZoneLabel": zoneLabel(loc), "Sources": sources, "Error": bad,
		"Replay": offer, "Replayed": c.Query("replayed"),
		"Statuses": app.EventStates})
}

// eventRow is a row of the events list: the event (its status is one of
// app.EventStates, as the store filters by it), the destinations of its
// deliveries, and for a merged one the event that carries it.
type eventRow struct {
	app.EventSummary
	Destinations []string
	// CarriedBy is, for a merged event, the event whose delivery carries
	// it (0: not known), named by CarrierID.
	CarriedBy uint64
	CarrierID string
}

// eventRows reads the deliveries of each listed event (one read each, a
// page at a time) for the destination column, and for a merged one the
// event that carries it.
func (u *UI) eventRows(ctx context.Context, list []app.EventSummary) ([]eventRow, error) {
	out := make([]eventRow, 0, len(list))
	for _, e := range list {
		row := eventRow{EventSummary: e}
		if e.Status == app.StateMerged {
			by, err := u.d.Store.CarriedBy(ctx, e.Seq)
			if err != nil {
				return nil, err
			}
			if by != 0 {
				names, err := u.d.Store.EventNames(ctx, []uint64{by})
				if err != nil {
					return nil, err
				}
				row.CarriedBy, row.CarrierID = by, names[by].ID
			}
		}
		if e.Status != app.StateUnrouted && e.Status != app.StateMerged && e.Status != app.StateWaiting && e.Status != app.StateUnreadable {
			ds, err := u.d.Store.EventDeliveries(ctx, e.Seq)
			if err != nil {
				return nil, err
			}
			for _, d := range ds {
				if !slices.Contains(row.Destinations, d.Destination) {
					row.Destinations = append(row.Destinations, d.Destination)
				}
			}
		}
		out = append(out, row)
	}
	return out, nil
}
