package app

import (
	"log/slog"
	"strings"
	"sync"
	"time"
)

// AcceptedLogPerSecond bounds the info lines about accepted events: past
// it, in a busy second, they are counted and one line says how many were
// left out.
const AcceptedLogPerSecond = 20

// acceptLog writes a line per accepted event, at most perSecond a second;
// the first line of a later second says how many were left out before it.
type acceptLog struct {
	perSecond int

	mu         sync.Mutex
	second     int64 // unix second of the lines counted in n
	n          int
	suppressed uint64
}

// accepted logs one accepted event (the strings are copied: they may
// point into the request's buffers).
func (l *acceptLog) accepted(logger *slog.Logger, now time.Time, source, id, topic string, seq uint64) {
	l.mu.Lock()
	sec := now.Unix()
	if sec != l.second {
		l.second, l.n = sec, 0
	}
	l.n++
	if l.n > l.perSecond {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	held := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	if held > 0 {
		logger.Info("accepted events not logged one by one: too many a second", "suppressed", held, "limit_per_second", l.perSecond)
	}
	logger.Info("webhook accepted", "source", strings.Clone(source), "id", strings.Clone(id), "topic", strings.Clone(topic), "seq", seq)
}
