package bench

import (
	"bytes"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// benchSink is the local destination of -compare: it answers 200 and
// notes how long each event took from its send to here. It runs on
// fasthttp and reads only the two fields it needs, so that the share of
// the machine it takes from hookbox in this one-machine run stays small; a
// merchant's endpoint runs elsewhere.
type benchSink struct {
	mu      sync.Mutex
	lat     []time.Duration
	last    time.Time
	seen    map[string]bool
	repeats int // deliveries of an event the sink already had
	// Events of -backlog, counted apart from the load's.
	backlogWant int
	backlogSeen map[string]bool
	backlogAt   time.Time
	backlogDone chan struct{}
}

func newBenchSink() *benchSink {
	return &benchSink{seen: map[string]bool{}, backlogSeen: map[string]bool{}, backlogDone: make(chan struct{})}
}

// backlogPrefix starts the ids of the events -backlog stores before start-up.
const backlogPrefix = "backlog-"

func (s *benchSink) expectBacklog(n int) { s.mu.Lock(); s.backlogWant = n; s.mu.Unlock() }

func (s *benchSink) backlogLast() time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.backlogAt }

func (s *benchSink) handle(c *fasthttp.RequestCtx) {
	id, sent, ok := sinkFields(c.PostBody())
	if !ok {
		c.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	now := time.Now()
	s.mu.Lock()
	if bytes.HasPrefix(id, []byte(backlogPrefix)) {
		if !s.backlogSeen[string(id)] {
			s.backlogSeen[string(id)] = true
			s.backlogAt = now
			if len(s.backlogSeen) == s.backlogWant {
				close(s.backlogDone)
			}
		}
	} else if s.seen[string(id)] {
		s.repeats++
	} else {
		s.seen[string(id)] = true
		s.lat = append(s.lat, now.Sub(time.Unix(0, sent)))
		s.last = now
	}
	s.mu.Unlock()
}

// sinkFields finds "id" and "sent_ns" in a body made by signer.request.
func sinkFields(b []byte) (id []byte, sent int64, ok bool) {
	const idField, sentField = `{"id":"`, `"sent_ns":`
	if !bytes.HasPrefix(b, []byte(idField)) {
		return nil, 0, false
	}
	id = b[len(idField):]
	end := bytes.IndexByte(id, '"')
	i := bytes.Index(b, []byte(sentField))
	if end < 0 || i < 0 {
		return nil, 0, false
	}
	id = id[:end]
	num := b[i+len(sentField):]
	if j := bytes.IndexByte(num, ','); j >= 0 {
		num = num[:j]
	}
	sent, err := strconv.ParseInt(string(num), 10, 64)
	return id, sent, err == nil
}

func (s *benchSink) reset() {
	s.mu.Lock()
	s.lat, s.seen, s.repeats = nil, map[string]bool{}, 0
	s.mu.Unlock()
}

func (s *benchSink) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.lat) }

func (s *benchSink) latencies(loadEnd time.Time) (p50, p99, max, lagSec float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := slices.Clone(s.lat)
	p50, _, p99, max = percentiles(d)
	if s.last.After(loadEnd) {
		lagSec = s.last.Sub(loadEnd).Seconds()
	}
	return
}
