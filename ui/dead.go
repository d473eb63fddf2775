package ui

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
)

func (u *UI) dead(c *fiber.Ctx) error {
	ctx := c.UserContext()
	after, _ := strconv.ParseUint(c.Query("after"), 10, 64)
	list, total, err := u.d.Store.DeadLetters(ctx, after, 100)
	if err != nil {
		return err
	}
	next := ""
	if len(list) == 100 {
		next = "/dead-letters?after=" + strconv.FormatUint(list[len(list)-1].ID, 10)
	}
	seqs := make([]uint64, 0, len(list))
	for _, d := range list {
		seqs = append(seqs, d.EventSeq)
	}
	names, err := u.d.Store.EventNames(ctx, seqs)
	if err != nil {
		return err
	}
	rows := make([]deadRow, 0, len(list))
	cfg := u.cfg()
	for _, d := range list {
		rows = append(rows, deadRow{Delivery: d, Event: names[d.EventSeq], Unconfigured: cfg.DestinationByName(d.Destination) == nil})
	}
	return u.render(c, 200, "dead", "Dead letters", map[string]any{"List": rows, "Total": total, "Next": next,
		"Done": c.Query("replayed")})
}

// replayAll asks for confirmation first (a form that works without
// JavaScript), then replays every dead delivery.
func (u *UI) replayAll(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if request.PostValue(c, "confirm") != "yes" {
		skipAudit(c)
		n, _ := u.d.Store.CountDead(ctx)
		return u.render(c, 200, "confirm", "Replay all?", map[string]any{"Action": "/dead-letters/replay",
			"Question": fmt.Sprintf("Send all %d dead deliveries again?", n)})
	}
	n, err := u.d.Store.ReplayDead(ctx, u.d.Now())
	if err != nil {
		return err
	}
	c.Locals(AuditDetail, fmt.Sprintf("replayed %d", n))
	u.d.Wake()
	return c.Redirect("/dead-letters?replayed="+strconv.Itoa(n), fiber.StatusSeeOther)
}

func (u *UI) replayOne(c *fiber.Ctx) error {
	ctx := c.UserContext()
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return fiber.ErrNotFound
	}
	if request.PostValue(c, "confirm") != "yes" {
		skipAudit(c)
		d, _, err := u.d.Store.Delivery(ctx, id)
		if errors.Is(err, app.ErrNotFound) {
			return fiber.ErrNotFound
		}
		if err != nil {
			return err
		}
		names, err := u.d.Store.EventNames(ctx, []uint64{d.EventSeq})
		if err != nil {
			return err
		}
		question := fmt.Sprintf("Send delivery %s again?", app.DeliveryName(id, d.Destination, names[d.EventSeq]))
		if d.State == app.Delivered { // the receiver took it once: say so before it gets it twice
			question += fmt.Sprintf(" It was delivered at %s: %s has it already.", d.Updated.UTC().Format("2006-01-02 15:04:05 UTC"), d.Destination)
		}
		return u.render(c, 200, "confirm", "Replay?", map[string]any{"Action": "/deliveries/" + strconv.FormatUint(id, 10) + "/replay",
			"Question": question, "Back": request.SafeNext(request.PostValue(c, "back"))})
	}
	// Confirmed: the page named a delivered one as delivered, so the
	// replay is forced, by the API's rule (replay.Service.One).
	if _, _, err := u.replays().One(ctx, id, true); err != nil {
		if errors.Is(err, app.ErrNotFound) {
			return fiber.ErrNotFound
		}
		return err
	}
	back := request.SafeNext(request.PostValue(c, "back"))
	if back == "/" {
		back = "/dead-letters?replayed=1"
	}
	return c.Redirect(back, fiber.StatusSeeOther)
}
