// Roles per route, written once: every route the server registers behind
// a login has an entry here, with the weakest role that may use it and
// whether a token may. Registering a route without one panics.

package web

import (
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/ui"
)

// rule is what a route needs.
type rule struct {
	// role is the weakest role that may use the route.
	role app.Role
	// noToken refuses tokens (a token cannot create tokens or users).
	noToken bool
	// doing names the action in a refusal: "your role (viewer) may not
	// <doing>".
	doing string
	// action, when set, is the audit action the route records (once per
	// request, refusals included).
	action string
	// deniedOnly records only refusals: what the handler does, Access
	// records itself (the changes of users and tokens).
	deniedOnly bool
}

// audit returns r recording action.
func (r rule) audit(action string) rule { r.action = action; return r }

// denied returns r recording its refusals as action.
func (r rule) denied(action string) rule { r.action, r.deniedOnly = action, true; return r }

var (
	viewer   = func(doing string) rule { return rule{role: app.RoleViewer, doing: doing} }
	operator = func(doing string) rule { return rule{role: app.RoleOperator, doing: doing} }
	admin    = func(doing string) rule { return rule{role: app.RoleAdmin, doing: doing} }
	// adminUser is an admin user, never a token.
	adminUser = func(doing string) rule { return rule{role: app.RoleAdmin, noToken: true, doing: doing} }
)

// routeRules maps "METHOD /path" (as registered in Fiber) to its rule.
var routeRules = map[string]rule{
	// The read API and /metrics.
	"GET /api/v1/dead-letters":               viewer("read dead letters"),
	"GET /api/v1/deliveries/:id":             viewer("read deliveries"),
	"GET /api/v1/stats":                      viewer("read the stats"),
	"GET /api/v1/config":                     viewer("read the config"),
	"GET /api/v1/events":                     viewer("read events"),
	"GET /api/v1/events/:seq":                viewer("read events"),
	"GET /api/v1/events/:seq/body":           viewer("read events"),
	"GET /api/v1/destinations":               viewer("read destinations"),
	"GET /api/v1/stream":                     viewer("stream events"),
	"GET /metrics":                           viewer("read the metrics"),
	"POST /api/v1/dead-letters/replay":       operator("replay dead letters").audit(app.AuditReplayDead),
	"POST /api/v1/dead-letters/:id/replay":   operator("replay deliveries").audit(app.AuditReplay),
	"POST /api/v1/deliveries/:id/replay":     operator("replay deliveries").audit(app.AuditReplay),
	"POST /api/v1/replay":                    operator("replay deliveries").audit(app.AuditReplayQuery),
	"POST /api/v1/deliveries/:id/retry":      operator("retry deliveries").audit(app.AuditRetry),
	"POST /api/v1/destinations/:name/retry":  operator("retry deliveries").audit(app.AuditRetryDest),
	"POST /api/v1/destinations/:name/pause":  operator("pause destinations").audit(app.AuditPause),
	"POST /api/v1/destinations/:name/resume": operator("resume destinations").audit(app.AuditResume),
	"GET /api/v1/backup":                     admin("download backups").audit(app.AuditBackup),

	// Team access: admins read; only admin users change (a token cannot
	// create tokens or users). Access records the changes itself; the
	// table, their refusals.
	"GET /api/v1/audit":                 admin("read the audit log"),
	"GET /api/v1/users":                 admin("list users"),
	"GET /api/v1/tokens":                admin("list tokens"),
	"POST /api/v1/users":                adminUser("add users").denied(app.AuditUserAdd),
	"DELETE /api/v1/users/:name":        adminUser("remove users").denied(app.AuditUserRemove),
	"POST /api/v1/users/:name/role":     adminUser("change roles").denied(app.AuditUserRole),
	"POST /api/v1/users/:name/password": adminUser("change passwords").denied(app.AuditUserPassword),
	"POST /api/v1/tokens":               adminUser("create tokens").denied(app.AuditTokenCreate),
	"DELETE /api/v1/tokens/:name":       adminUser("revoke tokens").denied(app.AuditTokenRevoke),

	// The pages.
	"GET /":                           viewer("see the status page"),
	"GET /events":                     viewer("see events"),
	"GET /events/:seq":                viewer("see events"),
	"GET /dead-letters":               viewer("see dead letters"),
	"GET /config":                     viewer("see the config"),
	"POST /dead-letters/replay":       operator("replay dead letters").audit(app.AuditReplayDead),
	"POST /deliveries/:id/replay":     operator("replay deliveries").audit(app.AuditReplay),
	"POST /deliveries/:id/retry":      operator("retry deliveries").audit(app.AuditRetry),
	"POST /destinations/:name/retry":  operator("retry deliveries").audit(app.AuditRetryDest),
	"POST /replay":                    operator("replay deliveries").audit(app.AuditReplayQuery),
	"POST /destinations/:name/pause":  operator("pause destinations").audit(app.AuditPause),
	"GET /audit":                      adminUser("read the audit log"),
	"GET /team":                       adminUser("manage users and tokens"),
	"POST /team/users":                adminUser("add users").denied(app.AuditUserAdd),
	"POST /team/users/:name/role":     adminUser("change roles").denied(app.AuditUserRole),
	"POST /team/users/:name/remove":   adminUser("remove users").denied(app.AuditUserRemove),
	"POST /team/tokens":               adminUser("create tokens").denied(app.AuditTokenCreate),
	"POST /team/tokens/:name/revoke":  adminUser("revoke tokens").denied(app.AuditTokenRevoke),
	"POST /destinations/:name/resume": operator("resume destinations").audit(app.AuditResume),
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
			if r.action != "" {
				e := s.who(c).Entry(r.action, s.auditTarget(c), "", nil)
				e.Result, e.Detail = app.AuditDenied, app.ErrorMessage(err)
				s.deps.Access.Record(c.UserContext(), e)
			}
			return s.sendError(c, err)
		}
		if r.action == "" || r.deniedOnly {
			return c.Next()
		}
		err := c.Next()
		if skip, _ := c.Locals(ui.AuditSkip).(bool); skip {
			return err
		}
		detail, _ := c.Locals(ui.AuditDetail).(string)
		s.deps.Access.Record(c.UserContext(), s.who(c).Entry(r.action, s.auditTarget(c), detail, handlerError(c, err)))
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
	return app.Who{Actor: id.Actor(), Via: via, From: s.client(c).String()}
}

// allowed reports, as an Error EFORBIDDEN with a sentence, why id may not
// do what r guards; nil when it may.
func allowed(id app.Identity, r rule) error {
	if id.Token && r.noToken {
		return app.Errorf(app.EFORBIDDEN, "a token cannot create tokens or users, nor change them: an admin user may %s", r.doing)
	}
	if id.Role.Allows(r.role) {
		return nil
	}
	who := "an admin may"
	if r.role == app.RoleOperator {
		who = "an operator or admin may"
	} else if r.role == app.RoleViewer {
		who = "a viewer, operator or admin may"
	}
	name := id.Role.String()
	if name == "" {
		name = "none"
	}
	return app.Errorf(app.EFORBIDDEN, "your role (%s) may not %s: %s", name, r.doing, who)
}

// may reports whether the request's identity may use the route method
// path (for the pages' buttons).
func may(c *fiber.Ctx, method, path string) bool {
	id, _ := c.Locals("identity").(app.Identity)
	return allowed(id, ruleOf(method, path)) == nil
}
