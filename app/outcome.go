package app

// Outcome says what became of a received webhook.
type Outcome int

// The outcomes of a receiver's Receive (app/receive), in its Result.
const (
	Accepted  Outcome = iota + 1 // new event, durably stored
	Duplicate                    // id already remembered; nothing stored
	Ping                         // a sender's handshake; nothing stored
)

// The outcomes of a request Receive refused (it returns an error, never
// these in a Result), as Stats counts them.
const (
	Rejected Outcome = iota + Ping + 1 // bad or missing signature
	Invalid                            // signed, but not a webhook we can take
	Failed                             // the store could not take it
)

// String returns the outcome as the "status" of the HTTP answer and as
// the outcome label of the request metric.
func (o Outcome) String() string {
	switch o {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case Ping:
		return "ping"
	case Rejected:
		return "rejected"
	case Invalid:
		return "invalid"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Result is the answer to one received webhook.
type Result struct {
	Outcome Outcome
	ID      string
}
