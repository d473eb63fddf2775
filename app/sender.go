// What the dispatcher asks of a sender: one attempt of a delivery (what
// came of it, the Answer, is in attempt.go with the rule that reads it).
// The HTTP sender is in app/httpsend.

package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Sender makes attempts of deliveries to their destinations for the
// Dispatcher. Send is called by many goroutines at once (a destination's
// Concurrency of them each).
type Sender interface {
	// Send makes one attempt of req under ctx, which ends when the sends
	// in flight are to be cut (shutdown). It never panics on a bad answer:
	// whatever happened is in the Answer.
	Send(ctx context.Context, req SendRequest) Answer
	// Stop is called once no send is to start any more: the connects in
	// progress are cut (they have sent nothing yet) and new ones refused.
	Stop()
	// Close cuts the sends in flight and refuses every later one.
	Close()
}

// Senders sends each attempt with the sender of its destination's kind:
// Command for a destination with a command, HTTP for one with a URL.
type Senders struct {
	HTTP, Command Sender
}

var _ Sender = Senders{}

// Send hands req to the sender of its destination's kind.
func (s Senders) Send(ctx context.Context, req SendRequest) Answer {
	if len(req.Dest.Command) > 0 {
		return s.Command.Send(ctx, req)
	}
	return s.HTTP.Send(ctx, req)
}

// Stop stops both.
func (s Senders) Stop() { s.HTTP.Stop(); s.Command.Stop() }

// Close closes both.
func (s Senders) Close() { s.HTTP.Close(); s.Command.Close() }

// SendRequest is one attempt handed to a Sender.
type SendRequest struct {
	Dest *Destination
	Work Work
	// Attempt is the number of this attempt as the destination is told:
	// AttemptNumber, from 1 to the retry steps plus one, probes included.
	Attempt int
	// Now is the dispatcher's clock as the attempt starts; the sender
	// stamps and signs with it.
	Now time.Time
	// Transformed is the body the delivery's route's transform made for
	// this attempt, sent and signed in place of the event's (nil: the
	// event's body and the sender's headers, as received).
	Transformed *Transformed
}

// SendError turns a transport error into a short text without the URL,
// which may carry a credential in its query; timeout is the one the
// request ran under.
func SendError(ctx context.Context, err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var te interface{ Timeout() bool }
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) && te.Timeout() {
		return fmt.Errorf("no answer within %v", timeout)
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && string(rh.RecordHeader[:]) == "HTTP/" {
		return errors.New("server gave HTTP response to HTTPS client")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the destination closed the connection without an answer")
	}
	if strings.Contains(err.Error(), "server response headers exceeded") { // net/http (the alerter) has no value for it; httpsend says it the same
		return fmt.Errorf("the answer's header is longer than %d KiB: not read on", MaxAnswerHeader>>10)
	}
	return err
}

// MaxAnswerHeader is the longest response header accepted: a destination
// that sends more (an endless header) fails the attempt.
const MaxAnswerHeader = 16 << 10
