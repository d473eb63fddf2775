package receive

import (
	"strings"
	"time"
)

// AcceptedLogPerSecond bounds the info lines about accepted events: past
// it, in a busy second, they are counted and one line says how many were
// left out.
const AcceptedLogPerSecond = 20

// logAccepted logs one accepted event, at most AcceptedLogPerSecond a
// second; the first line of a later second says how many were left out
// before it. The strings are copied: they may point into the request's
// buffers.
func (r *Receiver) logAccepted(now time.Time, source, id, topic string, seq uint64) {
	ok, held := r.accepts.AllowN(now, time.Second, AcceptedLogPerSecond)
	if !ok {
		return
	}
	if held > 0 {
		r.Logger.Info("accepted events not logged one by one: too many a second", "suppressed", held, "limit_per_second", AcceptedLogPerSecond)
	}
	r.Logger.Info("webhook accepted", "source", strings.Clone(source), "event", strings.Clone(id), "topic", strings.Clone(topic), "seq", seq)
}
