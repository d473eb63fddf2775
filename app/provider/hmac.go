package provider

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"time"
)

// The generic hmac provider checks an HMAC-SHA256 of the raw body in a
// configured header, hex (the default) or std base64 (padded or not), behind
// an optional prefix such as "sha256=". It knows no event id or topic: the
// source's configuration supplies them through its overrides.

func init() {
	register("hmac", newHMAC)
	registerSigner("hmac", signHMAC)
}

// hmacConfig is the validated header layout of an hmac source.
type hmacConfig struct {
	header string
	base64 bool
	prefix string
}

func parseHMACConfig(s Settings) (hmacConfig, error) {
	if s.SignatureHeader == "" {
		return hmacConfig{}, errors.New("hmac provider needs a signature header")
	}
	c := hmacConfig{header: textproto.CanonicalMIMEHeaderKey(s.SignatureHeader), prefix: s.SignaturePrefix}
	switch s.SignatureEncoding {
	case "", "hex":
	case "base64":
		c.base64 = true
	default:
		return hmacConfig{}, fmt.Errorf("hmac provider: unknown signature encoding %q (want hex or base64)", s.SignatureEncoding)
	}
	return c, nil
}

func newHMAC(s Settings) (Verifier, error) {
	c, err := parseHMACConfig(s)
	if err != nil {
		return nil, err
	}
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, _ time.Time) (Verdict, error) {
		v := r.Header.Get(c.header)
		if v == "" {
			return Verdict{}, ErrMissingSignature
		}
		if len(v) < len(c.prefix) || v[:len(c.prefix)] != c.prefix {
			return Verdict{}, ErrMalformed
		}
		v = v[len(c.prefix):]
		var sig [macSize]byte
		ok := false
		if c.base64 {
			ok = decodeBase64(v, &sig, true)
		} else {
			ok = decodeHex(v, &sig)
		}
		if !ok {
			return Verdict{}, ErrMalformed
		}
		if !matchOne(keys, &message{body: r.Body}, &sig) {
			return Verdict{}, ErrBadSignature
		}
		return Verdict{}, nil
	}, nil
}

func signHMAC(s Settings, body []byte, _, _, _ string, _ time.Time, h http.Header) error {
	c, err := parseHMACConfig(s)
	if err != nil {
		return err
	}
	mac := computeMAC(s.Secrets[0], &message{body: body})
	enc := hex.EncodeToString(mac)
	if c.base64 {
		enc = base64.StdEncoding.EncodeToString(mac)
	}
	h.Set(c.header, c.prefix+enc)
	return nil
}
