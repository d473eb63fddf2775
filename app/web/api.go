package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
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
	s.route(r, "/api/v1", fiber.MethodPost, "/deliveries/replay", s.handleReplayEach) // by id or one event's (replayeach.go)
	s.route(r, "/api/v1", fiber.MethodPost, "/replay", s.handleReplayQuery)           // replay by query (replay.go)
	s.route(r, "/api/v1", fiber.MethodGet, "/backup", s.handleBackup)
	s.route(r, "/api/v1", fiber.MethodGet, "/stats", s.handleStats)
	s.route(r, "/api/v1", fiber.MethodGet, "/config", s.handleConfig)  // the config in force, and a refused one (config.go)
	s.route(r, "/api/v1", fiber.MethodPost, "/reload", s.handleReload) // `hookbox reload` (config.go)
	s.route(r, "/api/v1", fiber.MethodGet, "/events", s.handleEvents)
	s.route(r, "/api/v1", fiber.MethodGet, "/events/:seq", s.handleEvent)
	s.route(r, "/api/v1", fiber.MethodGet, "/events/:seq/body", s.handleEventBody)
	s.route(r, "/api/v1", fiber.MethodGet, "/stream", s.handleStream) // live events for `hookbox listen` (stream.go)
	// Retry now (issue 28): retry.go.
	s.route(r, "/api/v1", fiber.MethodPost, "/deliveries/:id/retry", s.handleRetryDelivery)
	s.route(r, "/api/v1", fiber.MethodPost, "/destinations/:name/retry", s.handleRetryDestination)
	// Destinations: list, pause, resume (destinations.go).
	s.routeDestinations(r)
	s.routeUpstream(r)
	// Team access: the audit log, users and tokens (team.go).
	s.routeTeam(r)
	// The sources' quarantines: list, recheck, clear (quarantine.go).
	s.routeQuarantine(r)
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

// utc is t in UTC, so every time in an answer reads alike (RFC 3339,
// "Z"); the zero time stays zero, for omitzero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
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
