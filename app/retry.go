// The retry schedule of a delivery: when the next attempt is due after a
// failed one, with jitter and the destination's Retry-After.

package app

import (
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// outcome decides what follows an attempt: delivered (over HTTP, a 2xx); 410 dead at once;
// otherwise the next step of the schedule (Retry-After honoured on 429 and
// 503, capped by the longest step), or dead when the schedule is done.
func outcome(dest *Destination, dl *Delivery, res Answer, now time.Time) (DeliveryState, time.Time) {
	switch {
	case res.Delivered:
		return Delivered, time.Time{}
	case res.Refused || res.Status == http.StatusGone:
		return Dead, time.Time{}
	case dl.Tries >= len(dest.Retry):
		return Dead, time.Time{}
	}
	wait := jitter(dest.Retry[dl.Tries])
	if res.RetryAfter > 0 && (res.Status == http.StatusTooManyRequests || res.Status == http.StatusServiceUnavailable) {
		wait = min(res.RetryAfter, slices.Max(dest.Retry))
	}
	return Pending, now.Add(wait)
}

// jitter spreads d over ±retryJitter so that retries of a burst do not
// arrive together.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - retryJitter + 2*retryJitter*rand.Float64()))
}

// maxRetryAfter is what a Retry-After beyond a Duration means: as long as
// possible (outcome caps it by the longest step), never a wrapped value.
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
