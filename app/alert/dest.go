package alert

import (
	"context"
	"fmt"
	"hookbox/app"
	"log/slog"
	"slices"
	"time"
)

// The destination alerts: destination_failing when a destination has
// failed without a success for [alerts] failing_for, and
// destination_recovered when it delivers again after that alert went out,
// once per episode. They are decided from the stored health
// (DestinationHealth), which every node's dispatcher merges its view into,
// and marked sent in the store (Alerted) before they go out: a restart
// never sends one again, and of the nodes of a cluster only the one that
// wins the mark sends it (serve runs the watch on the leader only, too).

// maxAlertWaiting bounds the count of waiting deliveries an alert says.
const maxAlertWaiting = 100000

// destWatchEvery is how often WatchDestinations reads the stored health:
// a tenth of failingFor, between 200 ms and 5 s (5 s when it is off,
// for the recovery alerts owed).
func destWatchEvery(failingFor time.Duration) time.Duration {
	if failingFor <= 0 {
		return 5 * time.Second
	}
	return min(max(failingFor/10, 200*time.Millisecond), 5*time.Second)
}

// WatchDestinations runs CheckDestinations until ctx is done, when leader
// (nil: always) says this node sends the cluster's alerts. It returns at
// once without Health. It keeps watching while no alert channel is
// configured (CheckDestinations then does nothing), and follows a
// reloaded failing_for, so that a reload that configures alerts or
// changes failing_for takes effect without a restart.
func (a *Alerter) WatchDestinations(ctx context.Context, leader func() bool) {
	if a.Health == nil {
		return
	}
	every := destWatchEvery(a.conf().FailingFor)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if e := destWatchEvery(a.conf().FailingFor); e != every {
				every = e
				t.Reset(e)
			}
			if leader == nil || leader() {
				a.CheckDestinations(ctx)
			}
		}
	}
}

// CheckDestinations sends the destination alerts the stored health calls
// for now (DestinationAlert), each once: it marks the alert sent in the
// store first, sends it if it won the mark, and takes the mark back when
// no channel took it, so that the next check tries again.
func (a *Alerter) CheckDestinations(ctx context.Context) {
	if a.Health == nil || !a.conf().Enabled() {
		return
	}
	hs, err := a.Health.DestinationHealths(ctx)
	if err != nil {
		a.Logger.Error("read the destinations' health", slog.Any("error", err))
		return
	}
	now := a.Now()
	for _, name := range a.conf().dests {
		h, ok := hs[name]
		if !ok {
			continue
		}
		kind := app.DestinationAlert(h, now, a.conf().FailingFor)
		from, to := h.Alerted, time.Time{}
		switch kind {
		case "":
			continue
		case app.AlertDestinationFailing:
			to = h.FailingSince
		}
		won, err := a.Health.MarkDestinationAlerted(ctx, name, from, to)
		if err != nil {
			a.Logger.Error("mark a destination alert sent", "destination", name, slog.Any("error", err))
			continue
		}
		if !won { // another node sent it, or the health moved on: the next check sees
			continue
		}
		m := a.destinationMessage(ctx, kind, name, h, now)
		if err := a.send(ctx, m); err != nil {
			a.Logger.Error("send alert", "kind", kind, "destination", name, slog.Any("error", err))
			if _, uerr := a.Health.MarkDestinationAlerted(context.WithoutCancel(ctx), name, to, from); uerr != nil {
				a.Logger.Error("take back a destination alert's mark: it will not be sent again", "destination", name, slog.Any("error", uerr))
			}
			continue
		}
		a.Logger.Info("alert sent", "kind", kind, "destination", name)
	}
}

// destinationMessage is the alert of kind about dest, whose health is h.
func (a *Alerter) destinationMessage(ctx context.Context, kind, dest string, h app.DestinationHealth, now time.Time) app.AlertMessage {
	waiting, err := a.store.Backlog(ctx, dest, maxAlertWaiting)
	count := fmt.Sprint(waiting)
	if err != nil {
		count = "an unknown number of"
	} else if waiting >= maxAlertWaiting {
		count = fmt.Sprintf("over %d", maxAlertWaiting)
	}
	stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
	if kind == app.AlertDestinationFailing {
		next := "when a retry falls due"
		if !h.NextTry.IsZero() {
			next = "at " + stamp(h.NextTry)
		}
		why := ""
		if h.LastError != "" {
			why = " The last attempt failed with: " + h.LastError + "."
		}
		return app.AlertMessage{Kind: kind, Destination: dest,
			Subject: fmt.Sprintf("hookbox: destination %s failing since %s", dest, stamp(h.FailingSince)),
			Text: fmt.Sprintf("hookbox: destination %s has been failing since %s (%s, with no success since).%s "+
				"%s deliveries wait for it; the next try is %s. Nothing is lost: they go out when it answers again. See %s.",
				dest, stamp(h.FailingSince), now.Sub(h.FailingSince).Round(time.Second), why, count, next, a.conf().page)}
	}
	back := h.RecoveredAt
	if back.Before(h.Alerted) {
		back = now
	}
	return app.AlertMessage{Kind: kind, Destination: dest,
		Subject: fmt.Sprintf("hookbox: destination %s delivers again", dest),
		Text: fmt.Sprintf("hookbox: destination %s delivers again since %s, after failing for %s (since %s). "+
			"%s deliveries are waiting for it and go out now. See %s.",
			dest, stamp(back), back.Sub(h.Alerted).Round(time.Second), stamp(h.Alerted), count, a.conf().page)}
}

// sortedNames returns the names of ds in order.
func sortedNames(ds []*app.Destination) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}
