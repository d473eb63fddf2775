package app

import (
	"runtime"
	"sync"
)

// Body searches read bodies at the speed of a core: a few at once keep
// the node's cores for the webhooks it accepts (issue 42). SearchGate
// bounds how many run at once on a node and per caller.

// SearchesPerCaller is how many body searches one caller (a user or a
// token, Identity.Actor) runs at once.
const SearchesPerCaller = 2

// SearchRetryAfter is the seconds a caller refused by a SearchGate is
// told to wait: a search answers within its budget of 1 s.
const SearchRetryAfter = 1

// SearchGate lets at most its node-wide bound of body searches run at
// once, and SearchesPerCaller per caller. The zero value is not usable:
// make one with NewSearchGate. It is safe for concurrent use.
type SearchGate struct {
	max, perCaller int
	mu             sync.Mutex
	running        int
	by             map[string]int
}

// NewSearchGate returns a gate for max searches at once on the node (0:
// DefaultSearches) and perCaller per caller (0: SearchesPerCaller).
func NewSearchGate(max, perCaller int) *SearchGate {
	if max <= 0 {
		max = DefaultSearches()
	}
	if perCaller <= 0 {
		perCaller = SearchesPerCaller
	}
	return &SearchGate{max: max, perCaller: perCaller, by: map[string]int{}}
}

// DefaultSearches is the node-wide bound: half the CPUs, at least one.
func DefaultSearches() int { return max(1, runtime.NumCPU()/2) }

// Enter takes a place for a search by caller, or refuses with an EBUSY
// error that says why; leave gives the place back (call it once).
func (g *SearchGate) Enter(caller string) (leave func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.by[caller] >= g.perCaller:
		return nil, Errorf(EBUSY, "you have %d body searches running (the most one caller runs at once): try again when one has answered", g.by[caller])
	case g.running >= g.max:
		return nil, Errorf(EBUSY, "%d body searches are running on this node (the most at once): try again in a moment", g.running)
	}
	g.running++
	g.by[caller]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.running--
			if g.by[caller]--; g.by[caller] == 0 {
				delete(g.by, caller)
			}
		})
	}, nil
}
