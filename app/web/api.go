package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"mime"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
)

// route registers h for method path under prefix, behind the role its
// entry in routeRules gives.
func (s *Server) route(r fiber.Router, prefix, method, path string, h fiber.Handler) {
	r.Add(method, path, s.authorize(ruleOf(method, prefix+path)), h)
}

// The admin API: dead letters, deliveries with their attempts, replay.
func (s *Server) routeAPI(r fiber.Router) {
	s.route(r, "/api/v1", fiber.MethodGet, "/dead-letters", s.handleDeadLetters)
	s.route(r, "/api/v1", fiber.MethodPost, "/dead-letters/replay", s.handleReplayDead)
	s.route(r, "/api/v1", fiber.MethodPost, "/dead-letters/:id/replay", s.handleReplay)
	s.route(r, "/api/v1", fiber.MethodGet, "/deliveries/:id", s.handleDelivery)
	s.route(r, "/api/v1", fiber.MethodPost, "/deliveries/:id/replay", s.handleReplay)
	s.route(r, "/api/v1", fiber.MethodPost, "/replay", s.handleReplayQuery) // replay by query (replay.go)
	s.route(r, "/api/v1", fiber.MethodGet, "/backup", s.handleBackup)
	s.route(r, "/api/v1", fiber.MethodGet, "/stats", s.handleStats)
	s.route(r, "/api/v1", fiber.MethodGet, "/config", s.handleConfig) // the config in force, and a refused one (config.go)
	s.route(r, "/api/v1", fiber.MethodGet, "/events", s.handleEvents)
	s.route(r, "/api/v1", fiber.MethodGet, "/events/:seq", s.handleEvent)
	s.route(r, "/api/v1", fiber.MethodGet, "/events/:seq/body", s.handleEventBody)
	s.route(r, "/api/v1", fiber.MethodGet, "/stream", s.handleStream) // live events for `hookbox listen` (stream.go)
	// Retry now (issue 28): retry.go.
	s.route(r, "/api/v1", fiber.MethodPost, "/deliveries/:id/retry", s.handleRetryDelivery)
	s.route(r, "/api/v1", fiber.MethodPost, "/destinations/:name/retry", s.handleRetryDestination)
	// Destinations: list, pause, resume (destinations.go).
	s.routeDestinations(r)
	// Team access: the audit log, users and tokens (team.go).
	s.routeTeam(r)
}

// BackupIdleTimeout bounds how long a backup download may go without
// taking the next chunk. It replaces the server's WriteTimeout for that
// route: a copy of hundreds of MB takes longer than 10 s to read, and was
// cut there.
const BackupIdleTimeout = 30 * time.Second

// backupIdle is BackupIdleTimeout; tests shorten it.
var backupIdle = BackupIdleTimeout

// pacedBackup is the body of a backup download: each read from the copy
// gives the connection a new write deadline, so a download lasts as long
// as it moves, and a reader that stops is cut after backupIdle. What is
// not read yet stays in the file, not in memory.
type pacedBackup struct {
	f    *os.File
	conn net.Conn
	idle time.Duration
}

func (p *pacedBackup) Read(b []byte) (int, error) {
	if err := p.conn.SetWriteDeadline(time.Now().Add(p.idle)); err != nil {
		return 0, err
	}
	return p.f.Read(b)
}

// Close is called by fasthttp when the answer is sent or abandoned.
func (p *pacedBackup) Close() error { return p.f.Close() }

// handleBackup streams a hot copy of the data file. The copy is made into
// an unlinked temp file first, so the read transaction is short and the
// response is not held in memory.
func (s *Server) handleBackup(c *fiber.Ctx) error {
	if s.deps.Backup == nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "backup not available"))
	}
	f, size, err := s.deps.Backup()
	if err != nil {
		return s.storeError(c, err)
	}
	c.Set(fiber.HeaderContentType, "application/octet-stream")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="hookbox-`+s.deps.Now().UTC().Format("20060102-150405")+`.db"`)
	c.Response().SetBodyStream(&pacedBackup{f: f, conn: c.Context().Conn(), idle: backupIdle}, int(size)) // fasthttp closes it when sent
	return nil
}

// equal compares in constant time, lengths included (by hashing first).
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

func basicAuth(h string) (user, pass string, ok bool) {
	const prefix = "Basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(h[len(prefix):])
	if err != nil {
		return "", "", false
	}
	user, pass, ok = strings.Cut(string(raw), ":")
	return user, pass, ok
}

// deliveryJSON is a delivery as the API shows it.
type deliveryJSON struct {
	ID          uint64 `json:"id"`
	EventSeq    uint64 `json:"event_seq"`
	Destination string `json:"destination"`
	// Route is the route it was opened for ("" when that was not recorded).
	Route string `json:"route"`
	// Transformed says that route has a transform now: the delivery goes
	// out with the body it makes, not the event's.
	Transformed bool          `json:"transformed,omitempty"`
	State       string        `json:"state"`
	Attempts    int           `json:"attempts"`
	Due         *time.Time    `json:"due,omitempty"`
	Created     time.Time     `json:"created,omitzero"`
	Updated     time.Time     `json:"updated,omitzero"`
	LastStatus  int           `json:"last_status,omitempty"`
	LastError   string        `json:"last_error,omitempty"`
	History     []attemptJSON `json:"attempts_detail,omitempty"`

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

// utc is t in UTC, so every time in an answer reads alike (RFC 3339,
// "Z"); the zero time stays zero, for omitzero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// NoteUnconfigured is a delivery's note when its destination is not in
// the config in force.
const NoteUnconfigured = "destination no longer configured"

// toJSON renders a delivery of cfg, with its attempts when given.
func toJSON(cfg *app.Config, d *app.Delivery, attempts ...*app.Attempt) deliveryJSON {
	j := deliveryJSON{ID: d.ID, EventSeq: d.EventSeq, Destination: d.Destination, State: d.State.String(),
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

// storeError answers a store failure: not found is 404, anything else is
// logged and answered 503 without its text.
func (s *Server) storeError(c *fiber.Ctx, err error) error {
	if errors.Is(err, app.ErrNotFound) {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no such delivery"))
	}
	if errors.Is(err, context.Canceled) { // the client left (request.Watch): no one reads this
		return s.sendError(c, app.Errorf(app.EUNAVAILABLE, "the request was cancelled"))
	}
	s.Logger.Error("admin API", "path", c.Path(), "error", err)
	return s.sendError(c, app.Errorf(app.EUNAVAILABLE, "storage unavailable, retry later"))
}

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

type eventJSON struct {
	Seq        uint64    `json:"seq"`
	Source     string    `json:"source"`
	ID         string    `json:"id"`
	Topic      string    `json:"topic"`
	ReceivedAt time.Time `json:"received_at"`
	Size       int       `json:"size"`
	Status     string    `json:"status,omitempty"`
	// WaitingUntil is when a "waiting" event's debounce window ends.
	WaitingUntil time.Time `json:"waiting_until,omitzero"`
	// UnroutedReason says which route filters turned an unrouted event
	// away (the event's detail only; absent when none did).
	UnroutedReason string `json:"unrouted_reason,omitempty"`
}

func (s *Server) handleEvents(c *fiber.Ctx) error {
	ctx := c.UserContext()
	q := app.EventQuery{Source: c.Query("source"), Topic: c.Query("topic"), Status: c.Query("status"),
		ID: c.Query("id"), Limit: c.QueryInt("limit", 50)}
	q.Before, _ = strconv.ParseUint(c.Query("before"), 10, 64)
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v := c.Query(f.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return s.sendError(c, app.Errorf(app.EINVALID, "%s: not an RFC 3339 time", f.name))
			}
			*f.to = t
		}
	}
	var res app.EventSearch
	var err error
	if q.Q = c.Query("q"); q.Q != "" {
		if err := app.CheckSearch(q.Q); err != nil {
			return s.sendError(c, err)
		}
		sctx, done, busy := request.Search(c, s.deps.Searches)
		if busy != nil {
			return s.sendError(c, busy)
		}
		res, err = s.deps.Store.SearchEvents(sctx, q)
		done()
	} else {
		res.Rows, res.Next, err = s.deps.Store.ListEvents(ctx, q)
	}
	if err != nil {
		return s.storeError(c, err)
	}
	items := make([]eventJSON, 0, len(res.Rows))
	for _, r := range res.Rows {
		items = append(items, eventJSON{r.Seq, r.Source, r.ID, r.Topic, utc(r.ReceivedAt), r.Size, r.Status, utc(r.WaitingUntil), ""})
	}
	out := fiber.Map{"items": items}
	if res.Next > 0 {
		out["next_before"] = res.Next
	}
	// A body search that stopped at its budget says so; on bbolt it says
	// how far back it looked and how many events it read, and
	// next_before goes on.
	if res.Stopped {
		out["stopped_early"] = true
	}
	if !res.SearchedUntil.IsZero() {
		out["searched_until"] = res.SearchedUntil.UTC()
		out["searched"] = res.Searched
	}
	return c.JSON(out)
}

// eventParam finds the event the route's :seq names; when there is none
// (or it cannot be read) e is nil and err is the answer already sent.
func (s *Server) eventParam(c *fiber.Ctx) (seq uint64, e *app.Event, err error) {
	ctx := c.UserContext()
	seq, err = strconv.ParseUint(c.Params("seq"), 10, 64)
	if err != nil {
		return 0, nil, s.sendError(c, app.Errorf(app.ENOTFOUND, "no such event"))
	}
	e, err = s.deps.Store.Event(ctx, seq)
	if err != nil {
		return 0, nil, s.storeError(c, err)
	}
	if e == nil {
		return 0, nil, s.sendError(c, app.Errorf(app.ENOTFOUND, "no such event"))
	}
	return seq, e, nil
}

func (s *Server) handleEvent(c *fiber.Ctx) error {
	ctx := c.UserContext()
	seq, e, err := s.eventParam(c)
	if e == nil {
		return err
	}
	ds, err := s.deps.Store.EventDeliveries(ctx, seq)
	if err != nil {
		return s.storeError(c, err)
	}
	deliveries := make([]deliveryJSON, 0, len(ds))
	for _, d := range ds {
		_, attempts, err := s.deps.Store.Delivery(ctx, d.ID)
		if err != nil {
			return s.storeError(c, err)
		}
		j := toJSON(s.config(), d, attempts...)
		if j.AfterDead, err = afterDead(ctx, s.deps.Store, d); err != nil {
			return s.storeError(c, err)
		}
		deliveries = append(deliveries, j)
	}
	merged, _ := s.deps.Store.MergedInto(ctx, seq)
	if merged == nil {
		merged = []uint64{}
	}
	// headers keeps one value per name (the last, as it always has) for
	// the scripts that read it; header_list has every copy, in order.
	headers := map[string]string{}
	list := make([]headerJSON, 0, len(e.Header))
	for _, h := range app.MaskHeaders(e.Header, s.config().SourceByName(e.Source)) {
		headers[h.Name] = h.Value
		list = append(list, headerJSON{h.Name, h.Value})
	}
	out := fiber.Map{"event": eventJSON{Seq: seq, Source: e.Source, ID: e.ID, Topic: e.Topic, ReceivedAt: utc(e.ReceivedAt), Size: len(e.Body),
		UnroutedReason: e.Unrouted},
		"headers": headers, "header_list": list, "deliveries": deliveries, "merged": merged}
	// A JSON string cannot carry bytes that are not UTF-8 (the encoder
	// would put U+FFFD in their place): those bodies go as base64.
	if utf8.Valid(e.Body) {
		out["body"] = string(e.Body)
	} else {
		out["body_base64"] = base64.StdEncoding.EncodeToString(e.Body)
	}
	return c.JSON(out)
}

// headerJSON is one stored header of an event, in "header_list".
type headerJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// handleEventBody sends an event's body exactly as stored, as a download:
// with the sender's Content-Type when it is a well-formed media type (else
// application/octet-stream), never sniffed, never shown inline.
func (s *Server) handleEventBody(c *fiber.Ctx) error {
	seq, e, err := s.eventParam(c)
	if e == nil {
		return err
	}
	ctype, ext := "application/octet-stream", ".bin"
	for _, h := range e.Header {
		if !strings.EqualFold(h.Name, fiber.HeaderContentType) {
			continue
		}
		if mt, _, err := mime.ParseMediaType(h.Value); err == nil {
			ctype = h.Value
			if mt == "application/json" || strings.HasSuffix(mt, "+json") {
				ext = ".json"
			}
		}
		break
	}
	c.Set(fiber.HeaderContentType, ctype)
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="event-`+strconv.FormatUint(seq, 10)+ext+`"`)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Send(e.Body)
}
