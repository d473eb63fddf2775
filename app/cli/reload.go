package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"hookbox/app"
	"hookbox/app/access"
)

// reloader reads the config file again on SIGHUP and puts it in force
// in every component that holds config, or refuses it and keeps the one
// in force.
type reloader struct {
	opts    *configOptions
	running *app.Running
	logger  *slog.Logger
	now     func() time.Time
	// access records reloads by signal in the audit log (nil: none).
	access *access.Service

	// appliers put a new config in force, in order (serve's wire lists
	// them).
	appliers app.Appliers

	// The cron jobs whose specs are config: each is scheduled again when
	// its spec changes.
	sched *cron.Cron
	crons []*cronJob
	mu    sync.Mutex // one reload at a time
}

// cronJob is a job of sched whose spec the config gives.
type cronJob struct {
	key  string // the config key, for errors
	spec func(*app.Config) string
	run  func()
	id   cron.EntryID
}

// schedule adds j to r's scheduler with its spec in cfg.
func (r *reloader) schedule(cfg *app.Config, j *cronJob) error {
	id, err := r.sched.AddFunc(j.spec(cfg), j.run)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", cfg.Path, j.key, err)
	}
	j.id = id
	r.crons = append(r.crons, j)
	return nil
}

// watch reloads on each SIGHUP that hup hears until ctx is done.
func (r *reloader) watch(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			done := r.reload()
			if r.access != nil {
				var err error
				if f := done.Refused; f != nil {
					err = app.Errorf(app.EINVALID, "%s", firstReason(f))
				}
				r.access.Record(ctx, app.Who{Actor: "system", Via: "signal", From: "local"}.Entry(app.AuditConfigReload, *r.opts.path, "", err))
			}
		}
	}
}

// Reload reads and validates the config file the server started with
// (with the same flags and environment). A config with a mistake is
// refused: each mistake is logged, and shown on the page and in the
// API, and the one in force keeps running. A valid one is put in force
// in every component (what cannot change while serving keeps its value,
// and is named in the log line).
func (r *reloader) Reload() { r.reload() }

// reload is Reload, returning what it did: the changes, or the refusal
// with every mistake. SIGHUP and POST /api/v1/reload both come here, so
// both log the same lines.
func (r *reloader) reload() app.Reloaded {
	r.mu.Lock()
	defer r.mu.Unlock()
	path := *r.opts.path
	old := r.running.Config()
	next, err := r.opts.load() // the cron specs are checked there
	var diff app.ConfigDiff
	if err == nil {
		diff, err = app.Settle(old, next)
	}
	if err == nil {
		err = r.appliers.Check(old, next) // a refusal changes nothing
	}
	if err != nil {
		f := r.running.Refuse(path, r.now(), err)
		for _, reason := range f.Reasons {
			r.logger.Error("config refused: the running config stays in force", "file", path, "reason", reason)
		}
		return app.Reloaded{Path: path, Refused: f}
	}
	r.appliers.Apply(next)
	r.running.Store(&app.Loaded{Config: next, Path: path, At: r.now(), Restart: diff.Restart})
	r.logger.Info("config reloaded", append([]any{"file", path}, diff.LogAttrs()...)...)
	return app.Reloaded{Path: path, Diff: diff}
}

// firstReason is the first line of a refusal's first mistake, for the
// audit entry of a reload by signal.
func firstReason(f *app.Refusal) string {
	if len(f.Reasons) == 0 {
		return "refused"
	}
	first, _, _ := strings.Cut(f.Reasons[0], "\n")
	return first
}

// reschedule schedules again the jobs whose spec next changes.
func (r *reloader) reschedule(old, next *app.Config) {
	for _, j := range r.crons {
		if j.spec(old) == j.spec(next) {
			continue
		}
		id, err := r.sched.AddFunc(j.spec(next), j.run)
		if err != nil { // the config's validation parsed it
			r.logger.Error("reschedule", "key", j.key, "error", err)
			continue
		}
		r.sched.Remove(j.id)
		j.id = id
	}
}
