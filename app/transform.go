// The body a route's transform makes for a delivery, in place of the
// event's. It is made at each attempt from the event as stored, with the
// transform as configured now: the event keeps its body, and a replay
// after a config fix sends what the fixed transform makes. A transform
// that fails makes its delivery dead at once (dispatch.go): the same
// event through the same transform fails the same way at every retry.

package app

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"
)

// Transformed is the body a route's transform made for one attempt of a
// delivery: sent in place of the event's, signed over, described by its
// own Content-Type (app/sendheader.go).
type Transformed struct {
	Body []byte
	// ContentType is the transform's; "" sends none.
	ContentType string
}

// RouteTransform returns the transform of the route named route, nil when
// route is "" (a delivery opened before routes were recorded), when no
// route of c has that name any more, or when the route has none.
func (c *Config) RouteTransform(route string) Transform {
	if route == "" {
		return nil
	}
	for _, r := range c.Routes {
		if r.Name == route {
			return r.Transform
		}
	}
	return nil
}

// RuleInput is what the routes' rules see of e, as it was received. The
// engine parses the body into it once, at the first rule that reads it:
// one RuleInput serves all the transforms of one event.
func (e *Event) RuleInput() *RuleInput {
	return &RuleInput{Source: e.Source, Topic: e.Topic, ID: e.ID, Header: e.Header, Body: e.Body}
}

// maxTransformError bounds the reason a failed transform leaves in its
// attempt, on the page and in the log.
const maxTransformError = 512

// ApplyTransform makes the body t gives for in, at most max bytes (the
// server's max_body_bytes; DefaultMaxBodyBytes when max <= 0). Its error
// is what the failed attempt records: "transform: " and the reason, cut
// to maxTransformError bytes, with the values of in's secret-looking
// headers masked (an engine may quote a value it could not convert). A
// body over max, or a Content-Type the transport would refuse to send, is
// an error too, found here rather than at each attempt; a panic in t is
// its error, not the end of the sender's goroutine (and of the process).
func ApplyTransform(t Transform, in *RuleInput, max int) (out *Transformed, err error) {
	if max <= 0 {
		max = DefaultMaxBodyBytes
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, transformError(in, fmt.Sprintf("panic: %v", p))
		}
	}()
	body, ctype, err := t.Apply(in, max)
	switch {
	case err != nil:
		return nil, transformError(in, err.Error())
	case len(body) > max:
		return nil, transformError(in, fmt.Sprintf("the body made is %d bytes, over max_body_bytes (%d)", len(body), max))
	case !httpguts.ValidHeaderFieldValue(ctype):
		return nil, transformError(in, "the Content-Type made is not a valid header value")
	}
	return &Transformed{Body: body, ContentType: ctype}, nil
}

// transformError is the error of a failed transform of in, why.
func transformError(in *RuleInput, why string) error {
	why = MaskSecretValues(why, in.Header)
	if len(why) > maxTransformError {
		n := maxTransformError
		for n > 0 && !utf8.RuneStart(why[n]) {
			n-- // cut before a character, not inside it
		}
		why = why[:n] + "…"
	}
	return fmt.Errorf("transform: %s", why)
}

// minMaskedValue is the shortest header value MaskSecretValues replaces:
// a shorter one is no credential worth the name, and replacing every "1"
// of a text would make it unreadable.
const minMaskedValue = 8

// MaskSecretValues replaces in text each value of h's secret-looking
// headers (those MaskHeaders masks) of at least minMaskedValue bytes: a
// transform can copy a header into the body it makes, and the page shows
// that body. It costs a scan of text per such header.
func MaskSecretValues(text string, h []HeaderField) string {
	for _, f := range h {
		if len(f.Value) >= minMaskedValue && secretish(f.Name) && strings.Contains(text, f.Value) {
			text = strings.ReplaceAll(text, f.Value, "••••")
		}
	}
	return text
}

// bodyHeader reports whether a sender's header named name (canonical)
// describes the body it sent: not forwarded with a body a transform made
// instead (its Content-Type, Content-Encoding, Content-Length, digests).
func bodyHeader(name string) bool {
	return strings.HasPrefix(name, "Content-") || name == "Digest" || name == "Repr-Digest"
}
