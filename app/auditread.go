package app

import "context"

// Audit returns the audit entries q selects, newest first (none when
// nothing is recorded here).
func (a *Access) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	if a.audit == nil {
		return nil, nil
	}
	return a.audit.Audit(ctx, q)
}
