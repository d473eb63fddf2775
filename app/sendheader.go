// The request a delivery goes out as: which of the sender's headers are
// forwarded, which are withheld, and the ones hookbox adds and signs.
// Pure rules over domain types; the HTTP sender (app/httpsend) calls them.

package app

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"hookbox/app/provider"
)

// MessageID is the webhook-id of the delivery of event (source, id) to
// dest: stable across retries and replays, so the receiver can dedupe.
func MessageID(source, id, dest string) string {
	h := sha256.Sum256([]byte(source + "\x00" + id + "\x00" + dest))
	return "msg_" + hex.EncodeToString(h[:16])
}

// Outbound builds the headers of the attempts to cfg's destinations.
type Outbound struct {
	version string // goes into the User-Agent
	// sourceSigs is, per source, the canonical name of the signature
	// header its config names (the hmac provider's), not forwarded to a
	// destination with forward_signatures = false.
	sourceSigs map[string]string
}

// NewOutbound builds the header rules for cfg's sources; version goes
// into the User-Agent.
func NewOutbound(cfg *Config, version string) *Outbound {
	o := &Outbound{version: version, sourceSigs: map[string]string{}}
	for _, src := range cfg.Sources {
		if h := src.Settings.SignatureHeader; h != "" {
			o.sourceSigs[src.Name] = textproto.CanonicalMIMEHeaderKey(h)
		}
	}
	return o
}

// Outbound header names hookbox sets itself, or that describe the inbound
// connection, in canonical form: a sender's copies never go out (all of
// them, whatever their case), and hookbox's own take their place.
var (
	hopHeaders = map[string]bool{
		"Content-Length": true, "Host": true, "Connection": true, "Transfer-Encoding": true,
		"Keep-Alive": true, "Te": true, "Trailer": true, "Upgrade": true, "Proxy-Connection": true,
		"Expect": true, "Accept-Encoding": true, "User-Agent": true, "Idempotency-Key": true,
	}
	// ownPrefixes are the prefixes of the names hookbox signs and labels
	// with: the Standard Webhooks headers under either name (a sender's
	// would make a receiver check the sender's signature with its own
	// secret) and hookbox's X-Hookbox-*.
	ownPrefixes = []string{"Webhook-", "Svix-", "X-Hookbox-"}
)

// ownHeader reports whether a sender's header named name (canonical) is
// never forwarded.
func ownHeader(name string) bool {
	if hopHeaders[name] {
		return true
	}
	for _, p := range ownPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// withheld reports whether a sender's header named name (canonical) is
// kept from dest: a name hookbox sets, one of dest's configured headers
// (their values replace the sender's), or a provider's signature for a
// destination with forward_signatures = false. With a body a transform
// made (transformed), the provider's signatures are withheld whatever
// forward_signatures says (they would be false), and so are the headers
// that described the sender's body. A name with underscores where such a
// name has dashes is withheld too: Rack, WSGI and CGI servers read
// X_Hookbox_Source and X-Hookbox-Source as one variable
// (HTTP_X_HOOKBOX_SOURCE), so the sender's could stand in for hookbox's.
func (o *Outbound) withheld(dest *Destination, source, name string, transformed bool) bool {
	sigs := transformed || !dest.ForwardSignatures
	if ownHeader(name) || sigs && o.signatureHeader(source, name) || transformed && bodyHeader(name) {
		return true
	}
	if strings.IndexByte(name, '_') < 0 {
		return false
	}
	dashed := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(name, "_", "-"))
	if ownHeader(dashed) || sigs && o.signatureHeader(source, dashed) || transformed && bodyHeader(dashed) {
		return true
	}
	for k := range dest.Headers {
		if textproto.CanonicalMIMEHeaderKey(k) == dashed {
			return true
		}
	}
	return false
}

// Header is the header of attempt number attempt of e to dest at now: the sender's
// headers but those hookbox sets (and, unless the destination wants them,
// the provider's signatures), the destination's configured headers, then
// hookbox's own, signed over e's body. With t, the body a route's
// transform made, it is signed over t's body instead and carries t's
// Content-Type when it has one (over a destination's configured one: it
// describes the body that goes), none of the provider's signatures and none of the
// sender's headers that described its body; the sender's others still go.
func (o *Outbound) Header(dest *Destination, e *Event, t *Transformed, attempt int, now time.Time) (http.Header, error) {
	n := len(e.Header) + len(dest.Headers) + 12
	if t != nil {
		n++ // its Content-Type
	}
	h := make(http.Header, n)
	// One array holds the values, rather than a slice for each.
	vals := make([]string, 0, n)
	set := func(name, v string) {
		vals = append(vals, v)
		h[name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	for _, f := range e.Header {
		// The names come canonical from the edge: no copy is made then.
		name := textproto.CanonicalMIMEHeaderKey(f.Name)
		if o.withheld(dest, e.Source, name, t != nil) ||
			!httpguts.ValidHeaderFieldName(f.Name) || !httpguts.ValidHeaderFieldValue(f.Value) {
			continue // a header the transport would refuse to send fails every attempt
		}
		if old, ok := h[name]; ok {
			h[name] = append(old, f.Value)
		} else {
			set(name, f.Value)
		}
	}
	for k, v := range dest.Headers {
		set(textproto.CanonicalMIMEHeaderKey(k), v) // every copy a sender sent under this name goes
	}
	body := e.Body
	if t != nil {
		body = t.Body
		if t.ContentType != "" {
			set("Content-Type", t.ContentType)
		}
	}
	msgID := MessageID(e.Source, e.ID, dest.Name)
	ts := strconv.FormatInt(now.Unix(), 10)
	set("User-Agent", "hookbox/"+o.version)
	set("Idempotency-Key", msgID) // the delivery is idempotent: a receiver may dedupe by it
	set("Webhook-Id", msgID)
	set("Webhook-Timestamp", ts)
	var sig string
	if dest.Secret != nil {
		s, err := provider.Sign("standard", provider.Settings{Secrets: [][]byte{dest.Secret}}, body, "", msgID, "", now)
		if err != nil {
			return nil, errors.New("cannot sign with the destination secret")
		}
		sig = s.Get("webhook-signature")
		set("Webhook-Signature", sig)
	}
	if dest.SignatureHeaders == SignatureHeadersSvix {
		set("Svix-Id", msgID)
		set("Svix-Timestamp", ts)
		if sig != "" {
			set("Svix-Signature", sig)
		}
	}
	set("X-Hookbox-Source", e.Source)
	set("X-Hookbox-Event-Id", e.ID)
	set("X-Hookbox-Topic", e.Topic)
	set("X-Hookbox-Attempt", strconv.Itoa(attempt))
	if e.Origin != "" {
		// How it came when not as a webhook: "fetched" from the provider's
		// API, with none of the provider's signatures to forward (hookbox's
		// own, above, vouch for it).
		set("X-Hookbox-Origin", e.Origin)
	}
	return h, nil
}

// signatureHeader reports whether a header named name (canonical) of an
// event of source carries a provider's signature or credential.
func (o *Outbound) signatureHeader(source, name string) bool {
	return provider.SignatureHeader(name) || o.sourceSigs[source] == name
}
