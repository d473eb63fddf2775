package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// The admin API: dead letters, deliveries with their attempts, replay.
func (s *Server) routeAPI(r fiber.Router) {
	r.Get("/dead-letters", s.handleDeadLetters)
	r.Post("/dead-letters/replay", s.handleReplayDead)
	r.Post("/dead-letters/:id/replay", s.handleReplay)
	r.Get("/deliveries/:id", s.handleDelivery)
	r.Post("/deliveries/:id/replay", s.handleReplay)
	r.Get("/backup", s.handleBackup)
}

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
	c.Response().SetBodyStream(f, int(size)) // fasthttp closes f when sent
	return nil
}

// requireLogin guards the admin API with HTTP Basic auth against [status]
// user and password, and refuses cross-site state changes: a browser that
// cached the login still sends an Origin header from the other site.
func (s *Server) requireLogin(c *fiber.Ctx) error {
	if s.status.Password == "" {
		return s.sendError(c, app.Errorf(app.EFORBIDDEN, "the admin API is closed: set [status] password or password_env"))
	}
	user, pass, ok := basicAuth(c.Get(fiber.HeaderAuthorization))
	if !ok || !equal(user, s.status.User) || !equal(pass, s.status.Password) {
		c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="hookbox", charset="UTF-8"`)
		return c.Status(fiber.StatusUnauthorized).JSON(answer{Status: "error", Error: "login required"})
	}
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		if o := c.Get(fiber.HeaderOrigin); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host != c.Hostname() {
				return s.sendError(c, app.Errorf(app.EFORBIDDEN, "cross-site request refused"))
			}
		}
	}
	return c.Next()
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
	ID          uint64        `json:"id"`
	EventSeq    uint64        `json:"event_seq"`
	Destination string        `json:"destination"`
	State       string        `json:"state"`
	Attempts    int           `json:"attempts"`
	Due         *time.Time    `json:"due,omitempty"`
	Created     time.Time     `json:"created"`
	Updated     time.Time     `json:"updated"`
	LastStatus  int           `json:"last_status,omitempty"`
	LastError   string        `json:"last_error,omitempty"`
	History     []attemptJSON `json:"attempts_detail,omitempty"`
}

type attemptJSON struct {
	N          int       `json:"n"`
	Start      time.Time `json:"start"`
	DurationMS float64   `json:"duration_ms"`
	Status     int       `json:"status,omitempty"`
	Error      string    `json:"error,omitempty"`
	Response   string    `json:"response,omitempty"`
}

func toJSON(d *app.Delivery) deliveryJSON {
	j := deliveryJSON{ID: d.ID, EventSeq: d.EventSeq, Destination: d.Destination, State: d.State.String(),
		Attempts: d.Attempts, Created: d.Created, Updated: d.Updated, LastStatus: d.LastStatus, LastError: d.LastError}
	if d.State == app.Pending {
		due := d.Due
		j.Due = &due
	}
	return j
}

func (s *Server) handleDeadLetters(c *fiber.Ctx) error {
	after, _ := strconv.ParseUint(c.Query("after"), 10, 64)
	limit := c.QueryInt("limit", 100)
	if limit < 1 || limit > 1000 {
		limit = 100
	}
	list, total, err := s.deps.Store.DeadLetters(after, limit)
	if err != nil {
		return s.storeError(c, err)
	}
	items := make([]deliveryJSON, 0, len(list))
	for _, d := range list {
		items = append(items, toJSON(d))
	}
	return c.JSON(fiber.Map{"total": total, "items": items})
}

func (s *Server) handleReplayDead(c *fiber.Ctx) error {
	n, err := s.deps.Store.ReplayDead(s.deps.Now())
	if err != nil {
		return s.storeError(c, err)
	}
	s.deps.Wake()
	return c.JSON(fiber.Map{"replayed": n})
}

func (s *Server) handleReplay(c *fiber.Ctx) error {
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no such delivery"))
	}
	if err := s.deps.Store.Replay(id, s.deps.Now()); err != nil {
		return s.storeError(c, err)
	}
	s.deps.Wake()
	return c.JSON(fiber.Map{"replayed": 1, "id": id})
}

func (s *Server) handleDelivery(c *fiber.Ctx) error {
	id, err := strconv.ParseUint(c.Params("id"), 10, 64)
	if err != nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no such delivery"))
	}
	d, attempts, err := s.deps.Store.Delivery(id)
	if err != nil {
		return s.storeError(c, err)
	}
	j := toJSON(d)
	for _, a := range attempts {
		j.History = append(j.History, attemptJSON{N: a.N, Start: a.Start, DurationMS: float64(a.Duration.Microseconds()) / 1000,
			Status: a.Status, Error: a.Error, Response: string(a.Response)})
	}
	return c.JSON(j)
}

// storeError answers a store failure: not found is 404, anything else is
// logged and answered 503 without its text.
func (s *Server) storeError(c *fiber.Ctx, err error) error {
	if errors.Is(err, app.ErrNotFound) {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "no such delivery"))
	}
	s.Logger.Error("admin API", "path", c.Path(), "error", err)
	return s.sendError(c, app.Errorf(app.EUNAVAILABLE, "storage unavailable, retry later"))
}
