// Retry now (issue 28): the page's buttons that make a waiting delivery,
// or all of a failing destination's, due at once. They post a form with
// the page's CSRF token, as the replay buttons do.

package ui

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// retryOne makes delivery :id due now and goes back to its event's page,
// which says what came of it (?retried=ID): due now, or, when it was
// delivered or went dead meanwhile, its state with the Replay button.
func (u *UI) retryOne(c *fiber.Ctx) error {
	ctx := c.UserContext()
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return fiber.ErrNotFound
	}
	_, err = u.d.Store.RetryNow(ctx, []uint64{id}, u.d.Now())
	switch {
	case errors.Is(err, app.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil && app.ErrorCode(err) != app.ECONFLICT:
		return err
	case err == nil:
		u.d.Wake()
	}
	d, _, err := u.d.Store.Delivery(ctx, id)
	if err != nil {
		return err
	}
	return c.Redirect(fmt.Sprintf("/events/%d?retried=%d", d.EventSeq, id), fiber.StatusSeeOther)
}

// retryDestination makes every waiting delivery to :name due now and goes
// back to the page of its button (backTo), which says how many
// (?retried=N&destination=NAME).
func (u *UI) retryDestination(c *fiber.Ctx) error {
	name, err := url.PathUnescape(c.Params("name")) // the page escapes names as any path
	dest := u.cfg().DestinationByName(name)
	if err != nil || dest == nil {
		return fiber.ErrNotFound
	}
	n, err := u.d.Store.RetryDestination(c.UserContext(), dest.Name, u.d.Now())
	if err != nil {
		return err
	}
	u.d.Wake()
	return c.Redirect(backTo(c)+"?"+url.Values{"retried": {strconv.Itoa(n)}, "destination": {dest.Name}}.Encode(), fiber.StatusSeeOther)
}

// retriedNotice is the overview's line after a destination's Retry now,
// from its query (only a configured name and a number are shown).
func (u *UI) retriedNotice(c *fiber.Ctx) string {
	n, err := strconv.Atoi(c.Query("retried"))
	dest := u.cfg().DestinationByName(c.Query("destination"))
	if err != nil || n < 0 || dest == nil {
		return ""
	}
	if n == 0 {
		return fmt.Sprintf("No delivery to %s was waiting for a retry.", dest.Name)
	}
	return fmt.Sprintf("%d %s to %s due now: they go out %d at a time (its concurrency).", n, map[bool]string{true: "delivery", false: "deliveries"}[n == 1], dest.Name, dest.Concurrency)
}

// retriedID is the delivery the event page was sent back to after its
// Retry now (?retried=ID), 0 when none.
func retriedID(c *fiber.Ctx) uint64 {
	id, _ := strconv.ParseUint(c.Query("retried"), 10, 64)
	return id
}
