package app

// The counts held between commits, written once for both stores: what
// AddCounts and AddNamed take (no write of the store carries them) waits
// in a CountTally until the store's next commit (bbolt) or flush
// (PostgreSQL) writes it, and what the store reads back (HourlyCounts,
// NamedCounts) is what it wrote plus what its tally holds. A store keeps
// its tally under its own lock and only reads and writes rows; the sums,
// the take and give back, the prune and the hours of a range are here.

// HourName is one count by name in one unix hour: the key a tally and the
// stores keep counts by name under.
type HourName struct {
	Hour  int64
	Named Named
}

// CountTally is counts by unix hour, and by hour and name. The zero value
// is empty and ready to use; it is not safe for concurrent use.
type CountTally struct {
	Hours map[int64]*Counts
	Named map[HourName]uint64
}

// Add adds c to hour h.
func (t *CountTally) Add(h int64, c Counts) {
	if t.Hours == nil {
		t.Hours = map[int64]*Counts{}
	}
	if cur := t.Hours[h]; cur != nil {
		cur.Add(c)
		return
	}
	t.Hours[h] = &c
}

// AddNamed adds n to the count of k in hour h.
func (t *CountTally) AddNamed(h int64, k Named, n uint64) {
	if t.Named == nil {
		t.Named = map[HourName]uint64{}
	}
	t.Named[HourName{h, k}] += n
}

// AddTally adds all of o to t: a tally taken for a write that failed goes
// back, to be written by the next.
func (t *CountTally) AddTally(o CountTally) {
	for h, c := range o.Hours {
		t.Add(h, *c)
	}
	for hn, n := range o.Named {
		t.AddNamed(hn.Hour, hn.Named, n)
	}
}

// Empty reports whether t holds nothing.
func (t *CountTally) Empty() bool { return len(t.Hours) == 0 && len(t.Named) == 0 }

// Take returns what t holds and leaves it empty: the write that takes it
// owns it, and gives it back (AddTally) if it fails.
func (t *CountTally) Take() CountTally {
	out := *t
	*t = CountTally{}
	return out
}

// Prune forgets the hours before end.
func (t *CountTally) Prune(end int64) {
	for h := range t.Hours {
		if h < end {
			delete(t.Hours, h)
		}
	}
	for hn := range t.Named {
		if hn.Hour < end {
			delete(t.Named, hn)
		}
	}
}

// HoursInto adds t's counts of the hours first to last (both included) to
// byHour.
func (t *CountTally) HoursInto(byHour map[int64]*Counts, first, last int64) {
	for h, c := range t.Hours {
		if h < first || h > last {
			continue
		}
		if cur := byHour[h]; cur != nil {
			cur.Add(*c)
		} else {
			cc := *c
			byHour[h] = &cc
		}
	}
}

// NamedInto adds t's counts by name of the hours first to last (both
// included) to sums, summed over the hours.
func (t *CountTally) NamedInto(sums map[Named]uint64, first, last int64) {
	for hn, n := range t.Named {
		if hn.Hour >= first && hn.Hour <= last {
			sums[hn.Named] += n
		}
	}
}

// Delta is t as count changes at the start of each hour, for a store that
// adds changes (PostgreSQL's flush).
func (t *CountTally) Delta() CountDelta {
	var d CountDelta
	for h, c := range t.Hours {
		for k, n := range c {
			if n > 0 {
				d.Kinds = append(d.Kinds, KindDelta{At: HourStart(h), Kind: Kind(k), N: n})
			}
		}
	}
	for hn, n := range t.Named {
		d.Named = append(d.Named, NamedDelta{At: HourStart(hn.Hour), Kind: hn.Named.Kind, Name: hn.Named.Name, N: n})
	}
	return d
}

// HourlyOf returns the counts of byHour from hour first to last, oldest
// first, leaving out the hours it has no counts for: what HourlyCounts
// answers.
func HourlyOf(byHour map[int64]*Counts, first, last int64) []HourCounts {
	out := make([]HourCounts, 0, len(byHour))
	for h := first; h <= last; h++ {
		if c := byHour[h]; c != nil {
			out = append(out, HourCounts{Hour: HourStart(h), Counts: *c})
		}
	}
	return out
}
