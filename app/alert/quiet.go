package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"hookbox/app"
)

// The quiet alerts: source_quiet when a source with quiet_after accepted
// nothing for that long, source_active when events come again, once per
// episode (app.SourceQuietAlert). The last accepted event is the store's
// (every node's accepts write it), and the mark of what went out is kept
// in the store (app.SourceQuietMeta), so that a restart does not send an
// alert again. CheckCluster runs them on the node that sends the
// cluster's alerts.

// quietSource is a source watched for quiet.
type quietSource struct {
	name  string
	after time.Duration
}

// quietSources are cfg's sources with quiet_after.
func quietSources(cfg *app.Config) []quietSource {
	var out []quietSource
	for _, s := range cfg.Sources {
		if s.QuietAfter > 0 {
			out = append(out, quietSource{s.Name, s.QuietAfter})
		}
	}
	return out
}

// checkQuiet sends the quiet alerts due now.
func (a *Alerter) checkQuiet(ctx context.Context) {
	sources := a.conf().quiet
	if a.Quiet == nil || len(sources) == 0 {
		return
	}
	now := a.Now()
	if a.watched.IsZero() {
		a.watched = now
	}
	lasts, err := a.Quiet.Lasts(ctx)
	if err != nil {
		a.Logger.Error("read the sources' last events", slog.Any("error", err))
		return
	}
	for _, s := range sources {
		var m app.QuietMark
		raw, err := a.Quiet.Meta(ctx, app.SourceQuietMeta(s.name))
		if err == nil && raw != nil {
			err = json.Unmarshal(raw, &m)
		}
		if err != nil {
			a.Logger.Error("read a source's quiet mark", "source", s.name, slog.Any("error", err))
			continue
		}
		last := lasts[app.Named{Kind: app.SourceAccepted, Name: s.name}].At
		kind, next := app.SourceQuietAlert(last, a.watched, m, now, s.after)
		if kind == "" {
			continue
		}
		if err := a.send(ctx, a.quietMessage(kind, s, last, next, now)); err != nil {
			a.Logger.Error("send alert", "kind", kind, "source", s.name, slog.Any("error", err))
			continue // the next check tries again
		}
		b, _ := json.Marshal(next)
		if err := a.Quiet.SetMeta(ctx, app.SourceQuietMeta(s.name), b); err != nil {
			a.Logger.Error("keep a source's quiet mark: the alert may go out again", "source", s.name, slog.Any("error", err))
		}
		a.Logger.Info("alert sent", "kind", kind, "source", s.name)
	}
}

// quietMessage is the alert of kind about s.
func (a *Alerter) quietMessage(kind string, s quietSource, last time.Time, m app.QuietMark, now time.Time) app.AlertMessage {
	stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
	if kind == app.AlertSourceActive {
		return app.AlertMessage{Kind: kind, Source: s.name,
			Subject: fmt.Sprintf("hookbox: source %s receives events again", s.name),
			Text: fmt.Sprintf("hookbox: source %s accepted an event again at %s, after nothing since %s. See %s.",
				s.name, stamp(last), stamp(m.Since), a.conf().page)}
	}
	since := "it was last accepted at " + stamp(m.Since)
	if last.IsZero() {
		since = "no event accepted since " + stamp(m.Since)
	}
	return app.AlertMessage{Kind: kind, Source: s.name,
		Subject: fmt.Sprintf("hookbox: source %s quiet for %s", s.name, now.Sub(m.Since).Round(time.Minute)),
		Text: fmt.Sprintf("hookbox: source %s accepted nothing for %s (quiet_after %s): %s. Check the platform's webhook "+
			"settings (a disabled subscription, a wrong URL) and the source's quarantine (hookbox quarantine list %s: a wrong secret). See %s.",
			s.name, now.Sub(m.Since).Round(time.Minute), s.after, since, s.name, a.conf().page)}
}
