package cli

import (
	"log/slog"

	"github.com/robfig/cron/v3"
)

// newCron returns a cron scheduler whose jobs recover from panics and never
// overlap themselves (the default chain does neither), logging through l.
func newCron(l *slog.Logger) *cron.Cron {
	cl := cronLogger{l}
	return cron.New(cron.WithChain(cron.Recover(cl), cron.SkipIfStillRunning(cl)), cron.WithLogger(cl))
}

// cronLogger adapts slog to cron's logger; cron's chatty Info goes to Debug.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron "+msg, append(kv, slog.Any("error", err))...)
}
