// The replay selection (issue 43): which of the deliveries a replay
// matched it sends again, which it refuses and why, and the summary it
// reports. Written once: the dry run and the run of a replay by query
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
	// ReplayRefusedDelivered refuses it: it was delivered already and the
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
	// every one matched when forced, else the dead ones, and none when
	// the run is refused (Refused). See SelectReplay.
	Selected int
	// Refused counts the delivered ones an unforced replay refuses; when
	// not 0 the run refuses as a whole, and Refusal says why and what to
	// do.
	Refused int
	Refusal string
	// Replayed counts those made pending (0 for a dry run; fewer than
	// Selected when some changed state meanwhile).
	Replayed int
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
	// IDs are the deliveries the run makes pending, in accept order
	// (none when Refusal is set).
	IDs []uint64
	// From is the states each of IDs must still be in when written
	// (ReplayFrom).
	From []DeliveryState
	// Refusal, when not nil, is why the run refuses as a whole (an
	// ECONFLICT error): delivered ones matched and the replay is not
	// forced. Nothing is replayed; the caller adds force, or narrows the
	// query to the dead ones.
	Refusal error
}

// SelectReplay decides replay q, forced or not, over cands (the
// deliveries q matched, at most its limit, in accept order; more says
// that more matched): each candidate's verdict, the summary, and what the
// run writes. A replay that would refuse some of its matches refuses as a
// whole rather than send a part the caller did not see coming.
func SelectReplay(q ReplayQuery, force bool, cands []ReplayItem, more bool) ReplayPlan {
	p := ReplayPlan{From: ReplayFrom(q, force)}
	r := &p.Result
	r.Matched, r.More = len(cands), more
	r.First = cands[:min(len(cands), ReplayFirstShown)]
	ids := make([]uint64, 0, len(cands))
	for _, it := range cands {
		if it.State == Delivered {
			r.Delivered++
		}
		switch ReplayVerdictOf(it.State, force) {
		case ReplayIt:
			ids = append(ids, it.Delivery)
		case ReplayRefusedDelivered:
			r.Refused++
		}
	}
	if r.Refused > 0 {
		p.Refusal = Errorf(ECONFLICT, "%d of the %d matched deliveries were delivered already; add \"force\": true to send them again, or \"status\": \"dead\" to replay only the dead ones",
			r.Refused, r.Matched)
		r.Refusal = ErrorMessage(p.Refusal)
		return p
	}
	p.IDs, r.Selected = ids, len(ids)
	return p
}
