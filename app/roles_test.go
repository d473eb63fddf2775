package app_test

import (
	"strings"
	"testing"

	"hookbox/app"
)

// TestRoles_Permit: the table says who may; a refusal names the role, the
// action and who may; a token never changes users or tokens.
func TestRoles_Permit(t *testing.T) {
	for _, tt := range []struct {
		role  app.Role
		token bool
		a     app.Action
		want  string
	}{
		{app.RoleViewer, false, app.ActReplay, "your role (viewer) may not replay deliveries: an operator or admin may"},
		{app.RoleOperator, false, app.ActDownloadBackup, "your role (operator) may not download backups: an admin may"},
		{app.RoleOperator, false, app.ActReload, "your role (operator) may not reload the config: an admin may"},
		{app.RoleAdmin, true, app.ActReload, ""},
		{app.RoleAdmin, true, app.ActCreateToken, "a token cannot create tokens or users, nor change them: an admin user may create tokens"},
		{app.RoleNone, false, app.ActReadEvents, "your role (none) may not read events: a viewer, operator or admin may"},
		{app.RoleAdmin, false, app.ActCreateToken, ""},
		{app.RoleOperator, true, app.ActReplay, ""},
		{app.RoleAdmin, false, app.Action("format.disk"), `"format.disk" is no action anyone may do`},
	} {
		got := ""
		if err := app.Permit(tt.role, tt.token, tt.a); err != nil {
			got = app.ErrorMessage(err)
			if app.ErrorCode(err) != app.EFORBIDDEN {
				t.Errorf("%s %v %s: code %s", tt.role, tt.token, tt.a, app.ErrorCode(err))
			}
		}
		if got != tt.want || app.Permits(tt.role, tt.token, tt.a) != (tt.want == "") {
			t.Errorf("Permit(%s, token %v, %s) = %q; want %q", tt.role, tt.token, tt.a, got, tt.want)
		}
	}
}

// TestRoles_Table: each action once, with a role and words, and the help
// names every action.
func TestRoles_Table(t *testing.T) {
	seen := map[app.Action]bool{}
	help := strings.Join(strings.Fields(app.RolesHelp("")), " ")
	for _, a := range app.Actions() {
		r, ok := a.Rule()
		if !ok || seen[a] || r.Role == app.RoleNone || r.Doing == "" || a.Role() != r.Role {
			t.Errorf("%q: %+v %v (twice: %v)", a, r, ok, seen[a])
		}
		seen[a] = true
		if !strings.Contains(help, r.Doing) {
			t.Errorf("the help does not name %q:\n%s", r.Doing, app.RolesHelp(""))
		}
	}
}
