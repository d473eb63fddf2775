package ui

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

type deliveryRow struct {
	*app.Delivery
	History []*app.Attempt
	// Hidden counts the earlier attempts the page leaves out.
	Hidden int
	// Sent is the body its route's transform makes (nil: it goes out
	// with the event's body).
	Sent *sentBody
	// AfterDead is the delivery before this one in its order group when
	// that one is dead (0: none, or not dead).
	AfterDead uint64
	// Waiting says it waits for a retry (pending, due later): the page
	// offers Retry now; Retried that the page comes back from one.
	Waiting, Retried bool
	// Unconfigured says the config in force has no such destination: the
	// delivery is kept, and goes out once a reload names it again.
	Unconfigured bool
}

// sentBody is what a route's transform, as configured now, makes of an
// event: the body its deliveries go out with (or why none can be made).
// An attempt made before the config changed may have sent another.
type sentBody struct {
	Route       string
	ContentType string
	Body        bodyView
	Error       string
}

// sentBodies makes, once per route, the bodies the routes of ds with a
// transform make of e, for the event page; one RuleInput serves them all,
// so the engine parses e's body once. Values of e's secret-looking
// headers a transform copied are masked, as in the header table.
func (u *UI) sentBodies(e *app.Event, ds []*app.Delivery) map[string]*sentBody {
	var in *app.RuleInput
	var out map[string]*sentBody
	for _, d := range ds {
		t := u.cfg().RouteTransform(d.Route)
		if t == nil || out[d.Route] != nil {
			continue
		}
		if in == nil {
			in, out = e.RuleInput(), map[string]*sentBody{}
		}
		sb := &sentBody{Route: d.Route}
		if tr, err := app.ApplyTransform(t, in, u.cfg().Server.MaxBodyBytes); err != nil {
			sb.Error = err.Error()
		} else {
			sb.ContentType = tr.ContentType
			sb.Body = viewBody([]byte(app.MaskSecretValues(string(tr.Body), e.Header)))
		}
		out[d.Route] = sb
	}
	return out
}

func (u *UI) event(c *fiber.Ctx) error {
	ctx := c.UserContext()
	seq, err := strconv.ParseUint(c.Params("seq"), 10, 64)
	if err != nil {
		return fiber.ErrNotFound
	}
	e, err := u.d.Store.Event(ctx, seq)
	if err != nil {
		return err
	}
	if e == nil {
		return fiber.ErrNotFound
	}
	ds, err := u.d.Store.EventDeliveries(ctx, seq)
	if err != nil {
		return err
	}
	sent := u.sentBodies(e, ds)
	cfg := u.cfg()
	var rows []deliveryRow
	for _, d := range ds {
		_, hist, err := u.d.Store.Delivery(ctx, d.ID)
		if err != nil {
			return err
		}
		row := deliveryRow{Delivery: d, History: hist, Sent: sent[d.Route],
			Waiting: d.State == app.Pending && d.Due.After(u.d.Now()), Retried: d.ID == retriedID(c),
			Unconfigured: cfg.DestinationByName(d.Destination) == nil}
		if d.OrderKey != "" { // one more read, for ordered deliveries only
			prev, err := u.d.Store.PreviousInGroup(ctx, d)
			if err != nil {
				return err
			}
			if prev != nil && prev.State == app.Dead {
				row.AfterDead = prev.ID
			}
		}
		if len(hist) > maxAttemptsShown { // the latest ones; replays add attempts without end
			row.History, row.Hidden = hist[len(hist)-maxAttemptsShown:], len(hist)-maxAttemptsShown
		}
		rows = append(rows, row)
	}
	merged, err := u.d.Store.MergedInto(ctx, seq)
	if err != nil {
		return err
	}
	var carrier map[string]any
	if len(ds) == 0 {
		by, err := u.d.Store.CarriedBy(ctx, seq)
		if err != nil {
			return err
		}
		if by != 0 {
			names, err := u.d.Store.EventNames(ctx, []uint64{by})
			if err != nil {
				return err
			}
			n, ok := names[by]
			carrier = map[string]any{"Seq": by, "Name": n.ID, "Gone": !ok, "Topic": n.Topic}
		}
	}
	mergedTotal := len(merged)
	if len(merged) > maxMergedShown { // a long debounce window can fold in thousands
		merged = merged[:maxMergedShown]
	}
	return u.render(c, 200, "event", "Event "+e.ID, map[string]any{"E": e, "Headers": app.MaskHeaders(e.Header, u.cfg().SourceByName(e.Source)),
		"Body": viewBody(e.Body), "Download": "/api/v1/events/" + strconv.FormatUint(seq, 10) + "/body",
		"Deliveries": rows, "Transformed": len(sent) > 0, "Merged": merged, "CarriedBy": carrier, "MergedTotal": mergedTotal, "MergedMore": mergedTotal - len(merged)})
}

// Bounds of the event page's lists, beside those of the body (indent.go).
const (
	maxAttemptsShown = 50
	maxMergedShown   = 200
)
