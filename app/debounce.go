package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Plan says where an accepted event goes: deliveries opened at once, and
// per-entity pending deliveries of debounced routes.
type Plan struct {
	Direct   []string
	Debounce []*DebounceOp
	// Unkeyed names the debounced routes whose key could not be built:
	// their destinations are in Direct; the store counts them per route.
	Unkeyed []string
}

// Empty reports whether the plan sends the event nowhere (unrouted).
func (p *Plan) Empty() bool { return p == nil || len(p.Direct) == 0 && len(p.Debounce) == 0 }

// DebounceOp is one debounced route's part of a plan: the entity key the
// event belongs to, the route's rules, and (set by Store.Accept) what
// became of it.
type DebounceOp struct {
	Route  string
	Key    string
	Delay  time.Duration // the debounce window
	Limit  int           // sends per Window; 0 means no rate limit
	Window time.Duration
	To     []string

	Result DebounceResult
}

// DebounceResult is what Accept did with a DebounceOp.
type DebounceResult uint8

// The results of a DebounceOp, in the order they are checked.
const (
	// Merged: the key had a pending delivery; the event replaced its body.
	Merged DebounceResult = iota + 1
	// Deferred: the key used its rate limit; a pending delivery opened for
	// when the window frees a slot.
	Deferred
	// Opened: a pending delivery opened, due after the debounce window.
	Opened
)

// RateLimit is a parsed "N/duration" rate limit.
type RateLimit struct {
	N      int
	Window time.Duration
}

// ParseRateLimit parses "5/1m": at most 5 sends per sliding minute.
func ParseRateLimit(s string) (RateLimit, error) {
	n, d, ok := strings.Cut(s, "/")
	if !ok {
		return RateLimit{}, fmt.Errorf("%q: use N/duration, e.g. \"5/1m\"", s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 || count > 1_000_000 {
		return RateLimit{}, fmt.Errorf("%q: N must be a whole number from 1", s)
	}
	window, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil || window <= 0 {
		return RateLimit{}, fmt.Errorf("%q: %q is not a positive duration", s, d)
	}
	return RateLimit{N: count, Window: window}, nil
}
