package ui

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
)

// The Destinations page (issue 44): one card per destination, with its
// state in the words of app.DestinationStates, its backlog, its last
// error and, for those who may, the Pause, Resume and Retry now buttons,
// which post to the routes the overview's rows use. It reads what the
// overview's table of destinations reads, and what GET
// /api/v1/destinations says (the backlog is its "waiting").

// destRow is a destination as the pages show it.
type destRow struct {
	app.DestInfo
	Control destControl
	// Chart is its delivered and failed attempts per hour, last 24 h.
	Chart chart
}

// destControl is what the pages show of a destination's controls.
type destControl struct {
	app.DestinationControl
	Held bool   // HeldUntil is in the future
	Rate string // its rate as the config writes it, "" for none
}

// rate is destination name's rate as the config writes it ("" for none).
func (u *UI) rate(name string) string {
	for _, d := range u.cfg().Destinations {
		if d.Name == name {
			return d.Rate.String()
		}
	}
	return ""
}

// pause pauses a destination from its row's form, by the logged-in user.
func (u *UI) pause(c *fiber.Ctx) error {
	if u.d.Pauser == nil {
		return fiber.ErrNotFound
	}
	id, _ := c.Locals("identity").(app.Identity) // as the API's pause names it
	if r := request.PostValue(c, "reason"); r != "" {
		c.Locals(AuditDetail, "reason: "+r)
	}
	if err := u.d.Pauser.Pause(c.UserContext(), strings.Clone(c.Params("name")), cmp.Or(id.Actor(), "admin"), request.PostValue(c, "reason")); err != nil {
		if errors.Is(err, app.ErrNoDestination) {
			return fiber.ErrNotFound
		}
		return err
	}
	return c.Redirect(backTo(c), fiber.StatusSeeOther)
}

// resume resumes a destination from its row's form.
func (u *UI) resume(c *fiber.Ctx) error {
	if u.d.Pauser == nil {
		return fiber.ErrNotFound
	}
	if err := u.d.Pauser.Resume(c.UserContext(), strings.Clone(c.Params("name"))); err != nil {
		if errors.Is(err, app.ErrNoDestination) {
			return fiber.ErrNotFound
		}
		return err
	}
	return c.Redirect(backTo(c), fiber.StatusSeeOther)
}

// destRows completes the destinations' rows of the counts (list) with
// each one's backlog and controls; a read that fails is passed to failed
// (what it was and the error) and its figures stay zero.
func (u *UI) destRows(ctx context.Context, now time.Time, list []app.DestInfo, failed func(string, error)) []destRow {
	var controls map[string]app.DestinationControl
	if u.d.Pauser != nil {
		var err error
		if controls, err = u.d.Pauser.Controls(ctx); err != nil {
			failed("the destinations' pauses", err)
		}
	}
	out := make([]destRow, 0, len(list))
	for _, d := range list {
		var err error
		if d.Backlog, err = u.d.Store.Backlog(ctx, d.Name, app.MaxBacklogCount); err != nil {
			failed("the backlog of "+d.Name, err)
		}
		ctl := destControl{DestinationControl: controls[d.Name], Rate: u.rate(d.Name)}
		ctl.Held = ctl.HeldUntil.After(now)
		out = append(out, destRow{DestInfo: d, Control: ctl})
	}
	return out
}

// maxShownError bounds a last error on the Destinations page, in
// characters: the dispatcher's errors are short and carry no URL
// (app.SendError), a command's stderr may be long.
const maxShownError = 300

// destCard is a destination's card on the Destinations page.
type destCard struct {
	destRow
	// State is its word (app.DestinationWord); Target where it sends, as
	// the Configuration page shows it (a URL's query is "…", a command
	// is its program); Error its last error, cut at maxShownError.
	State, Target, Error string
}

// destinations serves the Destinations page.
func (u *UI) destinations(c *fiber.Ctx) error {
	ctx := c.UserContext()
	now := u.d.Now()
	var unread []string
	failed := func(what string, err error) {
		u.d.Logger.Warn("read for the destinations page", "what", what, "error", err)
		unread = append(unread, what)
	}
	tables, err := u.d.Stats.Tables(ctx)
	if err != nil {
		failed("the destinations' counts and health", err)
	}
	var cards []destCard
	for _, r := range u.destRows(ctx, now, tables.Destinations, failed) {
		card := destCard{destRow: r, Error: cut(r.LastError, maxShownError),
			State: app.DestinationWord(r.Control.Paused, r.Control.Held, !r.FailingSince.IsZero() || r.LastAttemptFailed())}
		if d := u.cfg().DestinationByName(r.Name); d != nil {
			card.Target = app.ShownURL(d.URL)
			if len(d.Command) > 0 {
				card.Target = "command " + d.Command[0]
			}
		}
		cards = append(cards, card)
	}
	return u.render(c, 200, "destinations", "Destinations", map[string]any{
		"Destinations": cards, "Unread": unread, "RetryNotice": u.retriedNotice(c)})
}

// cut returns s, or its first n characters and "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// backTo is the page a destination's button goes back to: the
// Destinations page when its form says so, else the overview.
func backTo(c *fiber.Ctx) string {
	if request.PostValue(c, "back") == "/destinations" {
		return "/destinations"
	}
	return "/"
}
