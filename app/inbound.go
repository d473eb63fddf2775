package app

import "strings"

// MaxIDLen bounds an event id; longer ones are refused with 400.
const MaxIDLen = 512

// MaxTopicLen bounds a topic likewise. Providers that read it from the
// body (Stripe's type, Paddle's event_type) would otherwise let a sender
// put a 1 MB string into every row of the events list and its API.
const MaxTopicLen = 512

// Inbound is a webhook as it arrived: the raw body and every header. The
// receiver only reads them; Accept copies what it keeps.
type Inbound struct {
	Body   []byte
	Header []HeaderField
	// Client is the sender's address, for the log.
	Client string
}

// Get returns the value of the first header called name, ignoring case.
func (in *Inbound) Get(name string) string {
	for i := range in.Header {
		if strings.EqualFold(in.Header[i].Name, name) {
			return in.Header[i].Value
		}
	}
	return ""
}

// HeaderField is one request header kept with an event.
type HeaderField struct {
	Name  string
	Value string
}
