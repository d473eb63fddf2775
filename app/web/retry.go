// Retry now (issue 28): a waiting delivery, or all of a destination's,
// made due at once; the dispatcher's lane paces what falls due.

package web

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// retriedJSON answers POST /api/v1/deliveries/{id}/retry.
type retriedJSON struct {
	// Retried is 1 when the delivery was made due now, 0 when it was due
	// already or being sent (Note says which).
	Retried  int                 `json:"retried"`
	Delivery retriedDeliveryJSON `json:"delivery"`
	Note     string              `json:"note,omitempty"`
}

// retriedDeliveryJSON names a delivery the way a merchant knows it: by
// its destination and its event's source, id and topic.
type retriedDeliveryJSON struct {
	ID          uint64     `json:"id"`
	Destination string     `json:"destination"`
	State       string     `json:"state"`
	Status      string     `json:"status"` // as deliveryJSON's
	Attempts    int        `json:"attempts"`
	Due         *time.Time `json:"due,omitempty"`
	Event       eventRef   `json:"event"`
}

// eventRef names an event: its seq, and its source, id and topic as the
// sender gave them (absent when the event cannot be read).
type eventRef struct {
	Seq    uint64 `json:"seq"`
	Source string `json:"source,omitempty"`
	ID     string `json:"id,omitempty"`
	Topic  string `json:"topic,omitempty"`
}

// handleRetryDelivery makes delivery :id due now (Store.RetryNow) and
// wakes the dispatcher: 404 for an unknown delivery, 409 with the reason
// for a delivered or dead one.
func (s *Server) handleRetryDelivery(c *fiber.Ctx) error {
	ctx := c.UserContext()
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no such delivery"))
	}
	now := s.deps.Now()
	n, err := s.deps.Store.RetryNow(ctx, []uint64{id}, now)
	if err != nil {
		return s.retryError(c, err)
	}
	s.deps.Wake()
	d, _, err := s.deps.Store.Delivery(ctx, id)
	if err != nil {
		return s.storeError(c, err)
	}
	out := retriedJSON{Retried: n, Delivery: retriedDeliveryJSON{ID: d.ID, Destination: d.Destination, State: d.State.String(),
		Status: app.DeliveryWord(d), Attempts: d.Attempts, Event: eventRef{Seq: d.EventSeq}}}
	if d.State == app.Pending && !d.Due.IsZero() {
		due := d.Due.UTC()
		out.Delivery.Due = &due
	}
	if e, err := s.deps.Store.Event(ctx, d.EventSeq); err == nil && e != nil {
		out.Delivery.Event.Source, out.Delivery.Event.ID, out.Delivery.Event.Topic = e.Source, e.ID, e.Topic
	}
	switch {
	case n == 0 && d.State == app.Pending:
		out.Note = fmt.Sprintf("delivery %d is due already or being sent: it goes out as soon as %s has a free slot", d.ID, d.Destination)
	case n > 0 && d.OrderKey != "":
		// Due, but held while an earlier delivery of its order group waits.
		if prev, err := s.deps.Store.PreviousInGroup(ctx, d); err == nil && prev != nil && prev.State == app.Pending {
			out.Note = fmt.Sprintf("due now, but in order after delivery %d of its group, which is pending: retry that one too", prev.ID)
		}
	}
	return c.JSON(out)
}

// handleRetryDestination makes every waiting delivery to :name due now
// (Store.RetryDestination): they go out as its lane's concurrency allows.
func (s *Server) handleRetryDestination(c *fiber.Ctx) error {
	name, err := url.PathUnescape(c.Params("name")) // hookbox retry escapes it as any path
	dest := s.config().DestinationByName(name)
	if err != nil || dest == nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no destination named %q in the config", name))
	}
	n, err := s.deps.Store.RetryDestination(c.UserContext(), dest.Name, s.deps.Now())
	if err != nil {
		return s.retryError(c, err)
	}
	s.deps.Wake()
	return c.JSON(fiber.Map{"retried": n, "destination": dest.Name, "concurrency": dest.Concurrency})
}

// retryError answers a refused retry with its sentence (409), anything
// else as storeError does.
func (s *Server) retryError(c *fiber.Ctx, err error) error {
	if app.ErrorCode(err) == app.ECONFLICT {
		return s.sendError(c, err)
	}
	return s.storeError(c, err)
}
