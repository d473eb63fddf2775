package access

import (
	"context"

	"hookbox/app"
)

// Audit returns the audit entries q selects, newest first (none when
// nothing is recorded here), cleaned as they are stored (CleanAuditEntry):
// an entry an older hookbox stored with a name as it was sent is shown
// cleaned too.
func (a *Service) Audit(ctx context.Context, q app.AuditQuery) ([]app.AuditEntry, error) {
	if a.audit == nil {
		return nil, nil
	}
	es, err := a.audit.Audit(ctx, q)
	for i := range es {
		es[i] = app.CleanAuditEntry(es[i])
	}
	return es, err
}
