package provider

import (
	"encoding/base64"
	"errors"
	"net/http"
	"time"
)

// Square signs the notification URL followed by the raw body, with no
// separator: std base64 HMAC-SHA256 with the subscription's signature key.
// The hex spelling of the same tag (an old square-go-sdk bug) is refused.
const hdrSquareSignature = "X-Square-Hmacsha256-Signature"

// ErrNoURL means the caller did not fill Request.URL (or Sign's url) for a
// provider that signs the URL: a bug or a missing public_url, not the sender's fault.
var ErrNoURL = errors.New("request URL required to check this signature")

func init() {
	register("square", newSquare)
	registerSigner("square", signSquare)
}

func newSquare(s Settings) (Verifier, error) {
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, _ time.Time) (Verdict, error) {
		if r.URL == "" {
			return Verdict{}, ErrNoURL
		}
		v := r.Header.Get(hdrSquareSignature)
		if v == "" {
			return Verdict{}, ErrMissingSignature
		}
		var sig [macSize]byte
		if !decodeBase64(v, &sig, false) {
			return Verdict{}, ErrMalformed
		}
		if !matchOne(keys, &message{pre: [4]string{r.URL}, body: r.Body}, &sig) {
			return Verdict{}, ErrBadSignature
		}
		var b struct {
			EventID string `json:"event_id"`
			Type    string `json:"type"`
		}
		decodeBody(r.Body, &b)
		return Verdict{ID: b.EventID, Topic: b.Type}, nil
	}, nil
}

func signSquare(s Settings, body []byte, url, _, _ string, _ time.Time, h http.Header) error {
	if url == "" {
		return ErrNoURL
	}
	mac := computeMAC(s.Secrets[0], &message{pre: [4]string{url}, body: body})
	h.Set(hdrSquareSignature, base64.StdEncoding.EncodeToString(mac))
	return nil
}
