// The last admin: a change of users never leaves the store without an
// admin, unless the config's [status] user (always an admin) is there to
// take the store back. Both stores apply the rule inside the transaction
// that demotes or removes, so that two changes at once cannot each see
// the other admin and both go through.

package app

// AdminGuard says whether a change of users must leave the store an admin.
type AdminGuard bool

const (
	// KeepAdmin refuses a change that would leave the store no admin.
	KeepAdmin AdminGuard = true
	// AdminInConfig lets the store's last admin go: the user of [status]
	// password in the config is an admin whatever the store holds.
	AdminInConfig AdminGuard = false
)

// Check returns an Error ECONFLICT, with the reason, when giving the user
// name role (RoleNone: removing it) would leave no admin among admins,
// the names of the store's admins read in the transaction that makes the
// change; nil when the change may go ahead.
func (g AdminGuard) Check(admins []string, name string, role Role) error {
	if g != KeepAdmin || role == RoleAdmin || len(admins) != 1 || admins[0] != name {
		return nil
	}
	if role == RoleNone {
		return Errorf(ECONFLICT, "%s is the last admin and cannot be removed: give another user the admin role first", name)
	}
	return Errorf(ECONFLICT, "%s is the last admin and cannot become %s: give another user the admin role first", name, role)
}
