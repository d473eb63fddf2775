package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Alerter posts a Slack-compatible message ({"text": …}) when the number of
// dead deliveries passes the configured threshold, once per crossing, and
// again when it falls back.
type Alerter struct {
	store  Store
	cfg    AlertsConfig
	where  string // where to act, for the message
	client *http.Client
	Logger *slog.Logger

	alerting bool // the last message sent said "over"
}

// NewAlerter builds the alerter for cfg over store.
func NewAlerter(cfg *Config, store Store) *Alerter {
	where := "hookbox replay -all"
	if cfg.Server.PublicURL != "" {
		where = cfg.Server.PublicURL + "/ or " + where
	}
	return &Alerter{
		store:  store,
		cfg:    cfg.Alerts,
		where:  where,
		client: &http.Client{Timeout: 10 * time.Second},
		Logger: slog.With("component", "alert"),
	}
}

// Check counts dead deliveries and sends a message when the count crossed
// the threshold since the last message. A failed post is logged and tried
// again at the next check. It is meant to run from cron, never concurrently.
func (a *Alerter) Check(ctx context.Context) {
	if a.cfg.URL == "" {
		return
	}
	n, err := a.store.CountDead()
	if err != nil {
		a.Logger.Error("count dead deliveries", slog.Any("error", err))
		return
	}
	over := n > a.cfg.DeadLettersOver
	if over == a.alerting {
		return
	}
	text := fmt.Sprintf("hookbox: %d dead deliveries (alert above %d). Replay them from %s.", n, a.cfg.DeadLettersOver, a.where)
	if !over {
		text = fmt.Sprintf("hookbox: dead deliveries back to %d (alert above %d).", n, a.cfg.DeadLettersOver)
	}
	if err := a.post(ctx, text); err != nil {
		a.Logger.Error("send alert", slog.Any("error", err))
		return
	}
	a.alerting = over
	a.Logger.Info("alert sent", "dead", n, "over", over)
}

func (a *Alerter) post(ctx context.Context, text string) error {
	body, _ := json.Marshal(map[string]string{"text": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", sendError(err, 0))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return sendError(err, a.client.Timeout)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("alert URL answered HTTP %d", resp.StatusCode)
	}
	return nil
}
