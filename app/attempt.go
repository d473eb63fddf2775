// The attempt rule, written once: what one attempt of a delivery comes to
// (delivered, retried at a time, dead, refused for good, its destination
// held by a Retry-After) from the Answer a sender gave, the number a
// destination is told, the one capped doubling Backoff every wait that
// grows after a failure uses, and how long a destination's retry schedule
// can last.

package app

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Answer is what one attempt produced.
type Answer struct {
	// Delivered says the destination took the delivery (over HTTP: a 2xx
	// and no error).
	Delivered bool
	// Answered says something of an answer came: an attempt that had not
	// reached the destination when the stop began is not recorded.
	Answered bool
	// Status is the destination's HTTP status, 0 when none came (and for
	// a command).
	Status int
	// Refused says the destination refused the delivery for good, so it is
	// dead at once whatever retries are left: HTTP 410, or a command's exit
	// status 65 (EX_DATAERR).
	Refused bool
	// Snippet is the start of the answer, at most MaxResponseSnippet bytes.
	Snippet []byte
	// RetryAfter is how long the destination asked to be left alone (0:
	// nothing): the HTTP sender sets it from the Retry-After of a 429 or a
	// 503 only. DecideAttempt holds the whole destination for it.
	RetryAfter time.Duration
	// Err says why the attempt failed, without the URL (it may carry a
	// credential).
	Err error
	// Note says why the answer was not read to its end, when it was not;
	// the status stands.
	Note string
}

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

// DefaultRetry is the retry schedule of a destination that sets none.
var DefaultRetry = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 8 * time.Hour}

// retryJitter is the most jitter stretches a retry step (see jitter).
const retryJitter = 0.2

// RetryHorizon is the longest a delivery to d can keep retrying: every
// step of its schedule stretched by the jitter, and every attempt taking
// its whole timeout.
func (d *Destination) RetryHorizon() time.Duration {
	var steps time.Duration
	for _, r := range d.Retry {
		steps += r
	}
	return time.Duration(float64(steps)*(1+retryJitter)) + time.Duration(len(d.Retry)+1)*d.Timeout
}

// ScheduleText says what RetryHorizon adds up, for the errors of a
// config whose retention is shorter.
func (d *Destination) ScheduleText() string {
	attempts := fmt.Sprintf("%d attempts of up to %s", len(d.Retry)+1, ShortDuration(d.Timeout))
	if len(d.Retry) == 0 {
		return "no retry, one attempt of up to " + ShortDuration(d.Timeout)
	}
	steps := make([]string, len(d.Retry))
	for i, r := range d.Retry {
		steps[i] = ShortDuration(r)
	}
	return fmt.Sprintf("retry %s with %d%% jitter, and %s", strings.Join(steps, ", "), int(retryJitter*100), attempts)
}
