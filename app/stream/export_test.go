package stream

import "context"

// Poll has h read new events and re-check its gaps now.
func Poll(h *Hub) { h.poll(context.Background()) }

// Stopped returns a channel closed once h's poller has returned (at once
// when none runs).
func Stopped(h *Hub) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return h.done
}
