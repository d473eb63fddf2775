package app

// DestFailing reports whether d takes dest to be failing: an attempt of
// its failed since its last success, as far as its lane heard.
func DestFailing(d *Dispatcher, dest string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.lanes {
		if l.dest.Name == dest {
			return l.health != nil && !l.health.failingSince.IsZero()
		}
	}
	return false
}
