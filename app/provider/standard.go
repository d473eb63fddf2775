package provider

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (and Svix, its origin) sign id + "." + ts + "." + body:
// std base64 HMAC-SHA256 in a space-separated list of "v1,<sig>" entries;
// other versions (such as "v1a," for asymmetric keys) are ignored. The key is
// the base64 decoding of the secret without its "whsec_" prefix. Svix's own
// header names are read when none of the webhook-* ones is present.
const (
	hdrSWID        = "Webhook-Id"
	hdrSWTimestamp = "Webhook-Timestamp"
	hdrSWSignature = "Webhook-Signature"
	hdrSvixID      = "Svix-Id"
	hdrSvixTime    = "Svix-Timestamp"
	hdrSvixSig     = "Svix-Signature"
	swSecretPrefix = "whsec_"
	swVersion      = "v1"
)

func init() {
	register("standard", newStandard)
	registerSigner("standard", signStandard)
}

// swCore checks the Standard Webhooks headers; providers built on it differ
// only in how the key comes from the secret and where id and topic live.
type swCore struct {
	keys []*macKey
	tol  time.Duration
}

// newSWCore builds the core over already derived keys.
func newSWCore(s Settings, keys [][]byte) (*swCore, error) {
	tol, err := tolerance(s)
	if err != nil {
		return nil, err
	}
	c := &swCore{tol: tol, keys: make([]*macKey, len(keys))}
	for i, k := range keys {
		c.keys[i] = newMACKey(k)
	}
	return c, nil
}

// verify checks r and returns its webhook id.
func (c *swCore) verify(r Request, now time.Time) (string, error) {
	id, ts, sig := r.Header.Get(hdrSWID), r.Header.Get(hdrSWTimestamp), r.Header.Get(hdrSWSignature)
	if id == "" && ts == "" && sig == "" {
		id, ts, sig = r.Header.Get(hdrSvixID), r.Header.Get(hdrSvixTime), r.Header.Get(hdrSvixSig)
	}
	if sig == "" {
		return "", ErrMissingSignature
	}
	if id == "" || len(sig) > maxListHeader {
		return "", ErrMalformed
	}
	unix, ok := parseUnix(ts)
	if !ok {
		return "", ErrMalformed
	}
	var mac [macSize]byte
	n := 0
	sp := splitter{rest: sig, sep: ' '}
	for f, ok := sp.next(); ok; f, ok = sp.next() {
		if v, ok := swEntry(f); ok && decodeBase64(v, &mac, false) {
			n++
		}
	}
	if n == 0 {
		return "", ErrMalformed
	}
	if !fresh(unix, now, c.tol) {
		return "", ErrStaleTimestamp
	}
	msg := message{pre: [4]string{id, ".", ts, "."}, body: r.Body}
	var want [macSize]byte
	for _, k := range c.keys {
		k.sum(&msg, &mac)
		sp := splitter{rest: sig, sep: ' '}
		for f, ok := sp.next(); ok; f, ok = sp.next() {
			if v, ok := swEntry(f); ok && decodeBase64(v, &want, false) && hmac.Equal(mac[:], want[:]) {
				return id, nil
			}
		}
	}
	return "", ErrBadSignature
}

// swEntry returns the signature of a "v1,<sig>" list entry.
func swEntry(f string) (string, bool) {
	ver, v, ok := strings.Cut(f, ",")
	if !ok || ver != swVersion {
		return "", false
	}
	return v, true
}

// signSW writes the Standard Webhooks headers for body signed with key.
func signSW(key, body []byte, id string, now time.Time, h http.Header) {
	if id == "" {
		id = randomID("msg_")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := computeMAC(key, &message{pre: [4]string{id, ".", ts, "."}, body: body})
	h.Set(hdrSWID, id)
	h.Set(hdrSWTimestamp, ts)
	h.Set(hdrSWSignature, swVersion+","+base64.StdEncoding.EncodeToString(mac))
}

// standardKey derives the HMAC key from a Standard Webhooks secret.
func standardKey(secret []byte) ([]byte, error) {
	s := string(bytes.TrimPrefix(secret, []byte(swSecretPrefix)))
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		// Some tools print the secret without padding.
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	return key, err
}

// standardKeys derives the keys of all secrets of s; the error names the
// secret by position only.
func standardKeys(s Settings) ([][]byte, error) {
	if len(s.Secrets) == 0 {
		return nil, errNoSecret
	}
	keys := make([][]byte, len(s.Secrets))
	for i, sec := range s.Secrets {
		k, err := standardKey(sec)
		if err != nil {
			return nil, fmt.Errorf("secret %d of %d is not valid base64 after the optional %s prefix", i+1, len(s.Secrets), swSecretPrefix)
		}
		keys[i] = k
	}
	return keys, nil
}

func newStandard(s Settings) (Verifier, error) {
	keys, err := standardKeys(s)
	if err != nil {
		return nil, err
	}
	c, err := newSWCore(s, keys)
	if err != nil {
		return nil, err
	}
	return func(r Request, now time.Time) (Verdict, error) {
		id, err := c.verify(r, now)
		if err != nil {
			return Verdict{}, err
		}
		var b struct {
			Type string `json:"type"`
		}
		decodeBody(r.Body, &b)
		return Verdict{ID: id, Topic: b.Type}, nil
	}, nil
}

func signStandard(s Settings, body []byte, _, id, _ string, now time.Time, h http.Header) error {
	key, err := standardKey(s.Secrets[0])
	if err != nil {
		return fmt.Errorf("secret 1 is not valid base64 after the optional %s prefix", swSecretPrefix)
	}
	signSW(key, body, id, now, h)
	return nil
}
