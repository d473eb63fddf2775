package provider

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// timestamped is the scheme Stripe and Paddle share: one header lists a
// Unix timestamp and one or more lowercase hex HMAC-SHA256 signatures of
// timestamp + join + body; a timestamp further than the tolerance from now
// is refused; the event id and topic are fields of the JSON body.
type timestamped struct {
	header string // the signature header, e.g. Stripe-Signature
	list   tsList // how its value lists the timestamp and the signatures
	join   string // between the timestamp and the body in the signed bytes
	// identify reads the event id and topic from a verified body.
	identify func(body []byte) Verdict
}

// verifier is the scheme's Verifier for a source's settings.
func (t *timestamped) verifier(s Settings) (Verifier, error) {
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	tol, err := tolerance(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, now time.Time) (Verdict, error) {
		v := r.Header.Get(t.header)
		if v == "" {
			return Verdict{}, ErrMissingSignature
		}
		ts, unix, err := t.list.parse(v)
		if err != nil {
			return Verdict{}, err
		}
		if !fresh(unix, now, tol) {
			return Verdict{}, ErrStaleTimestamp
		}
		if !t.list.match(v, keys, &message{pre: [4]string{ts, t.join}, body: r.Body}) {
			return Verdict{}, ErrBadSignature
		}
		return t.identify(r.Body), nil
	}, nil
}

// sign sets the scheme's header on h for body at now, signed with the
// source's first secret.
func (t *timestamped) sign(s Settings, body []byte, _, _, _ string, now time.Time, h http.Header) error {
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := computeMAC(s.Secrets[0], &message{pre: [4]string{ts, t.join}, body: body})
	h.Set(t.header, t.list.tsKey+"="+ts+string(t.list.sep)+t.list.sigKey+"="+hex.EncodeToString(mac))
	return nil
}
