package web

import (
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/config"
)

// Every route the server registers has an entry in routeRules or
// publicRoutes, and every entry is registered: a new route without a role
// fails here (and panics at registration when it goes through route).
func TestRoutes_EveryRouteHasARole(t *testing.T) {
	cfg, err := config.Parse("roles.toml", "[status]\nuser = \"ops\"\npassword = \"pw-1234\"\n", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg, Deps{Access: access.Fixed("ops", "pw-1234")})
	seen := map[string]bool{}
	for _, r := range s.App().GetRoutes(true) {
		if r.Method == fiber.MethodHead || strings.HasPrefix(r.Path, "/static") {
			continue
		}
		key := r.Method + " " + r.Path
		seen[key] = true
		if _, ok := routeRules[key]; !ok && !publicRoutes[key] {
			t.Errorf("route %s has no role in routeRules (roles.go)", key)
		}
	}
	for key := range routeRules {
		if !seen[key] {
			t.Errorf("routeRules names %s, which is not registered", key)
		}
	}
}

// A refusal says whose role, what, and who may.
func TestRoutes_Refusal(t *testing.T) {
	for _, tt := range []struct {
		id   app.Identity
		rule rule
		want string
	}{
		{app.Identity{Name: "v", Role: app.RoleViewer}, does(app.ActReplay), "your role (viewer) may not replay deliveries: an operator or admin may"},
		{app.Identity{Name: "o", Role: app.RoleOperator}, does(app.ActDownloadBackup), "your role (operator) may not download backups: an admin may"},
		{app.Identity{Name: "ci", Role: app.RoleAdmin, Token: true}, does(app.ActCreateToken), "a token cannot create tokens or users, nor change them: an admin user may create tokens"},
		{app.Identity{}, does(app.ActReadEvents), "your role (none) may not read events: a viewer, operator or admin may"},
		{app.Identity{Name: "a", Role: app.RoleAdmin}, does(app.ActCreateToken), ""},
		{app.Identity{Name: "o", Role: app.RoleOperator, Token: true}, does(app.ActReplay), ""},
	} {
		err := allowed(tt.id, tt.rule)
		got := ""
		if err != nil {
			got = app.ErrorMessage(err)
			if app.ErrorCode(err) != app.EFORBIDDEN {
				t.Errorf("%+v: code %s; want forbidden", tt.id, app.ErrorCode(err))
			}
		}
		if got != tt.want {
			t.Errorf("%+v on %q: %q; want %q", tt.id, tt.rule.action, got, tt.want)
		}
	}
}

// Every route's role comes from app's table: each route names an action
// of it, and an audited route records its action under the action's name.
func TestRoutes_ActionsFromTheTable(t *testing.T) {
	for key, r := range routeRules {
		if _, ok := r.action.Rule(); !ok {
			t.Errorf("route %s does %q, which app's table of roles does not know", key, r.action)
		}
	}
	used := map[app.Action]bool{}
	for _, r := range routeRules {
		used[r.action] = true
	}
	for _, a := range app.Actions() {
		if !used[a] {
			t.Errorf("app's table names %q, which no route does", a)
		}
	}
}
