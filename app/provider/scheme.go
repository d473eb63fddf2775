package provider

// Building blocks shared by the providers: keyed HMAC-SHA256 without
// allocation on the hot path, signature decoding into fixed buffers, strict
// timestamp parsing and the tolerance check, and a lazy splitter for
// signature headers that carry several entries.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Canonical header names: net/http.Header.Get canonicalises the name it is
// given and allocates when the name is not canonical already, so the hot
// path always asks with the canonical spelling.
const (
	hdrContentType = "Content-Type"
)

// maxListHeader bounds a signature header that carries a list of entries
// (Stripe, Paddle, Standard Webhooks). Genuine senders use a few hundred
// bytes; anything past this is refused before it is walked.
const maxListHeader = 8 << 10

// macSize is the size of an HMAC-SHA256 tag.
const macSize = sha256.Size

// message is the byte string a sender signs: the pre strings, in order,
// followed by the raw body. Keeping the parts apart avoids building the
// concatenation on every request.
type message struct {
	pre  [4]string
	body []byte
}

// macKey computes HMAC-SHA256 under one secret. Its hash states are pooled:
// a verifier runs concurrently, and hmac.New allocates several objects.
type macKey struct {
	pool sync.Pool
}

// macState is one pooled hash state with buffers that live on the heap
// already, so writing strings and reading the sum allocate nothing.
type macState struct {
	h       hash.Hash
	scratch [64]byte
	sum     [macSize]byte
}

// newMACKey returns a macKey over a private copy of key.
func newMACKey(key []byte) *macKey {
	k := append([]byte(nil), key...)
	m := &macKey{}
	m.pool.New = func() any { return &macState{h: hmac.New(sha256.New, k)} }
	return m
}

// sum writes the HMAC of msg into out.
func (m *macKey) sum(msg *message, out *[macSize]byte) {
	st := m.pool.Get().(*macState)
	st.h.Reset()
	for _, s := range msg.pre {
		for len(s) > 0 {
			n := copy(st.scratch[:], s)
			st.h.Write(st.scratch[:n])
			s = s[n:]
		}
	}
	st.h.Write(msg.body)
	st.h.Sum(st.sum[:0])
	*out = st.sum
	m.pool.Put(st)
}

// computeMAC is the allocation-happy one-shot form used by the signing side.
func computeMAC(key []byte, msg *message) []byte {
	h := hmac.New(sha256.New, key)
	for _, s := range msg.pre {
		h.Write([]byte(s))
	}
	h.Write(msg.body)
	return h.Sum(nil)
}

// newKeys validates the secrets of s and builds one macKey per secret.
func newKeys(s Settings) ([]*macKey, error) {
	if len(s.Secrets) == 0 {
		return nil, errNoSecret
	}
	keys := make([]*macKey, len(s.Secrets))
	for i, sec := range s.Secrets {
		keys[i] = newMACKey(sec)
	}
	return keys, nil
}

// errNoSecret is a configuration error from a factory.
var errNoSecret = errors.New("no secret configured")

// tolerance returns the tolerance of s, defaulted, or an error if negative.
func tolerance(s Settings) (time.Duration, error) {
	switch {
	case s.Tolerance < 0:
		return 0, fmt.Errorf("negative tolerance %s", s.Tolerance)
	case s.Tolerance == 0:
		return DefaultTolerance, nil
	}
	return s.Tolerance, nil
}

// matchOne reports whether want is the HMAC of msg under any of keys.
func matchOne(keys []*macKey, msg *message, want *[macSize]byte) bool {
	var mac [macSize]byte
	for _, k := range keys {
		k.sum(msg, &mac)
		if hmac.Equal(mac[:], want[:]) {
			return true
		}
	}
	return false
}

// decodeHex decodes a 64-digit hex signature (either case) into out.
func decodeHex(s string, out *[macSize]byte) bool {
	if len(s) != 2*macSize {
		return false
	}
	var buf [2 * macSize]byte
	copy(buf[:], s)
	_, err := hex.Decode(out[:], buf[:])
	return err == nil
}

var (
	b64Std    = base64.StdEncoding.Strict()
	b64RawStd = base64.RawStdEncoding.Strict()
)

// decodeBase64 decodes a std base64 signature with padding (44 characters),
// or without it when raw is set (43 characters), into out. Strict decoding
// refuses non-zero trailing bits, so each tag has exactly one spelling.
func decodeBase64(s string, out *[macSize]byte, raw bool) bool {
	var buf [44]byte
	var dst [macSize + 1]byte
	var n int
	var err error
	switch {
	case len(s) == 44:
		copy(buf[:], s)
		n, err = b64Std.Decode(dst[:], buf[:44])
	case raw && len(s) == 43:
		copy(buf[:], s)
		n, err = b64RawStd.Decode(dst[:], buf[:43])
	default:
		return false
	}
	if err != nil || n != macSize {
		return false
	}
	copy(out[:], dst[:macSize])
	return true
}

// parseUnix parses a Unix timestamp in seconds: ASCII digits only (no sign,
// no spaces), and it must fit an int64.
func parseUnix(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// maxSkewSeconds is the largest whole-second difference that still fits a
// time.Duration together with a sub-second remainder.
const maxSkewSeconds = int64(1<<63-1)/int64(time.Second) - 1

// fresh reports whether the signed timestamp ts (Unix seconds) lies within
// tol of now, in either direction. It never overflows, whatever ts and now.
func fresh(ts int64, now time.Time, tol time.Duration) bool {
	n := now.Unix()
	// The true |n-ts| is below 2^64, so unsigned wrap-around gives it exactly.
	var d uint64
	if n >= ts {
		d = uint64(n) - uint64(ts)
	} else {
		d = uint64(ts) - uint64(n)
	}
	if d > uint64(maxSkewSeconds) {
		return false
	}
	skew := time.Duration(n-ts)*time.Second + time.Duration(now.Nanosecond())
	return skew <= tol && skew >= -tol
}

// splitter walks the elements of a header split on sep, trimming spaces
// around each one and skipping empty ones, without allocating.
type splitter struct {
	rest string
	sep  byte
}

// next returns the next non-empty element.
func (sp *splitter) next() (string, bool) {
	for sp.rest != "" {
		var f string
		if i := strings.IndexByte(sp.rest, sp.sep); i >= 0 {
			f, sp.rest = sp.rest[:i], sp.rest[i+1:]
		} else {
			f, sp.rest = sp.rest, ""
		}
		if f = strings.TrimSpace(f); f != "" {
			return f, true
		}
	}
	return "", false
}

// tsList describes a "ts=…<sep>sig=…<sep>sig=…" header (Stripe, Paddle).
type tsList struct {
	sep    byte
	tsKey  string
	sigKey string
}

// parse checks the header: exactly one timestamp of digits, and at least one
// decodable entry of the supported scheme. Other keys, elements without '='
// and undecodable entries are ignored, as the senders' own libraries do.
// It returns the timestamp as sent (it is part of the signed message).
func (l tsList) parse(v string) (ts string, unix int64, err error) {
	if len(v) > maxListHeader {
		return "", 0, ErrMalformed
	}
	seen, sigs := false, 0
	sp := splitter{rest: v, sep: l.sep}
	for f, ok := sp.next(); ok; f, ok = sp.next() {
		k, val, found := strings.Cut(f, "=")
		if !found {
			continue
		}
		switch strings.TrimSpace(k) {
		case l.tsKey:
			if seen {
				return "", 0, ErrMalformed
			}
			seen = true
			ts = strings.TrimSpace(val)
			var ok bool
			if unix, ok = parseUnix(ts); !ok {
				return "", 0, ErrMalformed
			}
		case l.sigKey:
			var sig [macSize]byte
			if decodeHex(strings.TrimSpace(val), &sig) {
				sigs++
			}
		}
	}
	if !seen || sigs == 0 {
		return "", 0, ErrMalformed
	}
	return ts, unix, nil
}

// match reports whether any entry of the supported scheme in v is the HMAC
// of msg under any of keys.
func (l tsList) match(v string, keys []*macKey, msg *message) bool {
	var mac, sig [macSize]byte
	for _, k := range keys {
		k.sum(msg, &mac)
		sp := splitter{rest: v, sep: l.sep}
		for f, ok := sp.next(); ok; f, ok = sp.next() {
			key, val, found := strings.Cut(f, "=")
			if !found || strings.TrimSpace(key) != l.sigKey {
				continue
			}
			if decodeHex(strings.TrimSpace(val), &sig) && hmac.Equal(mac[:], sig[:]) {
				return true
			}
		}
	}
	return false
}

// decodeBody fills the fields of v that the body carries. A body that is not
// JSON leaves v zero; a field of the wrong JSON type stays zero while the
// others are still filled (encoding/json carries on past type errors).
// It runs only after the signature checked out.
func decodeBody(body []byte, v any) {
	_ = json.Unmarshal(body, v)
}
