// Package provider checks that an inbound webhook is genuine and tells what
// it is, for every sender hookbox knows. Everything here is a pure function
// over the raw body, the request headers, the source's secrets and the
// current time: no HTTP server, no storage.
package provider

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Header gives case-insensitive access to request header values.
// net/http.Header satisfies it, and so does a small adapter over Fiber.
type Header interface {
	Get(name string) string
}

// Request is what a verifier sees: the body exactly as received, the headers,
// and the URL the sender addressed (public_url + path), which Square signs.
type Request struct {
	Body   []byte
	Header Header
	URL    string
}

// Settings configure one source's verifier.
type Settings struct {
	// Secrets are tried in order; several allow rotation without downtime.
	Secrets [][]byte
	// Tolerance is how far a signed timestamp may be from now (default 5m).
	Tolerance time.Duration

	// SignatureHeader, SignatureEncoding ("hex" or "base64") and
	// SignaturePrefix (e.g. "sha256=") configure the generic hmac provider.
	SignatureHeader   string
	SignatureEncoding string
	SignaturePrefix   string
}

// Verdict is what a verifier learned from a genuine request.
type Verdict struct {
	// ID is the provider's event id, "" when the provider has none in this
	// request (the caller answers 400 unless the source overrides the rule).
	ID string
	// Topic is the provider's event type, "" when absent.
	Topic string
	// Ping marks a handshake (WooCommerce's unsigned webhook_id=N on hook
	// creation) to be answered 200 without storing anything.
	Ping bool
}

// Verifier checks one request against one source's settings at time now.
type Verifier func(r Request, now time.Time) (Verdict, error)

// DefaultTolerance is the default allowed clock skew for timestamped schemes.
const DefaultTolerance = 5 * time.Minute

// The errors a verifier returns. Each one means "not genuine" and is answered
// 401; they never contain secret or signature material.
var (
	ErrMissingSignature = errors.New("missing signature")
	ErrMalformed        = errors.New("malformed signature header")
	ErrBadSignature     = errors.New("signature does not match")
	ErrStaleTimestamp   = errors.New("timestamp outside tolerance")
)

// factories maps a provider name to the constructor of its verifier.
var factories = map[string]func(Settings) (Verifier, error){}

// register is called from each provider's file.
func register(name string, f func(Settings) (Verifier, error)) { factories[name] = f }

// Names lists the known provider names, sorted.
func Names() []string {
	out := make([]string, 0, len(factories))
	for n := range factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Known reports whether name is a provider hookbox knows.
func Known(name string) bool { _, ok := factories[name]; return ok }

// New builds the verifier for provider name with settings s.
func New(name string, s Settings) (Verifier, error) {
	f, ok := factories[name]
	if !ok {
		return nil, fmt.Errorf("unknown provider %q", name)
	}
	if s.Tolerance == 0 {
		s.Tolerance = DefaultTolerance
	}
	v, err := f(s)
	if err != nil {
		return nil, err
	}
	// A request without headers is answered like any unsigned one, not with a panic.
	return func(r Request, now time.Time) (Verdict, error) {
		if r.Header == nil {
			r.Header = noHeader{}
		}
		return v(r, now)
	}, nil
}

// noHeader is the empty header set.
type noHeader struct{}

// Get returns "" for every name.
func (noHeader) Get(string) string { return "" }

// headerViews maps a provider name to how its templates see the headers.
var headerViews = map[string]func(Header) Header{}

// registerHeaders is called from the file of a provider whose headers come
// under more than one name.
func registerHeaders(name string, f func(Header) Header) { headerViews[name] = f }

// Headers returns h as the templates of a source of provider name read it
// (id, topic and route key templates, {header.Name}): for shopify, a name
// of either form of a header Shopify sends in both (X-Shopify-Shop-Domain,
// shopify-shop-domain) finds the other form when the one named is absent,
// so templates written for one form keep working with the other. For every
// other provider it is h.
func Headers(name string, h Header) Header {
	if f := headerViews[name]; f != nil && h != nil {
		return f(h)
	}
	return h
}
