// The action of each route: every route the server registers behind a
// login has an entry here, naming the action of app's table of roles
// (app/roles.go), which alone says who may. Registering a route without
// one panics.

package web

import (
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/ui"
)

// rule is what a route does: the action of app's table of roles (which
// says who may), and what the audit log records of it.
type rule struct {
	// action is what the route does; app's table says who may.
	action app.Action
	// audited records the action (its name is its audit action) once per
	// request, refusals included.
	audited bool
	// deniedOnly records only refusals: what the handler does, Access
	// records itself (the changes of users and tokens).
	deniedOnly bool
}

// audit returns r recording its action.
func (r rule) audit() rule { r.audited = true; return r }

// denied returns r recording only its refusals.
func (r rule) denied() rule { r.audited, r.deniedOnly = true, true; return r }

// does is the rule of a route that does a, not audited.
func does(a app.Action) rule { return rule{action: a} }

// routeRules maps "METHOD /path" (as registered in Fiber) to the action it
// does; what the audit log records of it is the action's (audits). Who may
// do it is app's table (app/roles.go), never written here.
var routeRules = rulesOf(map[string]app.Action{
	// The read API and /metrics.
	"GET /api/v1/dead-letters":                      app.ActReadDeadLetters,
	"GET /api/v1/deliveries/:id":                    app.ActReadDeliveries,
	"GET /api/v1/stats":                             app.ActReadStats,
	"GET /api/v1/config":                            app.ActReadConfig,
	"GET /api/v1/events":                            app.ActReadEvents,
	"GET /api/v1/events/:seq":                       app.ActReadEvents,
	"GET /api/v1/events/:seq/body":                  app.ActReadEvents,
	"GET /api/v1/destinations":                      app.ActReadDestinations,
	"GET /api/v1/stream":                            app.ActStream,
	"GET /metrics":                                  app.ActReadMetrics,
	"POST /api/v1/dead-letters/replay":              app.ActReplayDead,
	"POST /api/v1/dead-letters/:id/replay":          app.ActReplay,
	"POST /api/v1/deliveries/:id/replay":            app.ActReplay,
	"POST /api/v1/deliveries/replay":                app.ActReplay,
	"POST /api/v1/replay":                           app.ActReplayQuery,
	"POST /api/v1/deliveries/:id/retry":             app.ActRetry,
	"POST /api/v1/destinations/:name/retry":         app.ActRetryDestination,
	"POST /api/v1/destinations/:name/pause":         app.ActPause,
	"POST /api/v1/destinations/:name/resume":        app.ActResume,
	"GET /api/v1/backup":                            app.ActDownloadBackup,
	"GET /api/v1/sources/:name/upstream":            app.ActReadUpstream,
	"POST /api/v1/sources/:name/upstream/check":     app.ActCheckUpstream,
	"POST /api/v1/upstream/check":                   app.ActCheckUpstream,
	"POST /api/v1/reload":                           app.ActReload,
	"GET /api/v1/sources/:name/quarantine":          app.ActReadQuarantine,
	"POST /api/v1/sources/:name/quarantine/recheck": app.ActRecheck,
	"DELETE /api/v1/sources/:name/quarantine":       app.ActClearQuarantine,

	// Team access. Access records the changes itself; the routes, their
	// refusals.
	"GET /api/v1/audit":                 app.ActReadAudit,
	"GET /api/v1/users":                 app.ActListUsers,
	"GET /api/v1/tokens":                app.ActListTokens,
	"POST /api/v1/users":                app.ActAddUser,
	"DELETE /api/v1/users/:name":        app.ActRemoveUser,
	"POST /api/v1/users/:name/role":     app.ActChangeRole,
	"POST /api/v1/users/:name/password": app.ActChangePassword,
	"POST /api/v1/tokens":               app.ActCreateToken,
	"DELETE /api/v1/tokens/:name":       app.ActRevokeToken,

	// The pages (tokens are never taken there).
	"GET /":                                  app.ActSeeOverview,
	"GET /destinations":                      app.ActReadDestinations,
	"GET /events":                            app.ActReadEvents,
	"GET /events/:seq":                       app.ActReadEvents,
	"GET /dead-letters":                      app.ActReadDeadLetters,
	"GET /config":                            app.ActReadConfig,
	"GET /quarantine":                        app.ActReadQuarantine,
	"POST /sources/:name/quarantine/recheck": app.ActRecheck,
	"POST /sources/:name/quarantine/clear":   app.ActClearQuarantine,
	"POST /dead-letters/replay":              app.ActReplayDead,
	"POST /deliveries/:id/replay":            app.ActReplay,
	"POST /deliveries/:id/retry":             app.ActRetry,
	"POST /destinations/:name/retry":         app.ActRetryDestination,
	"POST /replay":                           app.ActReplayQuery,
	"POST /destinations/:name/pause":         app.ActPause,
	"POST /destinations/:name/resume":        app.ActResume,
	"GET /audit":                             app.ActReadAudit,
	"GET /team":                              app.ActManageTeam,
	"POST /team/users":                       app.ActAddUser,
	"POST /team/users/:name/role":            app.ActChangeRole,
	"POST /team/users/:name/remove":          app.ActRemoveUser,
	"POST /team/tokens":                      app.ActCreateToken,
	"POST /team/tokens/:name/revoke":         app.ActRevokeToken,
})

// audits says what the audit log records of each audited action, whichever
// route does it (the API's or a page's form): every request, refusals
// included (rule.audit); or only the refusals (rule.denied), where Access
// records what the handler did itself (the changes of users and tokens).
// An action not here is not audited.
var audits = map[app.Action]func(rule) rule{
	app.ActReplay:           rule.audit,
	app.ActReplayDead:       rule.audit,
	app.ActReplayQuery:      rule.audit,
	app.ActRetry:            rule.audit,
	app.ActRetryDestination: rule.audit,
	app.ActPause:            rule.audit,
	app.ActResume:           rule.audit,
	app.ActCheckUpstream:    rule.audit,
	app.ActRecheck:          rule.audit,
	app.ActClearQuarantine:  rule.audit,
	app.ActDownloadBackup:   rule.audit,
	app.ActReload:           rule.audit,
	app.ActAddUser:          rule.denied,
	app.ActRemoveUser:       rule.denied,
	app.ActChangeRole:       rule.denied,
	app.ActChangePassword:   rule.denied,
	app.ActCreateToken:      rule.denied,
	app.ActRevokeToken:      rule.denied,
}

// rulesOf gives each route of actions its action's rule.
func rulesOf(actions map[string]app.Action) map[string]rule {
	rules := make(map[string]rule, len(actions))
	for route, a := range actions {
		r := does(a)
		if audit, ok := audits[a]; ok {
			r = audit(r)
		}
		rules[route] = r
	}
	return rules
}

// publicRoutes are the routes anyone may use, or anyone logged in
// (/logout): they have no role.
var publicRoutes = map[string]bool{
	"POST /in/:source": true,
	"GET /healthz":     true,
	"GET /login":       true,
	"POST /login":      true,
	"POST /logout":     true,
}

// ruleOf returns the rule of a route; it panics when there is none, so
// that a route nobody gave a role cannot be served.
func ruleOf(method, path string) rule {
	r, ok := routeRules[method+" "+path]
	if !ok {
		panic(fmt.Sprintf("web: route %s %s has no entry in routeRules (roles.go)", method, path))
	}
	return r
}

// authorize refuses a request whose identity (set by requireAuth) may not
// use the route of r: 403 with a sentence. A route with an audit action
// records one entry: the refusal, or what the handler did.
func (s *Server) authorize(r rule) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, _ := c.Locals("identity").(app.Identity)
		if err := allowed(id, r); err != nil {
			if r.audited {
				e := s.who(c).Entry(string(r.action), s.auditTarget(c), "", nil)
				e.Result, e.Detail = app.AuditDenied, app.ErrorMessage(err)
				s.deps.Access.Record(c.UserContext(), e)
			}
			return s.sendError(c, err)
		}
		if !r.audited || r.deniedOnly {
			return c.Next()
		}
		err := c.Next()
		if skip, _ := c.Locals(ui.AuditSkip).(bool); skip {
			return err
		}
		detail, _ := c.Locals(ui.AuditDetail).(string)
		s.deps.Access.Record(c.UserContext(), s.who(c).Entry(string(r.action), s.auditTarget(c), detail, handlerError(c, err)))
		return err
	}
}

// auditTarget is what a request acts on: the handler's word, else the
// route's delivery id, or the destination, user or token it names. A name
// that is not a destination's is the request's: it is recorded cleaned
// (app.CleanName).
func (s *Server) auditTarget(c *fiber.Ctx) string {
	if t, _ := c.Locals(ui.AuditTarget).(string); t != "" {
		return t
	}
	if id := c.Params("id"); id != "" {
		return "delivery " + app.CleanName(id)
	}
	name := c.Params("name")
	if d := s.config().DestinationByName(name); d != nil {
		return d.Name
	}
	return app.CleanName(name)
}

// handlerError is what a handler's answer says went wrong, as an Error
// whose message may be recorded; nil when it succeeded.
func handlerError(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	switch {
	case errors.As(err, &fe):
		return app.Errorf(app.EINVALID, "%d %s", fe.Code, fe.Message)
	case err != nil:
		return err // recorded as an internal error
	case c.Response().StatusCode() >= 400:
		msg, _ := c.Locals(errorLocal).(string)
		if msg == "" {
			msg = fiber.NewError(c.Response().StatusCode()).Message
		}
		return app.Errorf(app.EINVALID, "%d %s", c.Response().StatusCode(), msg)
	}
	return nil
}

// who is the audit actor of c: its identity, how it logged in, from where.
func (s *Server) who(c *fiber.Ctx) app.Who {
	id, _ := c.Locals("identity").(app.Identity)
	via, _ := c.Locals("via").(string)
	return app.Who{Actor: id.Actor(), Via: via, From: s.clientString(c)}
}

// allowed reports, as an Error EFORBIDDEN with a sentence, why id may not
// do what r guards; nil when it may (app.Permit, on app's table).
func allowed(id app.Identity, r rule) error { return app.Permit(id.Role, id.Token, r.action) }
