package provider

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Stripe signs t + "." + body with the endpoint secret's string bytes as-is
// ("whsec_…" is not decoded): lowercase hex HMAC-SHA256 in "v1" entries of
// "Stripe-Signature: t=…,v1=…". Several v1 entries appear while a secret
// rolls; v0 and unknown schemes are ignored.
const hdrStripeSignature = "Stripe-Signature"

var stripeList = tsList{sep: ',', tsKey: "t", sigKey: "v1"}

func init() {
	register("stripe", newStripe)
	registerSigner("stripe", signStripe)
}

func newStripe(s Settings) (Verifier, error) {
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	tol, err := tolerance(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, now time.Time) (Verdict, error) {
		v := r.Header.Get(hdrStripeSignature)
		if v == "" {
			return Verdict{}, ErrMissingSignature
		}
		ts, unix, err := stripeList.parse(v)
		if err != nil {
			return Verdict{}, err
		}
		if !fresh(unix, now, tol) {
			return Verdict{}, ErrStaleTimestamp
		}
		if !stripeList.match(v, keys, &message{pre: [4]string{ts, "."}, body: r.Body}) {
			return Verdict{}, ErrBadSignature
		}
		var b struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		decodeBody(r.Body, &b)
		return Verdict{ID: b.ID, Topic: b.Type}, nil
	}, nil
}

func signStripe(s Settings, body []byte, _, _, _ string, now time.Time, h http.Header) error {
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := computeMAC(s.Secrets[0], &message{pre: [4]string{ts, "."}, body: body})
	h.Set(hdrStripeSignature, "t="+ts+",v1="+hex.EncodeToString(mac))
	return nil
}
