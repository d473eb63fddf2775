package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hookbox/app"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Alerter sends alerts: when the number of dead deliveries passes the
// configured threshold (once per crossing, and again when it falls back),
// when storage fails and works again, when records are set aside, when
// backups fail and work again, of certificates (Notify), and when a
// destination fails for FailingFor and delivers again (alertdest.go).
// Every alert goes through send: its JSON ({"text", "kind",
// "destination"}, Slack-compatible) to the alert URL, and the message to
// Email.
type Alerter struct {
	store app.AlertStore
	// settings are the config's, swapped whole by Apply.
	settings atomic.Pointer[alertSettings]
	client   *http.Client
	Logger   *slog.Logger
	// Storage, when set, has an alert go out when commits start failing,
	// and another when they work again.
	Storage *app.StorageHealth
	// Email, when set, is handed every alert that goes out; it queues and
	// never blocks, so an SMTP server that hangs holds up nothing.
	Email func(app.AlertMessage)
	// Health, when set, holds the destinations' stored health, which
	// WatchDestinations alerts on.
	Health app.HealthStore
	// Quiet, when set, has the sources with quiet_after watched
	// (quiet.go); watched is when the watch began.
	Quiet   app.QuietStore
	watched time.Time

	alerting bool // the last message sent said "over"
	// storageTold is whether the last storage message said "failing".
	storageTold bool
	// poisonTold is how many records set aside the last message counted
	// (-1: none sent since start, so a restart reminds once).
	poisonTold int

	backupMu     sync.Mutex
	backupFailed bool // a failure message went out and no success since

	// Now is the clock of Notify's rate limit; tests replace it.
	Now      func() time.Time
	notices  chan app.AlertMessage // Notify's queue, sent by Run one at a time
	noticeMu sync.Mutex
	lastSent map[string]time.Time // per topic, when Notify last queued it
}

// NotifyEvery is how often at most Notify sends a message of one topic.
const NotifyEvery = time.Hour

// noticeQueue bounds the messages Notify keeps waiting for Run.
const noticeQueue = 16

// maxAlertHeader bounds the header of an alert URL's answer.
const maxAlertHeader = 16 << 10

// New builds the alerter for cfg over store.
func New(cfg *app.Config, store app.AlertStore) *Alerter {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil // post only to the configured URL, as the dispatcher does
	// An answer is read bounded: its header here, its body in post, and
	// nothing inflated on the way (a small gzip can declare gigabytes).
	transport.MaxResponseHeaderBytes = maxAlertHeader
	transport.DisableCompression = true
	a := &Alerter{
		Now:      time.Now,
		notices:  make(chan app.AlertMessage, noticeQueue),
		lastSent: map[string]time.Time{},
		store:    store,
		client: &http.Client{
			Timeout:   10 * time.Second,
			Transport: transport,
			// A redirect is an answer of the alert URL, never a new address.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		Logger:     slog.With("component", "alert"),
		poisonTold: -1,
	}
	a.Apply(cfg)
	return a
}

// alertSettings are what the alerter takes from one config.
type alertSettings struct {
	app.AlertsConfig
	dests []string // the configured destinations' names, in order
	quiet []quietSource
	where string // where to act, for the message
	page  string // where the overview is, for the message
}

// Apply puts cfg's [alerts] and public_url in force for the next alert.
func (a *Alerter) Apply(cfg *app.Config) {
	s := &alertSettings{AlertsConfig: cfg.Alerts, dests: sortedNames(cfg.Destinations), quiet: quietSources(cfg), where: "hookbox replay -all", page: "the status page"}
	if cfg.Server.PublicURL != "" {
		s.where = cfg.Server.PublicURL + "/ or " + s.where
		s.page = cfg.Server.PublicURL + "/"
	}
	a.settings.Store(s)
}

// conf returns the settings in force.
func (a *Alerter) conf() *alertSettings { return a.settings.Load() }

// Check runs CheckStorage and CheckCluster: on one node, every check. A
// failed post is logged and tried again at the next check. It is meant to
// run from cron, never concurrently.
func (a *Alerter) Check(ctx context.Context) {
	a.CheckStorage(ctx)
	a.CheckCluster(ctx)
}

// CheckStorage sends a message when this node's commits started failing
// since the last message, and one when they work again: every node of a
// cluster runs it, since each sees its own storage trouble (a node cut
// off from the database), and a node cut off cannot be the one that runs
// the cluster's jobs.
func (a *Alerter) CheckStorage(ctx context.Context) {
	if !a.conf().Enabled() {
		return
	}
	a.checkStorage(ctx)
}

// CheckCluster sends a message when records were set aside, and when the
// count of dead deliveries crossed the threshold since the last message:
// the store's state, which one node of a cluster checks.
func (a *Alerter) CheckCluster(ctx context.Context) {
	if !a.conf().Enabled() {
		return
	}
	a.checkPoison(ctx)
	a.checkQuiet(ctx)
	n, err := a.store.CountDead(ctx)
	if err != nil {
		a.Logger.Error("count dead deliveries", slog.Any("error", err))
		return
	}
	over := n > a.conf().DeadLettersOver
	if over == a.alerting {
		return
	}
	m := app.AlertMessage{Kind: app.AlertDeadLetters, Subject: fmt.Sprintf("hookbox: %d dead deliveries", n),
		Text: fmt.Sprintf("hookbox: %d dead deliveries (alert above %d): they failed every retry and wait for a replay. "+
			"Replay them from %s.", n, a.conf().DeadLettersOver, a.conf().where)}
	if !over {
		m.Subject = fmt.Sprintf("hookbox: dead deliveries back to %d", n)
		m.Text = fmt.Sprintf("hookbox: dead deliveries back to %d (alert above %d). See %s.", n, a.conf().DeadLettersOver, a.conf().page)
	}
	if err := a.send(ctx, m); err != nil {
		a.Logger.Error("send alert", slog.Any("error", err))
		return
	}
	a.alerting = over
	a.Logger.Info("alert sent", "dead", n, "over", over)
}

// checkStorage sends a message when commits started failing since the
// last message, and one when they work again.
func (a *Alerter) checkStorage(ctx context.Context) {
	cur, failing, last := a.Storage.State()
	if failing == a.storageTold {
		return
	}
	m := app.AlertMessage{Kind: app.AlertStorageFailing, Subject: "hookbox: storage is failing",
		Text: fmt.Sprintf("hookbox: storage is failing since %s: %s. Webhooks get 503 (their senders retry; %d refused so far) and deliveries wait. "+
			"%s See %s.", cur.Since.UTC().Format(time.RFC3339), cur.LastError, cur.Refused, a.Storage.Fix, a.conf().page)}
	if !failing {
		m = app.AlertMessage{Kind: app.AlertStorageRecovered, Subject: "hookbox: storage works again",
			Text: fmt.Sprintf("hookbox: storage works again after failing for %s, since %s (%d webhooks refused with 503, which their senders retry); "+
				"deliveries resume. See %s.", last.Until.Sub(last.Since).Round(time.Second), last.Since.UTC().Format(time.RFC3339), last.Refused, a.conf().page)}
	}
	if err := a.send(ctx, m); err != nil {
		a.Logger.Error("send alert", slog.Any("error", err))
		return
	}
	a.storageTold = failing
	a.Logger.Info("alert sent", "storage_failing", failing)
}

// checkPoison sends a message when records were set aside since the last
// one (or since start): they need someone to look, though the rest flows.
func (a *Alerter) checkPoison(ctx context.Context) {
	newest, n, err := a.store.Poisoned(ctx, 1)
	if err != nil {
		a.Logger.Error("count records set aside", slog.Any("error", err))
		return
	}
	if n == 0 || n <= a.poisonTold {
		return
	}
	p := newest[0]
	store, fix := "the data file", ""
	if a.Storage != nil {
		store, fix = a.Storage.Store, " "+a.Storage.DamageFix
	}
	m := app.AlertMessage{Kind: app.AlertPoison, Subject: fmt.Sprintf("hookbox: %d records set aside", n),
		Text: fmt.Sprintf("hookbox: %d records in %s cannot be read and were set aside; everything else is delivered. "+
			"The newest: %s %s (%s). See the overview on %s.%s", n, store, p.Kind, p.Key, p.Reason, a.conf().page, fix)}
	if err := a.send(ctx, m); err != nil {
		a.Logger.Error("send alert", slog.Any("error", err))
		return
	}
	a.poisonTold = n
	a.Logger.Info("alert sent", "set_aside", n)
}

// send sends m through every channel: its JSON to the alert URL, when
// set, and m to Email, when set. It fails only when the URL refused it and
// no email took it: the caller then sends it again at its next check. An
// alert that Email took is not posted again when the URL refused it (the
// failure is logged): a broken URL never makes an email go out twice.
func (a *Alerter) send(ctx context.Context, m app.AlertMessage) error {
	if a.Email != nil {
		a.Email(m) // queued first: a stop during the post still sends it (the mailer drains its queue)
	}
	var err error
	if a.conf().URL != "" {
		err = a.post(ctx, m)
	}
	if a.Email != nil {
		if err != nil {
			a.Logger.Error("send alert to the alert URL (it went by email)", "kind", m.Kind, slog.Any("error", err))
		}
		return nil
	}
	return err
}

// post posts m's JSON to the alert URL.
func (a *Alerter) post(ctx context.Context, m app.AlertMessage) error {
	body, _ := json.Marshal(m)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.conf().URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", app.SendError(ctx, err, 0))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return app.SendError(ctx, err, a.client.Timeout)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("alert URL answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// Notify sends text, a certificate alert, in the background (Run sends it), at
// most once per NotifyEvery for one topic: later messages of the topic
// within that are dropped, as is a message that finds the queue full (the
// caller logs what it reports). It never blocks and starts no goroutine,
// so a hanging alert URL cannot hold up or pile up its callers (a TLS
// handshake, the certificate watcher).
func (a *Alerter) Notify(topic, text string) {
	if !a.conf().Enabled() {
		return
	}
	now := a.Now()
	a.noticeMu.Lock()
	if last, ok := a.lastSent[topic]; ok && now.Sub(last) < NotifyEvery {
		a.noticeMu.Unlock()
		return
	}
	select {
	case a.notices <- app.AlertMessage{Kind: app.AlertCertificate, Subject: "hookbox: trouble with the HTTPS certificate",
		Text: text + " See " + a.conf().page + "."}:
		a.lastSent[topic] = now
	default:
		a.Logger.Warn("alert dropped: queue full", "topic", topic)
	}
	a.noticeMu.Unlock()
}

// Run sends Notify's messages one at a time until ctx is done; each post
// ends within the alert client's timeout.
func (a *Alerter) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-a.notices:
			if err := a.send(ctx, m); err != nil && ctx.Err() == nil {
				a.Logger.Error("send alert", slog.Any("error", err))
			}
		}
	}
}

// Backup hears the outcome of each scheduled backup (err nil: it worked).
// The first failure of a streak sends a message, later ones do not; the
// first success after a streak says backups work again. A message that
// cannot be posted is tried again at the next outcome.
func (a *Alerter) Backup(ctx context.Context, err error) {
	a.backupMu.Lock()
	defer a.backupMu.Unlock()
	failed := err != nil
	if !a.conf().Enabled() || failed == a.backupFailed {
		return
	}
	m := app.AlertMessage{Kind: app.AlertBackupRecovered, Subject: "hookbox: backups work again",
		Text: fmt.Sprintf("hookbox: backups work again (the last one at %s). See %s.", a.Now().UTC().Format(time.RFC3339), a.conf().page)}
	if failed {
		m = app.AlertMessage{Kind: app.AlertBackupFailed, Subject: "hookbox: the scheduled backup failed",
			Text: fmt.Sprintf("hookbox: the scheduled backup failed at %s: %v. Ingest goes on; fix the backup dir ([backup] dir) or the disk. See %s.",
				a.Now().UTC().Format(time.RFC3339), err, a.conf().page)}
	}
	if perr := a.send(ctx, m); perr != nil {
		a.Logger.Error("send alert", slog.Any("error", perr))
		return
	}
	a.backupFailed = failed
	a.Logger.Info("alert sent", "backup_failed", failed)
}
