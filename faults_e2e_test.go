package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Retention shorter than a debounce window (events kept 3 s, swept every
// second, a 10 s window): the sweep keeps the event its pending delivery
// will send, and the sink gets it when the window ends.
func TestFault_RetentionShorterThanDebounce(t *testing.T) {
	sink := newLedgerSink(t, 200)
	dir := t.TempDir()
	config := writeConfig(t, dir, fmt.Sprintf(`
[retention]
events = "3s"
sweep = "@every 1s"

[[destination]]
name = "sink"
url = %q
timeout = "2s"
retry = ["1s"]

[[route]]
name = "entities"
source = "gh"
to = ["sink"]
key = "{body.id}"
debounce = "10s"
`, sink.url))
	p := start(t, config)
	body := []byte(`{"id": "entity-1"}`)
	sent := time.Now()
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "debounced-1")); r.code != 200 {
		t.Fatalf("post: %d %v", r.code, r.body)
	}
	deadline := sent.Add(40 * time.Second)
	for len(sink.missing([]string{"debounced-1"})) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(sent)
	if len(sink.missing([]string{"debounced-1"})) > 0 {
		t.Fatalf("the debounced event never reached the sink in %v (the sweep ran %d times):\n%s",
			took.Round(time.Second), strings.Count(p.logText(), "sweep done"), p.logText())
	}
	if took < 9*time.Second {
		t.Fatalf("delivered after %v, before its 10 s window ended", took)
	}
	t.Logf("delivered %v after it was accepted, %d sweeps meanwhile", took.Round(100*time.Millisecond), strings.Count(p.logText(), "sweep done"))
	p.stop(t)
}
