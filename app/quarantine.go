// The quarantine: requests a source refused for their signature (bad or
// stale), kept a while, bounded, so that a secret typed wrong after a
// rotation loses nothing: once the secret is fixed, hookbox checks them
// again and takes in those that pass (app/receive's recheck). Nothing in
// the quarantine is ever forwarded as it is.

package app

import (
	"sort"
	"time"
)

// Quarantined is one request a source refused for its signature, as it
// arrived.
type Quarantined struct {
	// ID is the store's number for it, in the order they were kept.
	ID     uint64
	Source string
	// At is when it arrived: a recheck verifies it at that time, and a
	// request that passes is taken in with it.
	At time.Time
	// Client is the address it came from.
	Client string
	// Reason is why it was refused (the verifier's words).
	Reason string
	Header []HeaderField
	Body   []byte
}

// Size is what q counts toward its source's bytes.
func (q *Quarantined) Size() int64 {
	n := len(q.Body) + len(q.Client) + len(q.Reason)
	for _, h := range q.Header {
		n += len(h.Name) + len(h.Value)
	}
	return int64(n)
}

// QuarantineLimits bound each source's quarantine ([quarantine]).
type QuarantineLimits struct {
	// Requests is the most a source keeps (0: no quarantine).
	Requests int
	// Bytes is the most the kept requests of a source weigh (Size).
	Bytes int64
	// Keep is how long one is kept.
	Keep time.Duration
}

// Defaults of [quarantine].
const (
	DefaultQuarantineRequests = 1000
	DefaultQuarantineBytes    = 16 << 20
	DefaultQuarantineKeep     = 7 * 24 * time.Hour
)

// The rates at which a source takes new requests into its quarantine: a
// flood of forged requests is refused as any bad request is, and only
// counted, past them.
const (
	QuarantinePerSourceMinute = 60
	QuarantinePerClientMinute = 10
	// QuarantineClientShare is the part of a source's quarantine (requests
	// and bytes) that one client address may hold: 1/10.
	QuarantineClientShare = 10
)

// On reports whether l keeps anything.
func (l QuarantineLimits) On() bool { return l.Requests > 0 && l.Bytes > 0 }

// PerClient is the most requests and bytes one address may hold.
func (l QuarantineLimits) PerClient() (int, int64) {
	return max(1, l.Requests/QuarantineClientShare), max(1, l.Bytes/QuarantineClientShare)
}

// QuarantineHeld is what the stores load of a kept request to decide
// (QuarantineFit) what makes room for a new one.
type QuarantineHeld struct {
	ID     uint64
	At     time.Time
	Client string
	Size   int64
}

// QuarantineFit decides whether q joins held (the source's quarantine,
// oldest first) within l, and which of held go to make room: those past
// l.Keep at q.At first, then, while it is full, the oldest of the address
// that holds the most (so that a flood pushes out its own, never the
// others'). It refuses q when q's address already holds its share, or when
// q alone is larger than a share. The stores load held and apply the
// verdict in one transaction.
func QuarantineFit(held []QuarantineHeld, q *Quarantined, l QuarantineLimits) (ok bool, evict []uint64) {
	if !l.On() {
		return false, nil
	}
	size := q.Size()
	perN, perB := l.PerClient()
	if size > perB {
		return false, nil
	}
	type tally struct {
		n int
		b int64
		// kept are the indices in held of what remains, oldest first.
		kept []int
	}
	byClient := map[string]*tally{}
	n, b := 0, int64(0)
	for i, h := range held {
		if l.Keep > 0 && h.At.Before(q.At.Add(-l.Keep)) {
			evict = append(evict, h.ID)
			continue
		}
		t := byClient[h.Client]
		if t == nil {
			t = &tally{}
			byClient[h.Client] = t
		}
		t.n++
		t.b += h.Size
		t.kept = append(t.kept, i)
		n++
		b += h.Size
	}
	if t := byClient[q.Client]; t != nil && (t.n+1 > perN || t.b+size > perB) {
		return false, nil
	}
	for n+1 > l.Requests || b+size > l.Bytes {
		// The address that holds the most; of equals, the one whose oldest
		// is oldest.
		var worst *tally
		for _, t := range byClient {
			if len(t.kept) == 0 {
				continue
			}
			if worst == nil || t.n > worst.n || t.n == worst.n && t.kept[0] < worst.kept[0] {
				worst = t
			}
		}
		if worst == nil {
			return false, nil
		}
		h := held[worst.kept[0]]
		worst.kept = worst.kept[1:]
		worst.n--
		worst.b -= h.Size
		n--
		b -= h.Size
		evict = append(evict, h.ID)
	}
	sort.Slice(evict, func(i, j int) bool { return evict[i] < evict[j] })
	return true, evict
}

// QuarantineGate is the rate at which new requests enter the quarantine:
// per source QuarantinePerSourceMinute and per address
// QuarantinePerClientMinute, in windows of a minute. It keeps at most the
// addresses it let in this minute, so a flood from many addresses cannot
// grow it. Safe for one goroutine; the receiver guards it.
type QuarantineGate struct {
	minute  time.Time
	sources map[string]*gateMinute
}

type gateMinute struct {
	n       int
	clients map[string]int
}

// Allow reports whether a request of source from client at now may enter
// the quarantine, and counts it when so.
func (g *QuarantineGate) Allow(source, client string, now time.Time) bool {
	m := now.Truncate(time.Minute)
	if !m.Equal(g.minute) || g.sources == nil {
		g.minute, g.sources = m, map[string]*gateMinute{}
	}
	s := g.sources[source]
	if s == nil {
		s = &gateMinute{clients: map[string]int{}}
		g.sources[source] = s
	}
	if s.n >= QuarantinePerSourceMinute || s.clients[client] >= QuarantinePerClientMinute {
		return false
	}
	s.n++
	s.clients[client]++
	return true
}

// OriginQuarantine is Event.Origin of an event taken in from the
// quarantine once a fixed secret verified it.
const OriginQuarantine = "quarantine"

// AuditQuarantineRecheck and AuditQuarantineClear are the audit actions
// of the admin API's recheck and clear of a source's quarantine.
const (
	AuditQuarantineRecheck = "quarantine.recheck"
	AuditQuarantineClear   = "quarantine.clear"
)

// QuarantineRecheck is what a recheck of a source's quarantine did.
type QuarantineRecheck struct {
	Source string `json:"source"`
	// Checked counts the requests checked; Recovered those taken in
	// (Duplicate of them hookbox held already); Remaining what stays.
	Checked   int `json:"checked"`
	Recovered int `json:"recovered"`
	Duplicate int `json:"duplicate"`
	Remaining int `json:"remaining"`
}
