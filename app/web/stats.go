package web

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// statsJSON is /api/v1/stats (docs/API.md).
type statsJSON struct {
	Counts       map[string]map[string]uint64 `json:"counts"`
	Hourly       []hourJSON                   `json:"hourly"`
	Sources      []app.SourceInfo             `json:"sources"`
	Destinations []app.DestInfo               `json:"destinations"`
	Routes       []routeJSON                  `json:"routes"`
	Dead         int                          `json:"dead"`
	Pending      int                          `json:"pending"`
	Retrying     int                          `json:"retrying"`
}

// hourJSON is one hour of /api/v1/stats "hourly".
type hourJSON struct {
	Hour   time.Time         `json:"hour"`
	Counts map[string]uint64 `json:"counts"`
}

type routeJSON struct {
	Name      string  `json:"name"`
	Received  uint64  `json:"received"`
	Debounced uint64  `json:"debounced"`
	Deferred  uint64  `json:"deferred"`
	Unkeyed   uint64  `json:"unkeyed"`
	Delivered uint64  `json:"delivered"`
	Reduction float64 `json:"reduction"`
	// Filtered and FilterErrors are the events its filter turned away:
	// it said no, or it failed (counted as a no).
	Filtered     uint64 `json:"filtered"`
	FilterErrors uint64 `json:"filter_errors"`
}

func (s *Server) handleStats(c *fiber.Ctx) error {
	ctx := c.UserContext()
	st := s.deps.Stats
	hours, err := st.Hours(ctx)
	if err != nil {
		return s.storeError(c, err)
	}
	tables, err := st.Tables(ctx)
	if err != nil {
		return s.storeError(c, err)
	}
	hour, day := app.Sum(hours, 1), app.Sum(hours, app.CountHours)
	out := statsJSON{Counts: map[string]map[string]uint64{"last_hour": {}, "last_day": {}},
		Hourly: make([]hourJSON, 0, app.CountHours), Sources: tables.Sources, Destinations: tables.Destinations, Routes: []routeJSON{}}
	if out.Sources == nil {
		out.Sources = []app.SourceInfo{}
	}
	if out.Destinations == nil {
		out.Destinations = []app.DestInfo{}
	}
	for i, d := range out.Destinations {
		if out.Destinations[i].Backlog, err = s.deps.Store.Backlog(ctx, d.Name, app.MaxBacklogCount); err != nil {
			return s.storeError(c, err)
		}
	}
	for k, name := range app.KindNames {
		out.Counts["last_hour"][name], out.Counts["last_day"][name] = hour[k], day[k]
	}
	cur := app.Hour(s.deps.Now())
	for i, h := range hours {
		m := make(map[string]uint64, app.NumKinds)
		for k, name := range app.KindNames {
			m[name] = h[k]
		}
		out.Hourly = append(out.Hourly, hourJSON{Hour: app.HourStart(cur - int64(app.CountHours-1-i)), Counts: m})
	}
	for _, rt := range tables.Routes {
		out.Routes = append(out.Routes, routeJSON{Name: rt.Name, Received: rt.Received, Debounced: rt.Merged,
			Deferred: rt.Deferred, Unkeyed: rt.Unkeyed, Delivered: rt.Sent, Reduction: max(rt.Reduction(), 0),
			Filtered: rt.Filtered, FilterErrors: rt.FilterErrors})
	}
	out.Dead, _ = s.deps.Store.CountDead(ctx)
	out.Pending, _ = s.deps.Store.CountPending(ctx)
	out.Retrying, _ = s.deps.Store.CountRetrying(ctx, maxRetrying)
	return c.JSON(out)
}

// maxRetrying bounds the count of deliveries waiting for a retry.
const maxRetrying = 100000
