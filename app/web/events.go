package web

import (
	"cmp"
	"encoding/base64"
	"mime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/request"
)

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
	// Origin says how the event came (the event's detail only): "webhook",
	// or "fetched" from the provider's API by an upstream check; then
	// ProviderAt is when the provider says it happened.
	Origin     string    `json:"origin,omitempty"`
	ProviderAt time.Time `json:"provider_at,omitzero"`
}

func (s *Server) handleEvents(c *fiber.Ctx) error {
	ctx := c.UserContext()
	q := app.EventQuery{Source: c.Query("source"), Topic: c.Query("topic"), Status: c.Query("status"),
		ID: c.Query("id"), Limit: c.QueryInt("limit", 50)}
	q.Before, _ = strconv.ParseUint(c.Query("before"), 10, 64)
	if err := app.CheckEventStatus(q.Status); err != nil {
		return s.sendError(c, err)
	}
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
		items = append(items, eventJSON{r.Seq, r.Source, r.ID, r.Topic, utc(r.ReceivedAt), r.Size, r.Status, utc(r.WaitingUntil), "", "", time.Time{}})
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
		UnroutedReason: e.Unrouted, Origin: cmp.Or(e.Origin, "webhook"), ProviderAt: utc(e.ProviderAt)},
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
