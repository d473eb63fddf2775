// The live stream of accepted events that `hookbox listen` reads
// (GET /api/v1/stream): what a store gives it and what goes on the wire.

package app

import (
	"time"
)

// The bounds of the stream.
const (
	// StreamResume is how far back a reconnecting listener's Last-Event-ID
	// is honoured: events accepted in the last StreamResume after it are
	// sent first, at most StreamResumeMax of them; before that, a notice
	// says what was skipped.
	StreamResume    = 10 * time.Minute
	StreamResumeMax = 10000
	// StreamQueue bounds what waits for one listener: at most this many
	// events or StreamQueueBytes of them in memory (EventMemory: bodies and
	// headers; one event however large when nothing else waits); a
	// listener further behind is dropped with a notice, never buffered
	// without limit. StreamHubBytes bounds what all the listeners' queues
	// hold together, each event once (they share it): past it, the
	// listener furthest behind is dropped and the others go on.
	StreamQueue      = 256
	StreamQueueBytes = 2 << 20
	StreamHubBytes   = 16 << 20
	// StreamPerUser and StreamMax bound the listeners connected at once,
	// per user or token and on the node (429 beyond).
	StreamPerUser = 4
	StreamMax     = 64
	// StreamPoll is how often the node reads new events while someone
	// listens; StreamPing how often an idle stream sends a comment, so
	// proxies keep it open.
	StreamPoll = 200 * time.Millisecond
	StreamPing = 15 * time.Second
	// StreamGapWait is how long a seq missing below a seen one is waited
	// for (a PostgreSQL commit still under way) before it is taken to be
	// rolled back.
	StreamGapWait = 10 * time.Second
)

// StreamEvent is the data of one "event" message on the stream (SSE
// `event: event`, `id:` its Seq): an accepted event as received but what
// makes it genuine (JSON encodes Body as base64, byte-exact). A listener
// forwards the body and headers and signs the request itself, in the
// scheme of Provider, with a secret of its own (`hookbox listen`).
type StreamEvent struct {
	Seq        uint64    `json:"seq"`
	Source     string    `json:"source"`
	ID         string    `json:"id"`
	Topic      string    `json:"topic"`
	ReceivedAt time.Time `json:"received_at"`
	// Provider is the provider of the event's source (shopify, stripe,
	// hmac…), "" when the source is no longer configured.
	Provider string `json:"provider,omitempty"`
	// Signature is the layout of an hmac source's signature (never its
	// secret), so that a listener signs as the local app expects.
	Signature *StreamSignature `json:"signature,omitempty"`
	// Header is the kept request headers as received, in order, each a
	// [name, value] pair, without the ones SecretHeader names: no
	// signature, no credential.
	Header [][2]string `json:"header"`
	Body   []byte      `json:"body"`
}

// StreamSignature is an hmac source's signature layout: its
// signature_header, signature_encoding and signature_prefix.
type StreamSignature struct {
	Header   string `json:"header"`
	Encoding string `json:"encoding,omitempty"`
	Prefix   string `json:"prefix,omitempty"`
}

// StreamNotice is the data of one "notice" message (SSE `event: notice`):
// something a listener must be told, in a sentence.
type StreamNotice struct {
	// Kind is one of the StreamNotice* values.
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// The kinds of StreamNotice.
const (
	// StreamNoticeDropped: the listener fell too far behind and the server
	// closes the stream; reconnecting with Last-Event-ID resumes it.
	StreamNoticeDropped = "dropped"
	// StreamNoticeGap: events between Last-Event-ID and the resume window
	// were not sent (too old, or too many).
	StreamNoticeGap = "gap"
	// StreamNoticeReady: the stream is live from here on (sent once, after
	// what a resume sent).
	StreamNoticeReady = "ready"
	// StreamNoticeRevoked: the caller's credential no longer holds (its
	// token was revoked or expired, its user removed, its role or password
	// changed) and the server closes the stream; reconnecting with it is
	// refused (401), unless only the user's role changed.
	StreamNoticeRevoked = "revoked"
)

// StreamEventOf is e, an event of src (nil when its source is no longer
// configured), as the stream sends it. The headers a viewer never reads
// (SecretHeader: a provider's signature, a sender's credential) are left
// out: anyone who can read the stream (a viewer) could otherwise post the
// event back to /in/ with a fresh delivery id, and it would be genuine.
// The ids, topics and timestamps the sender sent stay.
func StreamEventOf(e *Event, src *Source) StreamEvent {
	h := make([][2]string, 0, len(e.Header))
	for _, f := range e.Header {
		if SecretHeader(src, f.Name) {
			continue
		}
		h = append(h, [2]string{f.Name, f.Value})
	}
	se := StreamEvent{Seq: e.Seq, Source: e.Source, ID: e.ID, Topic: e.Topic, ReceivedAt: e.ReceivedAt, Header: h, Body: e.Body}
	if src != nil {
		se.Provider = src.Provider
		if st := src.Settings; st.SignatureHeader != "" {
			se.Signature = &StreamSignature{Header: st.SignatureHeader, Encoding: st.SignatureEncoding, Prefix: st.SignaturePrefix}
		}
	}
	return se
}
