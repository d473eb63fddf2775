// Retry now: a delivery waiting for its next retry made due at once, its
// attempt history and its step in the retry schedule kept (issue 28).

package app

import (
	"fmt"
	"time"
)

// RetryNowVerdict says what retrying delivery d now does at now: due is
// true when d waits for a retry (pending, due after now) and is to be made
// due at now; err refuses d with a sentence that says what to do instead
// (a delivered or dead delivery has no retry to bring forward). A pending
// delivery due already (or in flight) is neither: it goes out anyway.
// Both stores decide by it, so they refuse alike.
func RetryNowVerdict(d *Delivery, now time.Time) (due bool, err error) {
	switch d.State {
	case Dead:
		return false, Errorf(ECONFLICT, "delivery %d is dead: replay it instead", d.ID)
	case Delivered:
		return false, Errorf(ECONFLICT, "delivery %d was delivered: there is no retry to bring forward (replay it to send it again)", d.ID)
	case Pending:
		return d.Due.After(now), nil
	}
	return false, Errorf(ECONFLICT, "delivery %d is in state %s: only a pending delivery can be retried", d.ID, d.State)
}

// RetryNowNotFound is the error of a retry of delivery id, which does not
// exist: it wraps ErrNotFound.
func RetryNowNotFound(id uint64) error {
	return fmt.Errorf("delivery %d: %w", id, ErrNotFound)
}
