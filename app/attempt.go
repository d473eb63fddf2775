// The attempt rule, written once: what one attempt of a delivery comes to
// (delivered, retried at a time, dead, refused for good, its destination
// held by a Retry-After), the number a destination is told, and the one
// capped doubling Backoff every wait that grows after a failure uses.

package app

import (
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// AttemptOutcome is what one attempt comes to (DecideAttempt).
type AttemptOutcome struct {
	// State is where the delivery goes: Delivered, Pending (due at Due)
	// or Dead.
	State DeliveryState
	Due   time.Time
	// Refused says the destination refused the delivery for good (HTTP
	// 410, a command's exit status 65): it is dead whatever retries are
	// left.
	Refused bool
	// HeldUntil, when set, is the end of the destination's Retry-After:
	// no attempt to it starts before (every delivery, not only this one).
	HeldUntil time.Time
}

// DecideAttempt is the attempt rule: the outcome of an attempt of dl to
// dest that ended at end with res. A refusal is dead at once; a
// Retry-After (capped by the longest step of the schedule) holds the
// whole destination and is the delivery's next due time; otherwise the
// next step of the schedule (with jitter), or dead when it is done. An
// early attempt (a probe, or a retry taken early while the destination
// recovers) that fails keeps the delivery's step and due time: an early
// try never costs a retry.
func DecideAttempt(dest *Destination, dl *Delivery, res Answer, end time.Time, early bool) AttemptOutcome {
	var o AttemptOutcome
	if res.RetryAfter > 0 && !res.Delivered {
		if held := end.Add(min(res.RetryAfter, maxStep(dest))); held.After(end) {
			o.HeldUntil = held
		}
	}
	switch {
	case res.Delivered:
		o.State = Delivered
	case res.Refused:
		o.State, o.Refused = Dead, true
	case early:
		o.State, o.Due = Pending, dl.Due
	case dl.Tries >= len(dest.Retry):
		o.State = Dead
	case !o.HeldUntil.IsZero():
		o.State, o.Due = Pending, o.HeldUntil
	default:
		o.State, o.Due = Pending, end.Add(jitter(dest.Retry[dl.Tries]))
	}
	return o
}

// AttemptNumber is the number of the next attempt of dl, as its
// destination is told (the X-Hookbox-Attempt header, HOOKBOX_ATTEMPT):
// its step in the retry schedule plus one, from 1 for the first attempt
// to len(Retry)+1 for the last. An early attempt (a probe, or a retry
// taken early) carries the number of the step it goes ahead of, which the
// scheduled attempt carries again if the early one fails: the number
// never passes the retry steps plus one, however many probes were made.
// A replay starts again at 1.
func AttemptNumber(dl *Delivery) int { return dl.Tries + 1 }

// maxStep is the longest step of dest's schedule, which caps Retry-After.
func maxStep(dest *Destination) time.Duration {
	var m time.Duration
	for _, r := range dest.Retry {
		m = max(m, r)
	}
	return m
}

// jitter spreads d over ±retryJitter so that retries of a burst do not
// arrive together.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - retryJitter + 2*retryJitter*rand.Float64()))
}

// Backoff is a wait that doubles after each failure in a row, from First
// up to Max: the dispatcher's probes and its waits after a failed record,
// the mailer's resends, listen's reconnects, the PostgreSQL listener's.
type Backoff struct {
	First, Max time.Duration
}

// Wait returns the wait after the n-th failure in a row (n ≥ 1):
// First·2^(n-1), capped by Max.
func (b Backoff) Wait(n int) time.Duration {
	d := b.First
	for i := 1; i < n && d < b.Max; i++ {
		d = b.Next(d)
	}
	return min(d, b.Max)
}

// Next returns the wait that follows d after another failure: twice d,
// capped by Max.
func (b Backoff) Next(d time.Duration) time.Duration {
	if d >= b.Max/2 {
		return b.Max
	}
	return max(2*d, b.First)
}

// maxRetryAfter is what a Retry-After beyond a Duration means: as long as
// possible (DecideAttempt caps it by the longest step), never a wrapped
// value.
const maxRetryAfter = time.Duration(math.MaxInt64)

// RetryAfter parses a Retry-After header: seconds or an HTTP date.
func RetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case s <= 0:
			return 0
		case s >= int64(maxRetryAfter/time.Second):
			return maxRetryAfter
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
