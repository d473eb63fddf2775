package ui

import (
	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// maxRetryingCount bounds the count of deliveries waiting for a retry
// (a scan of the outbox).
const maxRetryingCount = 100000

// total is one row of the overview's totals: its label on the page, its
// name in data-kind (the key of /api/v1/stats "counts" it shows, or for
// failed attempts the sum of retrying and dead), and what it counts.
type total struct {
	Name, Label, Title string
	Hour, Day          uint64
}

// totals are the overview's totals, in the words of the rows and lists
// below them: "failed attempts" counts every attempt that did not deliver
// (retried or not), as a destination's row does, so the totals add up to
// the rows; "went dead" counts the deliveries that gave up in the hour or
// the day (the Dead letters page lists those dead now).
func totals(hour, day app.Counts) []total {
	var out []total
	for k, name := range app.KindNames {
		t := total{Name: name, Label: app.KindLabels[k], Hour: hour[k], Day: day[k]}
		switch app.Kind(k) {
		case app.KindRetrying:
			t.Name, t.Label = "failed", "failed attempts"
			t.Title = "every attempt that did not deliver, retried or not: one delivery can fail several times"
			t.Hour, t.Day = hour[app.KindRetrying]+hour[app.KindDead], day[app.KindRetrying]+day[app.KindDead]
		case app.KindDead:
			t.Label = "went dead"
			t.Title = "deliveries that gave up after their last retry (the last of their failed attempts); some may have been replayed since"
		case app.KindDebounced:
			t.Title = "events folded into a pending debounced delivery"
		case app.KindDelivered:
			t.Title = "deliveries that reached their destination"
		}
		out = append(out, t)
	}
	return out
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
	counts := totals(app.Sum(hours, 1), app.Sum(hours, app.CountHours))
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
	dests := u.destRows(ctx, now, tables.Destinations, failed)
	series, err := u.d.Stats.DestHours(ctx)
	if err != nil {
		failed("the destinations' hourly counts", err)
	}
	for i, d := range dests {
		if v := series[d.Name]; v != nil {
			dests[i].Chart = newStacked(v[0], v[1], now, "failed attempts")
		}
	}
	pending, err := u.d.Store.CountPending(ctx)
	if err != nil {
		failed("the pending deliveries", err)
	}
	retrying, err := u.d.Store.CountRetrying(ctx, maxRetryingCount)
	if err != nil {
		failed("the deliveries waiting for a retry", err)
	}
	dead, err := u.d.Store.CountDead(ctx)
	if err != nil {
		failed("the dead deliveries", err)
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
		"Delivered":    newStacked(app.Series(hours, app.KindDelivered), failedSeries(hours), now, "failed attempts"),
		"DeadNow":      dead,
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

// failedSeries is the failed attempts of each hour of hs: retried or
// gone dead.
func failedSeries(hs [app.CountHours]app.Counts) [app.CountHours]uint64 {
	var out [app.CountHours]uint64
	for i, c := range hs {
		out[i] = c[app.KindRetrying] + c[app.KindDead]
	}
	return out
}
