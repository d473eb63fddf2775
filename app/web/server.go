// Package web is hookbox's HTTP face on Fiber: the inbound webhook endpoint
// and the health check. It maps the domain's errors to status codes in one
// place and never sends internal error text.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/valyala/fasthttp"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/metrics"
	"hookbox/app/receive"
	"hookbox/app/replay"
	"hookbox/app/stream"
	"hookbox/ui"
)

// Timeouts for every connection, so a slow or stalled client cannot hold a
// worker: a sender that drips bytes is cut off by ReadTimeout.
const (
	ReadTimeout    = 10 * time.Second
	WriteTimeout   = 10 * time.Second
	IdleTimeout    = 60 * time.Second
	ReadBufferSize = 16 << 10 // request line and headers
)

// Health reports whether the store can serve; nil means healthy.
type Health func(ctx context.Context) error

// Store is what the server uses of a store: what the admin API and the
// status pages read and replay (ui.Store), what Stats counts into and
// reads, what /metrics reads, the events the stream hub follows, and the
// status page's sessions.
type Store interface {
	ui.Store
	app.StatsStore
	app.GaugeStore
	app.StreamHubStore
	app.SessionStore
}

// Deps are what the server serves from.
type Deps struct {
	Receiver *receive.Receiver
	// Quarantine holds the requests the sources refused for their
	// signature (nil: the quarantine's API answers 404).
	Quarantine app.QuarantineStore
	// Store backs the admin API and the status pages.
	Store Store
	// Wake tells the dispatcher that replayed work is due.
	Wake func()
	// Health backs /healthz.
	Health Health
	// Backup returns a consistent copy of the data file, open at its start;
	// the server closes it.
	Backup func() (*os.File, int64, error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Access checks passwords (under the limits of guard.go) and tokens,
	// and says whether a session or cached credential still holds (nil:
	// nobody gets in).
	Access *access.Service
	// LimitedDelay holds a 429 to a login over the limits (0: the
	// LimitedDelay constant); tests shorten it.
	LimitedDelay time.Duration
	// Stats feeds the overview and /api/v1/stats (may be nil in tests).
	Stats *app.Stats
	// Metrics is what /metrics serves (nil: New builds it over Stats,
	// which then reports to it).
	Metrics *metrics.Prometheus
	// ReadTimeout bounds reading one request, headers and body (0: the
	// ReadTimeout constant); tests shorten it.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing one answer (0: the WriteTimeout
	// constant); tests shorten it.
	WriteTimeout time.Duration
	// LastBackup, when set, puts the newest scheduled backup on the overview.
	LastBackup func() (time.Time, int64, error)
	// Pauser pauses and resumes destinations (nil: the routes answer 404).
	Pauser *app.Pauser
	// Upstream runs and reports the upstream checks (nil: the routes
	// answer 404).
	Upstream app.Upstreams
	// Running is the config in force, read per request, and the last one
	// a reload refused (nil: New's cfg, always).
	Running *app.Running
	// Searches bounds the body searches that run at once, on this node and
	// per caller (nil: app.NewSearchGate's defaults), for the API and the
	// pages alike.
	Searches *app.SearchGate
	// Stream serves GET /api/v1/stream (nil: a hub over Store). Shutdown
	// closes it.
	Stream *stream.Hub
	// Sessions keeps the status page's sessions (nil: kept by Store, their
	// identities checked by Access).
	Sessions *access.Sessions
	// Reload reads the server's config file again and puts it in force, or
	// refuses it, for POST /api/v1/reload (nil: the route answers 404).
	Reload func() app.Reloaded
}

// Server serves hookbox's HTTP endpoints.
type Server struct {
	fiber   *fiber.App
	deps    Deps
	running *app.Running
	// server is the [server] table at start: what it says cannot change
	// while serving (app.Settle), and the edge reads it without a load.
	server   app.ServerConfig
	ui       *ui.UI
	replays  *replay.Service
	sessions *access.Sessions
	guard    *guard
	Logger   *slog.Logger

	// Throttles of the log lines about refused requests and logins.
	refusedLog, failedLog, limitedLog app.Throttle

	// bodies is server.max_body_bytes_total (bodies.go), with the
	// throttle of its refusals' log line.
	bodies    *bodyBudget
	budgetLog app.Throttle

	// handling counts the handlers running, and limits the listeners
	// Limit made: Shutdown closes their connections once no handler runs.
	handling atomic.Int64
	draining atomic.Bool // Shutdown began: every answer says Connection: close
	limitsMu sync.Mutex
	limits   []*limitListener
}

// New builds the server for cfg.
func New(cfg *app.Config, deps Deps) *Server {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Wake == nil {
		deps.Wake = func() {}
	}
	if deps.ReadTimeout <= 0 {
		deps.ReadTimeout = ReadTimeout
	}
	if deps.WriteTimeout <= 0 {
		deps.WriteTimeout = WriteTimeout
	}
	if deps.LimitedDelay <= 0 {
		deps.LimitedDelay = LimitedDelay
	}
	if deps.Access == nil {
		deps.Access = access.Fixed("", "")
	}
	if deps.Stats == nil {
		deps.Stats = app.NewStats(cfg, deps.Store, deps.Now)
	}
	if deps.Metrics == nil {
		deps.Metrics = metrics.New(deps.Stats, deps.Store)
	}
	if deps.Running == nil {
		deps.Running = app.NewRunning(cfg, deps.Now())
	}
	if deps.Searches == nil {
		deps.Searches = app.NewSearchGate(0, 0)
	}
	if deps.Stream == nil {
		deps.Stream = stream.NewHub(deps.Store)
	}
	if deps.Sessions == nil {
		deps.Sessions = access.NewSessions(deps.Store, deps.Access)
		deps.Sessions.Now = deps.Now
	}
	s := &Server{
		deps:     deps,
		running:  deps.Running,
		server:   cfg.Server,
		sessions: deps.Sessions,
		guard:    newGuard(deps.Access.CheckPassword, deps.Access.Current, deps.Now),
		bodies:   newBodyBudget(cfg.Server.MaxBodyBytesTotal),
		Logger:   slog.With("component", "http"),
		replays:  &replay.Service{Store: deps.Store, Searches: deps.Searches, Now: deps.Now, Wake: deps.Wake},
	}
	s.ui = ui.New(ui.Deps{Running: deps.Running, Store: deps.Store, Stats: deps.Stats, Wake: deps.Wake, Now: deps.Now,
		LastBackup: deps.LastBackup, Pauser: deps.Pauser, Access: deps.Access, Searches: deps.Searches, Upstream: deps.Upstream,
		Quarantine: deps.Quarantine, Recheck: recheckOf(deps.Receiver)})
	s.ui.SetWho(s.who)
	s.fiber = fiber.New(fiber.Config{
		BodyLimit:      cfg.Server.MaxBodyBytes,
		ReadTimeout:    deps.ReadTimeout,
		WriteTimeout:   deps.WriteTimeout,
		IdleTimeout:    IdleTimeout,
		ReadBufferSize: ReadBufferSize,
		// Bodies are read as they arrive, by readBodies (bodies.go),
		// never reserved at their declared length.
		StreamRequestBody: true,
		// Limit bounds the connections; fasthttp's own bound sits above it,
		// since a closed connection frees its place in Limit a moment
		// before its worker is free, and fasthttp refuses past its bound
		// by writing on the connection in its accept loop (a TLS
		// handshake there, with no deadline).
		Concurrency: 2 * cfg.Server.MaxConnections,
		// Every string Fiber hands out (params, headers, query, cookies)
		// is a copy: a view into a buffer that the connection's next
		// request overwrites cannot outlive a handler by mistake (a
		// Prometheus label once became "rics"). Bytes taken from fasthttp
		// directly are copied where they are kept.
		Immutable: true,
		// Multipart bodies stay bytes: pre-parsed, they would leave
		// nothing to verify (and go to temporary files).
		DisablePreParseMultipartForm: true,
		DisableStartupMessage:        true,
		ErrorHandler:                 s.handleError,
		AppName:                      "hookbox",
		// Fiber's own helpers (Protocol, IP, Hostname) never trust
		// forwarded headers; client and scheme read them from the trusted
		// proxies of server.trusted_proxies only.
		EnableTrustedProxyCheck: true,
	})
	srv := s.fiber.Server()
	srv.Handler = s.readBodies(srv.Handler)
	srv.Handler = s.drain(srv.Handler)
	s.fiber.Use(s.track, recover.New(), s.edge)
	s.fiber.Post("/in/:source", s.handleInbound)
	s.fiber.Get("/healthz", s.handleHealth)
	s.fiber.Use("/static", s.securityHeaders, filesystem.New(filesystem.Config{Root: http.FS(ui.Static()), MaxAge: 3600}))
	s.fiber.Get("/login", s.securityHeaders, s.handleLoginPage)
	s.fiber.Post("/login", s.securityHeaders, s.handleLogin)
	s.fiber.Post("/logout", s.securityHeaders, s.requireAuth, s.handleLogout)
	exported := adaptor.HTTPHandler(deps.Metrics.Handler())
	if cfg.Status.MetricsPublic {
		s.fiber.Get("/metrics", exported)
	} else {
		s.fiber.Get("/metrics", s.requireAuth, s.authorize(ruleOf(fiber.MethodGet, "/metrics")), exported)
	}
	s.routeAPI(s.fiber.Group("/api/v1", s.securityHeaders, s.requireAuth))
	s.ui.Mount(func(method, path string, h fiber.Handler) {
		s.fiber.Add(method, path, s.securityHeaders, s.requireAuth, s.authorize(ruleOf(method, path)), h)
	})
	return s
}

// config returns the config in force. What cannot change while serving
// (listen, TLS, body and connection limits) keeps its start value in
// every config put in force (app.Settle).
func (s *Server) config() *app.Config { return s.running.Config() }

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.fiber.Listener(ln) }

// idleGrace is how long Shutdown lets the connections kept alive bring
// their next request (answered with Connection: close) before it closes
// the ones that sent nothing.
const idleGrace = time.Second

// Shutdown stops accepting and lets the handlers running finish until ctx
// is done. It closes the listeners first: on a socket that the service
// manager passed (and still holds), the kernel queues new connections
// for the next process. From then on every answer says Connection:
// close, and for idleGrace the connections kept alive may still bring a
// request, so a sender that keeps its connection reconnects, to the
// next process, instead of finding it closed under its request. fasthttp
// alone would wait for every connection that has sent nothing yet (it
// counts a new connection as busy from its accept), up to the read
// timeout: a client that holds a silent connection open would hold the
// stop. So once idleGrace has passed and no handler runs, the
// connections Limit handed out are closed; a request cut so was not
// answered, and its sender sends it again.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.deps.Stream != nil {
		s.deps.Stream.Close() // streams end now, not at their next ping
	}
	s.draining.Store(true)
	s.eachLimit((*limitListener).Close)
	grace := time.NewTimer(idleGrace)
	defer grace.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.openConns() > 0 {
		select {
		case <-ctx.Done():
		case <-grace.C:
		case <-tick.C:
			continue
		}
		break
	}
	done := make(chan error, 1)
	go func() { done <- s.fiber.ShutdownWithContext(ctx) }()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if s.handling.Load() == 0 {
				s.eachLimit((*limitListener).closeAll)
			}
		}
	}
}

// drain says Connection: close in every answer once Shutdown began.
func (s *Server) drain(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		next(ctx)
		if s.draining.Load() {
			ctx.SetConnectionClose()
		}
	}
}

// track counts the handlers running, for Shutdown.
func (s *Server) track(c *fiber.Ctx) error {
	s.handling.Add(1)
	defer s.handling.Add(-1)
	return c.Next()
}

// eachLimit calls f on every listener Limit made.
func (s *Server) eachLimit(f func(*limitListener) error) {
	s.limitsMu.Lock()
	defer s.limitsMu.Unlock()
	for _, l := range s.limits {
		f(l)
	}
}

// openConns counts the connections the listeners of Limit handed out
// and that are still open.
func (s *Server) openConns() int {
	n := 0
	s.eachLimit(func(l *limitListener) error {
		l.mu.Lock()
		n += l.open
		l.mu.Unlock()
		return nil
	})
	return n
}

// Access is who may log in, for tests.
func (s *Server) Access() *access.Service { return s.deps.Access }

// App exposes the Fiber app to tests (app.Test).
func (s *Server) App() *fiber.App { return s.fiber }

// answer is the JSON body of every /in/ response.
type answer struct {
	Status string `json:"status"`
	ID     string `json:"id,omitempty"`
	Error  string `json:"error,omitempty"`
}

func (s *Server) handleInbound(c *fiber.Ctx) error {
	// The body exactly as received (edge refused any Content-Encoding;
	// Fiber's Ctx body helper would inflate it): only read during this
	// call, the store copies what it keeps.
	req := c.Request()
	in := &app.Inbound{Body: req.Body(), Header: make([]app.HeaderField, 0, req.Header.Len()), Client: s.client(c).String()}
	req.Header.VisitAll(func(k, v []byte) {
		in.Header = append(in.Header, app.HeaderField{Name: string(k), Value: string(v)})
	})
	res, err := s.deps.Receiver.Receive(c.UserContext(), c.Params("source"), in)
	if err != nil {
		return s.sendError(c, err)
	}
	return c.JSON(answer{Status: res.Outcome.String(), ID: res.ID})
}

// degraded is /healthz's answer while commits fail: since when, and how
// many webhooks were refused; the cause is on the status page (it may name
// paths), not here.
type degraded struct {
	Status  string    `json:"status"`
	Error   string    `json:"error"`
	Since   time.Time `json:"since"`
	Refused uint64    `json:"refused"`
}

func (s *Server) handleHealth(c *fiber.Ctx) error {
	if err := s.deps.Health(c.UserContext()); err != nil {
		var se *app.StorageError
		if errors.As(err, &se) { // logged where it happens, at most once a second
			return c.Status(fiber.StatusServiceUnavailable).JSON(degraded{Status: "degraded",
				Error: "storage writes are failing: webhooks get 503", Since: se.Since.UTC(), Refused: se.Refused})
		}
		s.Logger.Error("health check failed", slog.Any("error", err))
		return c.Status(fiber.StatusServiceUnavailable).JSON(answer{Status: "unavailable"})
	}
	return c.JSON(answer{Status: "ok"})
}

// statusOf maps the domain's error codes to HTTP status codes.
var statusOf = map[string]int{
	app.ENOTFOUND:     fiber.StatusNotFound,
	app.EUNAUTHORIZED: fiber.StatusUnauthorized,
	app.EINVALID:      fiber.StatusBadRequest,
	app.ECONFLICT:     fiber.StatusConflict,
	app.EUNAVAILABLE:  fiber.StatusServiceUnavailable,
	app.EINTERNAL:     fiber.StatusInternalServerError,
	app.EFORBIDDEN:    fiber.StatusForbidden,
	app.EBUSY:         fiber.StatusTooManyRequests,
}

func (s *Server) sendError(c *fiber.Ctx, err error) error {
	code := app.ErrorCode(err)
	status := statusOf[code]
	switch code {
	case app.EUNAVAILABLE:
		c.Set(fiber.HeaderRetryAfter, "5")
	case app.EBUSY:
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(app.SearchRetryAfter))
	}
	c.Locals(errorLocal, app.ErrorMessage(err)) // for the audit entry
	return c.Status(status).JSON(answer{Status: "error", Error: app.ErrorMessage(err)})
}

// errorLocal keeps the message of an error answer in c.Locals.
const errorLocal = "error.message"

// handleError answers errors raised outside the handlers (body too large,
// unknown route, wrong method, panics) with fixed texts, never err.Error()
// of an internal error.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	status, msg := fiber.StatusInternalServerError, "internal error"
	if errors.As(err, &fe) {
		status = fe.Code
		switch status {
		case fiber.StatusRequestEntityTooLarge:
			msg = "body larger than max_body_bytes"
		case fiber.StatusNotFound:
			msg = "not found"
		case fiber.StatusMethodNotAllowed:
			msg = "method not allowed"
		case fiber.StatusRequestHeaderFieldsTooLarge:
			msg = "request headers too large"
		case fiber.StatusBadRequest:
			msg = "bad request"
		case fiber.StatusUnauthorized:
			msg = "login required"
		case fiber.StatusRequestTimeout:
			msg = "request timeout"
		default:
			msg = fiber.NewError(status).Message // the standard reason phrase
			if status >= 500 {
				msg = "internal error"
				s.Logger.Error("request failed", "path", c.Path(), slog.Any("error", err))
			}
		}
	} else {
		s.Logger.Error("request failed", "path", c.Path(), slog.Any("error", err))
	}
	return c.Status(status).JSON(answer{Status: "error", Error: msg})
}
