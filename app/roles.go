// The role of each action, written once. The API's routes (app/web), the
// pages' buttons and links (ui) and the command line's help (app/cli) all
// read this table; none of them says again which role may do what.

package app

import "strings"

// Action is something a caller may be allowed to do: the key of the table
// of roles. An action that is audited has the name of its audit action.
type Action string

// The actions, weakest role first.
const (
	// What a viewer may.
	ActSeeOverview      Action = "overview.read"
	ActReadStats        Action = "stats.read"
	ActReadEvents       Action = "events.read"
	ActReadDeliveries   Action = "deliveries.read"
	ActReadDeadLetters  Action = "dead-letters.read"
	ActReadDestinations Action = "destinations.read"
	ActReadConfig       Action = "config.read"
	ActStream           Action = "stream"
	ActReadMetrics      Action = "metrics.read"

	// What an operator may also.
	ActReplay           Action = AuditReplay
	ActReplayDead       Action = AuditReplayDead
	ActReplayQuery      Action = AuditReplayQuery
	ActRetry            Action = AuditRetry
	ActRetryDestination Action = AuditRetryDest
	ActPause            Action = AuditPause
	ActResume           Action = AuditResume
	ActReadUpstream     Action = "upstream.read"
	ActCheckUpstream    Action = AuditUpstream
	ActReadQuarantine   Action = "quarantine.read"
	ActRecheck          Action = AuditQuarantineRecheck
	ActClearQuarantine  Action = AuditQuarantineClear

	// What an admin may also (the changes of users and tokens: an admin
	// user, never a token).
	ActDownloadBackup Action = AuditBackup
	ActReload         Action = AuditConfigReload
	ActReadAudit      Action = "audit.read"
	ActListUsers      Action = "users.list"
	ActListTokens     Action = "tokens.list"
	ActManageTeam     Action = "team"
	ActAddUser        Action = AuditUserAdd
	ActRemoveUser     Action = AuditUserRemove
	ActChangeRole     Action = AuditUserRole
	ActChangePassword Action = AuditUserPassword
	ActCreateToken    Action = AuditTokenCreate
	ActRevokeToken    Action = AuditTokenRevoke
)

// Audited actions, as the audit log names them (AuditEntry.Action).
const (
	AuditLogin        = "login"
	AuditLogout       = "logout"
	AuditReplay       = "replay"       // one delivery
	AuditReplayDead   = "replay.dead"  // every dead letter
	AuditReplayQuery  = "replay.query" // by query, with its query and count
	AuditRetry        = "retry"        // one delivery now
	AuditRetryDest    = "retry.destination"
	AuditPause        = "pause"
	AuditResume       = "resume"
	AuditUserAdd      = "user.add"
	AuditUserRemove   = "user.remove"
	AuditUserRole     = "user.role"
	AuditUserPassword = "user.password"
	AuditTokenCreate  = "token.create"
	AuditTokenRevoke  = "token.revoke"
	AuditConfigReload = "config.reload"
	AuditRestore      = "restore"
	AuditBackup       = "backup.download"
	// AuditUpstream: a check of the providers' side asked for (actor: who
	// asked), and what a check changed or why it failed (UpstreamActor).
	AuditUpstream = "upstream.check"
)

// ActionRule is who may do an action.
type ActionRule struct {
	// Role is the weakest role that may do it.
	Role Role
	// UserOnly refuses tokens, whatever their role: a script's credential
	// cannot mint credentials or lock the people out.
	UserOnly bool
	// Doing names the action in a sentence: "your role (viewer) may not
	// <Doing>".
	Doing string
}

// table is the table: every action, the weakest role that may do it,
// and what it is called, in the order help shows them.
var table = []struct {
	action Action
	rule   ActionRule
}{
	{ActSeeOverview, ActionRule{Role: RoleViewer, Doing: "see the status page"}},
	{ActReadStats, ActionRule{Role: RoleViewer, Doing: "read the stats"}},
	{ActReadEvents, ActionRule{Role: RoleViewer, Doing: "read events"}},
	{ActReadDeliveries, ActionRule{Role: RoleViewer, Doing: "read deliveries"}},
	{ActReadDeadLetters, ActionRule{Role: RoleViewer, Doing: "read dead letters"}},
	{ActReadDestinations, ActionRule{Role: RoleViewer, Doing: "read destinations"}},
	{ActReadConfig, ActionRule{Role: RoleViewer, Doing: "read the config"}},
	{ActStream, ActionRule{Role: RoleViewer, Doing: "stream events"}},
	{ActReadMetrics, ActionRule{Role: RoleViewer, Doing: "read the metrics"}},

	{ActReplay, ActionRule{Role: RoleOperator, Doing: "replay deliveries"}},
	{ActReplayDead, ActionRule{Role: RoleOperator, Doing: "replay dead letters"}},
	{ActReplayQuery, ActionRule{Role: RoleOperator, Doing: "replay deliveries"}},
	{ActRetry, ActionRule{Role: RoleOperator, Doing: "retry deliveries"}},
	{ActRetryDestination, ActionRule{Role: RoleOperator, Doing: "retry deliveries"}},
	{ActPause, ActionRule{Role: RoleOperator, Doing: "pause destinations"}},
	{ActResume, ActionRule{Role: RoleOperator, Doing: "resume destinations"}},
	{ActReadUpstream, ActionRule{Role: RoleOperator, Doing: "read the upstream checks"}},
	{ActCheckUpstream, ActionRule{Role: RoleOperator, Doing: "run the upstream checks"}},
	{ActReadQuarantine, ActionRule{Role: RoleOperator, Doing: "read the quarantine"}},
	{ActRecheck, ActionRule{Role: RoleOperator, Doing: "recheck the quarantine"}},
	{ActClearQuarantine, ActionRule{Role: RoleOperator, Doing: "clear the quarantine"}},

	{ActDownloadBackup, ActionRule{Role: RoleAdmin, Doing: "download backups"}},
	{ActReload, ActionRule{Role: RoleAdmin, Doing: "reload the config"}},
	{ActReadAudit, ActionRule{Role: RoleAdmin, Doing: "read the audit log"}},
	{ActListUsers, ActionRule{Role: RoleAdmin, Doing: "list users"}},
	{ActListTokens, ActionRule{Role: RoleAdmin, Doing: "list tokens"}},
	{ActManageTeam, ActionRule{Role: RoleAdmin, UserOnly: true, Doing: "manage users and tokens"}},
	{ActAddUser, ActionRule{Role: RoleAdmin, UserOnly: true, Doing: "add users"}},
	{ActRemoveUser, ActionRule{Role: RoleAdmin, UserOnly: true, Doing: "remove users"}},
	{ActChangeRole, ActionRule{Role: RoleAdmin, UserOnly: true, Doing: "change roles"}},
	{ActChangePassword, ActionRule{Role: RoleAdmin, UserOnly: true, Doing: "change passwords"}},
	{ActCreateToken, ActionRule{Role: RoleAdmin, UserOnly: true, Doing: "create tokens"}},
	{ActRevokeToken, ActionRule{Role: RoleAdmin, UserOnly: true, Doing: "revoke tokens"}},
}

// actions is table by action.
var actions = func() map[Action]ActionRule {
	m := make(map[Action]ActionRule, len(table))
	for _, e := range table {
		m[e.action] = e.rule
	}
	return m
}()

// Rule returns who may do a; ok is false for an action not in the table.
func (a Action) Rule() (r ActionRule, ok bool) {
	r, ok = actions[a]
	return r, ok
}

// Role is the weakest role that may do a (RoleAdmin for an action not in
// the table, which Permit refuses anyway).
func (a Action) Role() Role {
	if r, ok := actions[a]; ok {
		return r.Role
	}
	return RoleAdmin
}

// Actions returns every action of the table, weakest role first.
func Actions() []Action {
	out := make([]Action, len(table))
	for i, e := range table {
		out[i] = e.action
	}
	return out
}

// Permit reports, as an Error EFORBIDDEN with a sentence that says who
// may, why a caller of role (through a token when token) may not do a; nil
// when it may. An action not in the table is refused.
func Permit(role Role, token bool, a Action) error {
	r, ok := actions[a]
	if !ok {
		return Errorf(EFORBIDDEN, "%q is no action anyone may do", string(a))
	}
	if token && r.UserOnly {
		return Errorf(EFORBIDDEN, "a token cannot create tokens or users, nor change them: an admin user may %s", r.Doing)
	}
	if role.Allows(r.Role) {
		return nil
	}
	name := role.String()
	if name == "" {
		name = "none"
	}
	return Errorf(EFORBIDDEN, "your role (%s) may not %s: %s", name, r.Doing, whoMay(r.Role))
}

// Permits reports whether a caller of role (through a token when token)
// may do a: Permit without the sentence.
func Permits(role Role, token bool, a Action) bool { return Permit(role, token, a) == nil }

// whoMay names the roles that include need.
func whoMay(need Role) string {
	switch need {
	case RoleViewer:
		return "a viewer, operator or admin may"
	case RoleOperator:
		return "an operator or admin may"
	}
	return "an admin may"
}

// RolesHelp describes each role by the actions of the table: what a
// viewer may, what an operator and an admin may also, and what needs an
// admin user rather than a token; lines are indented by indent and
// wrapped before 80 columns.
func RolesHelp(indent string) string {
	var b strings.Builder
	byRole := map[Role][]string{}
	var userOnly []string
	for _, e := range table {
		if e.rule.UserOnly {
			userOnly = appendNew(userOnly, e.rule.Doing)
			continue
		}
		byRole[e.rule.Role] = appendNew(byRole[e.rule.Role], e.rule.Doing)
	}
	line := func(head string, doings []string) {
		cur := indent + head
		for i, d := range doings {
			if i < len(doings)-1 {
				d += ","
			}
			if len(cur)+1+len(d) > 79 {
				b.WriteString(cur + "\n")
				cur = indent + "   "
			}
			cur += " " + d
		}
		b.WriteString(cur + "\n")
	}
	line("viewer may", byRole[RoleViewer])
	line("operator may also", byRole[RoleOperator])
	line("admin may also", byRole[RoleAdmin])
	line("an admin user (never a token) may also", userOnly)
	return b.String()
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
