// A body search's matching on two cores (issue 47): a packed body costs
// 6-10 µs to unpack (zstd with the file's dictionary), ten times what the
// matcher takes, so the search walks the events on one goroutine, in
// order, and has the bodies of each batch unpacked and matched on two
// goroutines first.

package bboltstore

import (
	"runtime"
	"sync/atomic"
	"time"

	"hookbox/app"
)

// A batch is at most batchEvents events and, past its first, at most
// app.SearchCheckBytes unpacked: what the search reads between two looks
// at its clock and its caller, so that it overruns its deadline by one
// batch's work at most.
const batchEvents = 128

// maxMatchers bounds the goroutines one search matches bodies on: two,
// as app.DefaultSearches lets half as many searches run at once as there
// are CPUs, so that searches alone never keep more than every CPU busy
// (and each for at most its second).
const maxMatchers = 2

// candidate is one event of a batch: its key and record (the read
// transaction's bytes), its unpacked size, and whether its body matched.
type candidate struct {
	k, v  []byte
	size  int
	match bool
}

// matcher matches the bodies of a batch of events against one search on
// up to maxMatchers goroutines (one where there is one CPU): the caller's
// and helpers started once per search, each with its own unpacking room.
type matcher struct {
	search       app.Search
	since, until time.Time // the query's received-time bounds: others are not unpacked
	batch        []candidate
	next         atomic.Int64 // the next candidate to take
	bufs         [][]byte     // each goroutine's unpacking room, reused
	start, done  chan struct{}
}

// newMatcher makes the matcher of search; stop ends its helpers.
func newMatcher(search app.Search, since, until time.Time) *matcher {
	m := &matcher{search: search, since: since, until: until,
		bufs: make([][]byte, min(runtime.GOMAXPROCS(0), runtime.NumCPU(), maxMatchers))}
	if len(m.bufs) > 1 {
		m.start, m.done = make(chan struct{}), make(chan struct{})
		for i := 1; i < len(m.bufs); i++ {
			go func() {
				for range m.start {
					m.work(i)
					m.done <- struct{}{}
				}
			}()
		}
	}
	return m
}

// stop ends the helpers (none is working: match waits for them).
func (m *matcher) stop() {
	if m.start != nil {
		close(m.start)
	}
}

// match sets batch[i].match for every candidate, on every goroutine of
// m; it returns once all are done with the batch (whose records then are
// not read any more).
func (m *matcher) match(batch []candidate) {
	m.batch = batch
	m.next.Store(0)
	helpers := len(m.bufs) - 1
	if len(batch) < 4 {
		helpers = 0
	}
	for range helpers {
		m.start <- struct{}{}
	}
	m.work(0)
	for range helpers {
		<-m.done
	}
	m.batch = nil
}

// work takes the batch's candidates one by one until none is left,
// unpacking into m.bufs[i].
func (m *matcher) work(i int) {
	for {
		j := int(m.next.Add(1) - 1)
		if j >= len(m.batch) {
			return
		}
		c := &m.batch[j]
		c.match = false
		at, err := receivedAt(c.v)
		if err != nil || !m.until.IsZero() && at.After(m.until) || !m.since.IsZero() && at.Before(m.since) {
			continue // the search passes over it without its body
		}
		body, ok := eventBody(c.v, &m.bufs[i])
		c.match = ok && m.search.In(body)
	}
}
