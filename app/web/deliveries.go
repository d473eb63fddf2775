package web

import (
	"context"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// deliveryJSON is a delivery as the API shows it.
type deliveryJSON struct {
	ID          uint64 `json:"id"`
	EventSeq    uint64 `json:"event_seq"`
	Destination string `json:"destination"`
	// Route is the route it was opened for ("" when that was not recorded).
	Route string `json:"route"`
	// Transformed says that route has a transform now: the delivery goes
	// out with the body it makes, not the event's.
	Transformed bool   `json:"transformed,omitempty"`
	State       string `json:"state"`
	// Status is the word the pages show for it (app.DeliveryWord): its
	// state, but "failing" for a pending one that has had an attempt. It
	// is one of the words an event's ?status= filter takes.
	Status     string        `json:"status"`
	Attempts   int           `json:"attempts"`
	Due        *time.Time    `json:"due,omitempty"`
	Created    time.Time     `json:"created,omitzero"`
	Updated    time.Time     `json:"updated,omitzero"`
	LastStatus int           `json:"last_status,omitempty"`
	LastError  string        `json:"last_error,omitempty"`
	History    []attemptJSON `json:"attempts_detail,omitempty"`

	// Route and OrderKey name the delivery's order group (issue 27);
	// AfterDead is the delivery before it in that group when that one is
	// dead: this one went out after it.
	OrderKey  string `json:"order_key,omitempty"`
	AfterDead uint64 `json:"after_dead,omitempty"`

	// Source, EventID and Topic name the delivery's event the way the
	// merchant knows it, and Name is all of it in a line ("#7 pos ←
	// shop/wh-1004 orders/create"): in lists (dead letters).
	Source  string `json:"source,omitempty"`
	EventID string `json:"event_id,omitempty"`
	Topic   string `json:"topic,omitempty"`
	Name    string `json:"name,omitempty"`

	// Note is "destination no longer configured" when the config in
	// force has no such destination: the delivery is kept, and goes out
	// once a reload names it again.
	Note string `json:"note,omitempty"`
}

type attemptJSON struct {
	N          int       `json:"n"`
	Start      time.Time `json:"start,omitzero"`
	DurationMS float64   `json:"duration_ms"`
	Status     int       `json:"status,omitempty"`
	Error      string    `json:"error,omitempty"`
	Response   string    `json:"response,omitempty"`
	// Probe marks a recovery probe: sent early while the destination
	// looked down, it used no step of the retry schedule.
	Probe bool `json:"probe,omitempty"`
}

// NoteUnconfigured is a delivery's note when its destination is not in
// the config in force.
const NoteUnconfigured = "destination no longer configured"

// toJSON renders a delivery of cfg, with its attempts when given.
func toJSON(cfg *app.Config, d *app.Delivery, attempts ...*app.Attempt) deliveryJSON {
	j := deliveryJSON{ID: d.ID, EventSeq: d.EventSeq, Destination: d.Destination, State: d.State.String(), Status: app.DeliveryWord(d),
		Route: d.Route, OrderKey: d.OrderKey, Transformed: cfg.RouteTransform(d.Route) != nil,
		Attempts: d.Attempts, Created: utc(d.Created), Updated: utc(d.Updated), LastStatus: d.LastStatus, LastError: d.LastError}
	if cfg.DestinationByName(d.Destination) == nil {
		j.Note = NoteUnconfigured
	}
	if d.State == app.Pending && !d.Due.IsZero() {
		due := d.Due.UTC()
		j.Due = &due
	}
	for _, a := range attempts {
		j.History = append(j.History, attemptJSON{N: a.N, Start: utc(a.Start), DurationMS: float64(a.Duration.Microseconds()) / 1000,
			Status: a.Status, Error: a.Error, Response: string(a.Response), Probe: a.Probe})
	}
	return j
}

func (s *Server) handleDeadLetters(c *fiber.Ctx) error {
	ctx := c.UserContext()
	after, _ := strconv.ParseUint(c.Query("after"), 10, 64)
	limit := c.QueryInt("limit", 100)
	if limit < 1 || limit > 1000 {
		limit = 100
	}
	list, total, err := s.deps.Store.DeadLetters(ctx, after, limit)
	if err != nil {
		return s.storeError(c, err)
	}
	items := make([]deliveryJSON, 0, len(list))
	for _, d := range list {
		items = append(items, toJSON(s.config(), d))
	}
	if err := s.nameDeliveries(c, items); err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(fiber.Map{"total": total, "items": items})
}

func (s *Server) handleDelivery(c *fiber.Ctx) error {
	ctx := c.UserContext()
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no such delivery"))
	}
	d, attempts, err := s.deps.Store.Delivery(ctx, id)
	if err != nil {
		return s.storeError(c, err)
	}
	j := toJSON(s.config(), d, attempts...)
	if j.AfterDead, err = afterDead(ctx, s.deps.Store, d); err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(j)
}

// afterDead is the id of the delivery before d in its order group when
// that one is dead, else 0: one read of the store for a delivery with an
// order key, none for the others.
func afterDead(ctx context.Context, store app.ReadModel, d *app.Delivery) (uint64, error) {
	if d.OrderKey == "" {
		return 0, nil
	}
	prev, err := store.PreviousInGroup(ctx, d)
	if err != nil || prev == nil || prev.State != app.Dead {
		return 0, err
	}
	return prev.ID, nil
}
