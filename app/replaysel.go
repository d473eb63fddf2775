// The replay selection (issue 43): which of the deliveries a replay
// matched it sends again, which it skips and why, and the summary it
// reports, split by what it does with each (issue 44). Written once: the dry run and the run of a replay by query
// (app/replay) and the replay of one delivery decide by it, so a dry run
// says what its run does. The stores only read the candidates
// (ReplayStore.ReplayCandidates) and write the requeue (Requeue).

package app

// ReplayVerdict is what a replay does with one delivery it matched.
type ReplayVerdict int

// The verdicts of a replay on one delivery.
const (
	// ReplayIt sends it again: it is dead, or delivered and forced.
	ReplayIt ReplayVerdict = iota
	// ReplayRefusedDelivered skips it: it was delivered already and the
	// replay is not forced (a delivery the receiver took is never sent
	// again unasked).
	ReplayRefusedDelivered
	// ReplayLeftPending leaves it as it is: pending, it is on its way.
	ReplayLeftPending
)

// ReplayVerdictOf says what a replay, forced or not, does with a delivery
// in state s.
func ReplayVerdictOf(s DeliveryState, force bool) ReplayVerdict {
	switch {
	case s == Dead, s == Delivered && force:
		return ReplayIt
	case s == Delivered:
		return ReplayRefusedDelivered
	}
	return ReplayLeftPending
}

// ReplayFrom is the states a delivery that replay q (forced or not)
// selected must still be in when it is written: the finished states q
// wants, of those the verdict replays. Not forced, that is dead alone, so
// one replayed and delivered meanwhile is not sent again unasked.
func ReplayFrom(q ReplayQuery, force bool) []DeliveryState {
	var from []DeliveryState
	for _, s := range []DeliveryState{Delivered, Dead} {
		if q.Wants(s) && ReplayVerdictOf(s, force) == ReplayIt {
			from = append(from, s)
		}
	}
	return from
}

// ReplayResult is what a replay by query found and did.
type ReplayResult struct {
	// Matched counts the deliveries selected (at most the query's limit);
	// Delivered is how many of them were delivered (the others dead).
	Matched   int
	Delivered int
	// Selected counts those the run makes pending (a dry run: would):
	// every one matched when forced, else the dead ones. See
	// SelectReplay.
	Selected int
	// Refused counts the delivered ones an unforced replay skips.
	Refused int
	// Replayed counts those made pending (0 for a dry run; fewer than
	// Selected when some changed state meanwhile).
	Replayed int
	// Counts splits Matched by what the replay does with each: the dry
	// run and the run report the same split (ReplayCounts.Say).
	Counts ReplayCounts
	// More says that more deliveries matched than the limit allowed.
	More bool
	// First names the first ReplayFirstShown matched, in accept order.
	First []ReplayItem
}

// ReplayPlan is what a replay by query does with the candidates it read:
// the summary the dry run reports (and the run, with Replayed), and what
// the run writes.
type ReplayPlan struct {
	// Result is the summary: Replayed is 0 here.
	Result ReplayResult
	// IDs are the deliveries the run makes pending, in accept order.
	IDs []uint64
	// From is the states each of IDs must still be in when written
	// (ReplayFrom).
	From []DeliveryState
}

// SelectReplay decides replay q, forced or not, over cands (the
// deliveries q matched, at most its limit, in accept order; more says
// that more matched): each candidate's verdict, the summary split by
// verdict, and what the run writes. The run sends the ones the verdict
// sends and skips the others, as the dry run said it would.
func SelectReplay(q ReplayQuery, force bool, cands []ReplayItem, more bool) ReplayPlan {
	p := ReplayPlan{From: ReplayFrom(q, force)}
	r := &p.Result
	r.Matched, r.More = len(cands), more
	r.First = cands[:min(len(cands), ReplayFirstShown)]
	p.IDs = make([]uint64, 0, len(cands))
	for _, it := range cands {
		if it.State == Delivered {
			r.Delivered++
		}
		v := ReplayVerdictOf(it.State, force)
		r.Counts.Add(it.State, v)
		switch v {
		case ReplayIt:
			p.IDs = append(p.IDs, it.Delivery)
		case ReplayRefusedDelivered:
			r.Refused++
		}
	}
	r.Selected = len(p.IDs)
	return p
}
