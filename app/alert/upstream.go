package alert

import (
	"context"

	"hookbox/app"
)

// Upstream sends m, an alert of the upstream checker (app/upstream: a
// subscription_disabled), now, through every channel; the checker keeps
// that it went out so that one episode alerts once. With no channel it
// does nothing and reports no error.
func (a *Alerter) Upstream(ctx context.Context, m app.AlertMessage) error {
	if !a.conf().Enabled() {
		return nil
	}
	if a.conf().page != "" {
		m.Text += " See " + a.conf().page + "."
	}
	return a.send(ctx, m)
}
