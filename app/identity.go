// Who a request comes from, and who the audit log names: the values the
// edges (app/web, ui, app/request) read and app/access makes.

package app

// Identity is who a request comes from.
type Identity struct {
	Name string
	Role Role
	// Token says a token, not a user.
	Token bool
	// Fixed says the user of [status] password in the config.
	Fixed bool
	// Local says a Unix user on the box, named by the kernel on the
	// local socket (Name is local:<unix user>): it holds as long as its
	// connection.
	Local bool
	// Stamp is the user's or token's Stamp when the identity was taken:
	// app/access ends it when the store's stamp moves on.
	Stamp uint64
}

// Actor is the identity as the audit log names it: the user's name, or
// "token:NAME".
func (id Identity) Actor() string {
	if id.Token {
		return "token:" + id.Name
	}
	return id.Name
}

// Who is the actor of an audited action: who, how, from where.
type Who struct{ Actor, Via, From string }

// Entry is the audit entry of action on target by w: its result is ok
// when err is nil, else failed with err's client-safe message.
func (w Who) Entry(action, target, detail string, err error) AuditEntry {
	e := AuditEntry{Actor: w.Actor, Via: w.Via, From: w.From, Action: action, Target: target, Detail: detail, Result: AuditOK}
	if err != nil {
		e.Result = AuditFailed
		msg := ErrorMessage(err)
		if ErrorCode(err) == EINTERNAL {
			msg = "internal error (see the log)"
		}
		if e.Detail != "" {
			msg = e.Detail + "; " + msg
		}
		e.Detail = msg
	}
	return e
}
