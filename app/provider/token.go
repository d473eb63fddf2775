package provider

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"
)

// The token provider is for the merchant's own systems: a shared secret sent
// as "Authorization: Bearer <secret>". Nothing signs the body. The event id is
// the Idempotency-Key header, else a freshly generated one, so a request
// without it is never a duplicate; the topic is X-Event-Type.
const (
	hdrAuthorization  = "Authorization"
	hdrIdempotencyKey = "Idempotency-Key"
	hdrEventType      = "X-Event-Type"
	bearerScheme      = "Bearer"
	generatedIDPrefix = "gen_"
)

func init() {
	register("token", newToken)
	registerSigner("token", signToken)
}

func newToken(s Settings) (Verifier, error) {
	if len(s.Secrets) == 0 {
		return nil, errNoSecret
	}
	// Compare digests, so the comparison is constant-time and equal-length
	// whatever the length of the presented token or of the secrets.
	digests := make([][sha256.Size]byte, len(s.Secrets))
	for i, sec := range s.Secrets {
		if len(sec) == 0 {
			return nil, errors.New("token provider: empty secret")
		}
		digests[i] = sha256.Sum256(sec)
	}
	return func(r Request, _ time.Time) (Verdict, error) {
		v := r.Header.Get(hdrAuthorization)
		if v == "" {
			return Verdict{}, ErrMissingSignature
		}
		scheme, tok, ok := strings.Cut(v, " ")
		tok = strings.TrimLeft(tok, " ")
		if !ok || !strings.EqualFold(scheme, bearerScheme) || tok == "" {
			return Verdict{}, ErrMalformed
		}
		got := sha256.Sum256([]byte(tok))
		match := 0
		for i := range digests {
			match |= subtle.ConstantTimeCompare(got[:], digests[i][:])
		}
		if match != 1 {
			return Verdict{}, ErrBadSignature
		}
		id := r.Header.Get(hdrIdempotencyKey)
		if id == "" {
			id = randomID(generatedIDPrefix)
		}
		return Verdict{ID: id, Topic: r.Header.Get(hdrEventType)}, nil
	}, nil
}

func signToken(s Settings, _ []byte, _, id, topic string, _ time.Time, h http.Header) error {
	h.Set(hdrAuthorization, bearerScheme+" "+string(s.Secrets[0]))
	setIf(h, hdrIdempotencyKey, id)
	setIf(h, hdrEventType, topic)
	return nil
}
