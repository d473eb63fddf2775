package ui

import (
	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// maxRetryingCount bounds the count of deliveries waiting for a retry
// (a scan of the outbox).
const maxRetryingCount = 100000

type destRow struct {
	app.DestInfo
	Backlog int
}

// overview serves the status page's front page: the counts, the charts, the
// sources, destinations and debounced or filtered routes. A store read it cannot do is
// logged and named on the page in a line of its own, like the storage
// banner, and never answered with a bare 500: when the database is gone the
// page must still show the banner that says what to check.
func (u *UI) overview(c *fiber.Ctx) error {
	ctx := c.UserContext()
	now := u.d.Now()
	hours, herr := u.d.Stats.Hours(ctx)
	if herr != nil {
		u.d.Logger.Warn("read the hourly counts", "error", herr)
	}
	hour, day := app.Sum(hours, 1), app.Sum(hours, app.CountHours)
	type count struct {
		Name, Label string
		Hour, Day   uint64
	}
	var counts []count
	for k, name := range app.KindNames {
		counts = append(counts, count{name, app.KindLabels[k], hour[k], day[k]})
	}
	tables, terr := u.d.Stats.Tables(ctx)
	if terr != nil {
		u.d.Logger.Warn("read the counts by name", "error", terr)
	}
	// unread names, for the page, each read that failed.
	var unread []string
	failed := func(what string, err error) {
		u.d.Logger.Warn("read for the overview", "what", what, "error", err)
		unread = append(unread, what)
	}
	var dests []destRow
	for _, d := range tables.Destinations {
		n, err := u.d.Store.Backlog(ctx, d.Name, 100000)
		if err != nil {
			failed("the backlog of "+d.Name, err)
		}
		dests = append(dests, destRow{d, n})
	}
	pending, err := u.d.Store.CountPending(ctx)
	if err != nil {
		failed("the pending deliveries", err)
	}
	retrying, err := u.d.Store.CountRetrying(ctx, maxRetryingCount)
	if err != nil {
		failed("the deliveries waiting for a retry", err)
	}
	poison, poisonTotal, err := u.d.Store.Poisoned(ctx, 10)
	if err != nil {
		failed("the records set aside as unreadable", err)
	}
	var backup map[string]any
	if u.d.LastBackup != nil {
		at, size, err := u.d.LastBackup()
		backup = map[string]any{"At": at, "Size": size, "Err": err}
	}
	return u.render(c, 200, "overview", "Overview", map[string]any{
		"Backup":       backup,
		"Routes":       tables.Routes,
		"Counts":       counts,
		"CountsErr":    herr != nil || terr != nil,
		"Unread":       unread,
		"Since":        app.HourStart(app.Hour(now)),
		"Received":     newChart(app.Series(hours, app.KindReceived), now),
		"Delivered":    newChart(app.Series(hours, app.KindDelivered), now),
		"Retrying":     retrying,
		"RetryingMax":  retrying >= maxRetryingCount,
		"Sources":      tables.Sources,
		"Destinations": dests,
		"Pending":      pending,
		"RetryNotice":  u.retriedNotice(c),
		"Poison": map[string]any{"List": poison, "Total": poisonTotal,
			"Store": u.d.Stats.Storage.Store, "DamageFix": u.d.Stats.Storage.DamageFix},
	})
}
