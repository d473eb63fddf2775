// Roles per route, written once: every route the server registers behind
// a login has an entry here, with the weakest role that may use it and
// whether a token may. Registering a route without one panics.

package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
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
}

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
	"GET /metrics":                           viewer("read the metrics"),
	"POST /api/v1/dead-letters/replay":       operator("replay dead letters"),
	"POST /api/v1/dead-letters/:id/replay":   operator("replay deliveries"),
	"POST /api/v1/deliveries/:id/replay":     operator("replay deliveries"),
	"POST /api/v1/replay":                    operator("replay deliveries"),
	"POST /api/v1/deliveries/:id/retry":      operator("retry deliveries"),
	"POST /api/v1/destinations/:name/retry":  operator("retry deliveries"),
	"POST /api/v1/destinations/:name/pause":  operator("pause destinations"),
	"POST /api/v1/destinations/:name/resume": operator("resume destinations"),
	"GET /api/v1/backup":                     admin("download backups"),

	// The pages.
	"GET /":                           viewer("see the status page"),
	"GET /events":                     viewer("see events"),
	"GET /events/:seq":                viewer("see events"),
	"GET /dead-letters":               viewer("see dead letters"),
	"GET /config":                     viewer("see the config"),
	"POST /dead-letters/replay":       operator("replay dead letters"),
	"POST /deliveries/:id/replay":     operator("replay deliveries"),
	"POST /deliveries/:id/retry":      operator("retry deliveries"),
	"POST /destinations/:name/retry":  operator("retry deliveries"),
	"POST /replay":                    operator("replay deliveries"),
	"POST /destinations/:name/pause":  operator("pause destinations"),
	"POST /destinations/:name/resume": operator("resume destinations"),
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
// use the route of r: 403 with a sentence.
func (s *Server) authorize(r rule) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, _ := c.Locals("identity").(app.Identity)
		if err := allowed(id, r); err != nil {
			return s.sendError(c, err)
		}
		return c.Next()
	}
}

// allowed reports, as an Error EFORBIDDEN with a sentence, why id may not
// do what r guards; nil when it may.
func allowed(id app.Identity, r rule) error {
	if id.Token && r.noToken {
		return app.Errorf(app.EFORBIDDEN, "a token cannot %s: an admin user may", r.doing)
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
