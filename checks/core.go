package checks

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// The core checks, I1–I9: the stock, the reservations and the answers.

func listed(ids []string) []string {
	sort.Strings(ids)
	if len(ids) > maxListed {
		return ids[:maxListed]
	}
	return ids
}

func status(f *Facts, rid string) (lua.Status, bool) {
	r, ok := f.Records[rid]
	return r.Status, ok
}

// stockUntouched is I1's vacuity: every bucket still holds its initial
// stock, none reserved or released — nothing moved that could break
// conservation.
func stockUntouched(f *Facts, _ Verdict) string {
	for _, s := range f.Stock {
		if s.Available != s.Initial || s.Reserved != 0 || s.ReleasedTotal != 0 {
			return ""
		}
	}
	return fmt.Sprintf("the stock never moved: all %d buckets hold their initial stock, none reserved or released", len(f.Stock))
}

// judgeI1: per bucket available + reserved == initial, both >= 0 — at the
// end and at every sample taken during the run. A system that shows its
// available units alone is judged by judgeI1Available.
func judgeI1(f *Facts) Verdict {
	if f.Unexposed[sut.Stock] {
		return judgeI1Available(f)
	}
	var bad []string
	for b, s := range f.Stock {
		if !s.Conserved() {
			bad = append(bad, fmt.Sprintf("bucket %d: initial=%d available=%d reserved=%d", b, s.Initial, s.Available, s.Reserved))
		}
	}
	var transient []map[string]any
	readErrs := 0
	for _, s := range f.Samples {
		if s.Err != "" {
			readErrs++
		}
		if s.Violates() && len(transient) < maxListed {
			transient = append(transient, map[string]any{"t_s": s.At.Seconds(), "bucket": s.Bucket,
				"initial": s.Stock.Initial, "available": s.Stock.Available, "reserved": s.Stock.Reserved})
		}
	}
	ev := map[string]any{"final_violations": bad, "samples": len(f.Samples), "sample_read_errors": readErrs, "transient_violations": transient}
	detail := fmt.Sprintf("%d buckets conserve stock; %d samples during the run, %d violations", len(f.Stock)-len(bad), len(f.Samples), len(transient))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d of %d buckets break initial == available + reserved: %v", len(bad), len(f.Stock), bad)
	}
	return Verdict{len(bad) > 0 || len(transient) > 0, detail, ev}
}

// judgeI2: per bucket reserved == live records, released_total == RELEASED records.
func judgeI2(f *Facts) Verdict {
	live := make([]int64, f.Buckets())
	released := make([]int64, f.Buckets())
	for _, r := range f.Records {
		if int(r.Bucket) >= f.Buckets() {
			continue
		}
		if r.Status == lua.StatusReleased {
			released[r.Bucket]++
		} else {
			live[r.Bucket]++
		}
	}
	var bad []string
	for b, s := range f.Stock {
		if s.Reserved != live[b] || s.ReleasedTotal != released[b] {
			bad = append(bad, fmt.Sprintf("bucket %d: reserved=%d but %d live records; released_total=%d but %d RELEASED records",
				b, s.Reserved, live[b], s.ReleasedTotal, released[b]))
		}
	}
	detail := fmt.Sprintf("%d reservation records read; counters match them in every bucket", len(f.Records))
	if len(bad) > 0 {
		detail = fmt.Sprintf("counters disagree with the records: %v", bad)
	}
	return Verdict{len(bad) > 0, detail,
		map[string]any{"records_read": len(f.Records), "live_records": live, "released_records": released, "mismatches": bad}}
}

func vacuousI2(f *Facts, _ Verdict) string {
	if len(f.Records) > 0 {
		return ""
	}
	for _, s := range f.Stock {
		if s.Reserved != 0 || s.ReleasedTotal != 0 {
			return ""
		}
	}
	return "no reservation record exists and no counter moved: nothing to account for"
}

// noAcknowledgement is the vacuity of I3 and I6: both judge the
// reservations acknowledged ACCEPTED.
func noAcknowledgement(f *Facts, _ Verdict) string {
	if f.derive().acked > 0 {
		return ""
	}
	return fmt.Sprintf("no operation was answered ACCEPTED (%d operations): no acknowledged reservation to judge", f.opCount())
}

// judgeI3: distinct reservation ids acknowledged ACCEPTED, less those
// released, never exceed initial.
func judgeI3(f *Facts) Verdict {
	perBucket := heldByBucket(f)
	// From the answers alone (a service that shows no records) the
	// buckets are the harness's derivation, which the service may not
	// share: only the total is bounded.
	answersOnly := f.Unexposed[sut.Records]
	var bad []string
	var total, totalInitial, oversold int64
	for b, n := range perBucket {
		total += n
		initial := f.Planned[b]
		totalInitial += initial
		if n > initial && !answersOnly {
			oversold += n - initial
			bad = append(bad, fmt.Sprintf("bucket %d: %d held acknowledged reservations > initial %d", b, n, initial))
		}
	}
	if answersOnly {
		total = max(0, total-releasedByAnswer(f))
	}
	if total > totalInitial {
		bad = append(bad, fmt.Sprintf("total: %d > %d", total, totalInitial))
		if answersOnly {
			oversold = total - totalInitial
		}
	}
	detail := fmt.Sprintf("%d acknowledged reservations held against %d stock", total, totalInitial)
	if len(bad) > 0 {
		detail = "oversold: " + fmt.Sprint(bad)
	}
	if f.Generator.Split() {
		// A bound on a part of the acknowledgements: a fail is an
		// oversell, a pass only this generator's; the merge judges all.
		detail += fmt.Sprintf(" (generator %s's acknowledgements only; the merge judges them all)", f.Generator)
	}
	return Verdict{len(bad) > 0, detail,
		map[string]any{"acknowledged_held": perBucket, "total_held": total, "initial": totalInitial, "violations": bad,
			"oversold_units": oversold}}
}

// heldByBucket counts, per bucket, the distinct reservations acknowledged
// ACCEPTED and not released (a lost one counts: it was sold). For a system
// that shows no records it counts every acknowledged one (releasedByAnswer
// says how many to take off the total).
func heldByBucket(f *Facts) []int64 {
	acked := f.derive().ackedByBucket
	perBucket := make([]int64, f.Buckets())
	for b := range acked {
		for rid := range acked[b] {
			if f.Unexposed[sut.Records] {
				perBucket[b]++
			} else if r, ok := f.Records[rid]; !ok || r.Status != lua.StatusReleased {
				perBucket[b]++
			}
		}
	}
	return perBucket
}

// releasedByAnswer counts the distinct reservations a release answered
// RELEASED or ALREADY_RELEASED, or whose answer was lost (it may have run:
// never an oversell on a guess). By count, not by id: a service may name
// its reservations otherwise than the harness derives them.
func releasedByAnswer(f *Facts) int64 {
	seen := map[string]bool{}
	for _, o := range f.all() {
		if o.Kind == history.KindRelease && (o.Outcome == history.Outcome(lua.CompensateReleased) ||
			o.Outcome == history.Outcome(lua.CompensateAlreadyReleased) || o.Outcome == history.OutcomeUnknown) {
			seen[o.RID] = true
		}
	}
	return int64(len(seen))
}

// judgeI4: no user holds two live reservations in Redis, and no user was
// told ACCEPTED for a second reservation while the first had not been
// released.
func judgeI4(f *Facts) Verdict { return judgeI4Without(f, nil) }

// judgeI4Without is I4 with the ACCEPTED answers of the operations in
// skip (by id) left out (reusedRequestAcks: I4's ConsequenceOf).
func judgeI4Without(f *Facts, skip map[uint32]bool) Verdict {
	liveByUser := map[string][]string{}
	for rid, r := range f.Records {
		if r.Status != lua.StatusReleased {
			liveByUser[r.User] = append(liveByUser[r.User], rid)
		}
	}
	var bad []string
	for u, rids := range liveByUser {
		if len(rids) > 1 {
			bad = append(bad, fmt.Sprintf("%s holds %d live reservations %v", u, len(rids), listed(rids)))
		}
	}
	// Acknowledgements: per user, the distinct reservation ids in the order
	// they were first acknowledged; each must have been released (by a
	// release op that may have run it, first sent before: releaseWindow)
	// the next one was acknowledged.
	type ack struct {
		rid string
		end time.Duration
	}
	firstAck := map[uint32][]ack{}
	releasedStart := map[string]time.Duration{}
	for _, o := range f.all() {
		// The earliest the release can have run is the first send of an
		// operation that may have run it: judging from a later bound (the
		// answer) would fail a user who reserved again after a release whose
		// reply was lost; a second ACCEPTED answered before any such send
		// is still a second live reservation.
		if from, _, _, ok := releaseWindow(f, o); ok {
			if t, seen := releasedStart[o.RID]; !seen || from < t {
				releasedStart[o.RID] = from
			}
		}
	}
	for _, o := range f.all() {
		if !o.Accepted() || o.RID == "" || skip[o.ID] {
			continue
		}
		list := firstAck[o.User]
		found := false
		for j := range list {
			if list[j].rid == o.RID {
				found = true
				if o.End < list[j].end {
					list[j].end = o.End
				}
			}
		}
		if !found {
			list = append(list, ack{o.RID, o.End})
		}
		firstAck[o.User] = list
	}
	told := 0
	for u, list := range firstAck {
		if len(list) < 2 {
			continue
		}
		sort.Slice(list, func(i, j int) bool { return list[i].end < list[j].end })
		for k := 1; k < len(list); k++ {
			prev := list[k-1]
			rs, ok := releasedStart[prev.rid]
			if !ok || rs >= list[k].end {
				told++
				if len(bad) < maxListed {
					bad = append(bad, fmt.Sprintf("%s told ACCEPTED for %s and then %s while the first was not released", history.UserID(u), prev.rid, list[k].rid))
				}
			}
		}
	}
	detail := fmt.Sprintf("%d users with live reservations, none holds two", len(liveByUser))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d violations of one-per-user", len(bad))
	}
	return Verdict{len(bad) > 0, detail, map[string]any{"violations": listed(bad), "double_acknowledgements": told}}
}

// releaseWindow is when release operation o may have released its
// reservation (ok false when it cannot have: it answered something else, or
// ALREADY_RELEASED to its only send, in which case another release ran it
// and is judged on its own). A re-sent operation's final answer is not the
// answer of the send that ran: a send whose reply was lost may have released
// the reservation and the same-id re-send then answered ALREADY_RELEASED,
// or every reply was lost (UNKNOWN) while the record reads RELEASED. The
// release ran no earlier than the first send (from). It ran no later than
// the last answer (to) when bounded; an UNKNOWN one is not bounded: a send
// whose reply was lost may still run after the client gave up.
func releaseWindow(f *Facts, o *history.Op) (from, to time.Duration, bounded, ok bool) {
	if o.Kind != history.KindRelease || o.RID == "" {
		return 0, 0, false, false
	}
	switch {
	case o.Outcome == history.Outcome(lua.CompensateReleased):
		return o.Start, o.End, true, true
	case o.Outcome == history.Outcome(lua.CompensateAlreadyReleased) && o.HadUnknown():
		return o.Start, o.End, true, true
	case o.Outcome == history.OutcomeUnknown && f.Records[o.RID].Status == lua.StatusReleased:
		return o.Start, 0, false, true
	}
	return 0, 0, false, false
}

func vacuousI4(f *Facts, _ Verdict) string {
	if f.derive().acked > 0 || len(f.Records) > 0 {
		return ""
	}
	return "no operation was answered ACCEPTED and no reservation record exists: no user holds anything"
}

// notCachedForUser reports the reserve codes the contract does not cache
// as the request's result: a repeat may answer differently.
func notCachedForUser(code lua.ReserveCode) bool {
	switch code {
	case lua.ConfigMissing, lua.InvariantViolation, lua.BadArgument:
		return true
	}
	return false
}

// judgeI5: every answer to one request_id agrees (code and reservation id),
// and another user reusing it gets REQUEST_ID_CONFLICT with no reservation
// id; re-sent operations agree with their own request's result.
func judgeI5(f *Facts) Verdict {
	kept := i5Groups(f)
	var bad []string
	groups, foreignGroups, unreadable := 0, 0, 0
	for start := 0; start < len(kept); {
		end := start + 1
		for end < len(kept) && i5Pack(&kept[end]) == i5Pack(&kept[start]) {
			end++
		}
		groups++
		foreign, unread, gbad := judgeI5Group(f, kept[start:end])
		foreignGroups += foreign
		unreadable += unread
		bad = append(bad, gbad...)
		start = end
	}
	resent, resentBad, resentUnreadable := judgeResent(f)
	unreadable += resentUnreadable
	bad = append(bad, resentBad...)
	detail := fmt.Sprintf("%d request ids answered more than once (%d reused by another user), %d re-sent operations: all agree", groups, foreignGroups, resent)
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d idempotency violations", len(bad))
	}
	ev := map[string]any{"repeated_request_ids": groups, "reused_by_another_user": foreignGroups, "resent_ops": resent,
		"resent_mismatches": len(resentBad), "violations": listed(bad), "violation_count": len(bad)}
	if unreadable > 0 {
		ev["unreadable_request_results"] = unreadable
		detail += fmt.Sprintf(" (%d cached request results could not be read: not compared)", unreadable)
	}
	return Verdict{len(bad) > 0, detail, ev}
}

// i5Pack is an operation's request key (bucket, request) packed into a
// uint64, shifted left one bit for i5Groups' conflict bit.
func i5Pack(o *history.Op) uint64 { return (uint64(o.Bucket)<<32 | uint64(o.Req)) << 1 }

// i5Answers: the operation answered for its request (a reserve whose
// answer the request result caches).
func i5Answers(o *history.Op) bool {
	return o.Kind.IsReserve() && o.Outcome >= 0 && !notCachedForUser(lua.ReserveCode(o.Outcome))
}

// i5Groups returns the answered operations of the request ids I5 judges,
// grouped by request id (request results are cached per bucket), each
// group in history order. A first pass keeps one packed key per answered
// operation (8 bytes: bucket, request, and whether it answered
// REQUEST_ID_CONFLICT), sorted to find the groups judged — a request id
// answered twice, or a REQUEST_ID_CONFLICT; a second pass copies those
// groups' operations only.
func i5Groups(f *Facts) []history.Op {
	const conflictBit = 1
	keys := make([]uint64, 0, f.opCount())
	for _, o := range f.all() {
		if i5Answers(o) {
			k := i5Pack(o)
			if o.Outcome == history.Outcome(lua.RequestIDConflict) {
				k |= conflictBit
			}
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var judgedKeys []uint64 // sorted, without the conflict bit
	for start := 0; start < len(keys); {
		key := keys[start] &^ conflictBit
		end := start + 1
		for end < len(keys) && keys[end]&^conflictBit == key {
			end++
		}
		// A group of one is judged when that one answer is a conflict (the
		// first operation in history order; alone, the only one).
		if end-start >= 2 || keys[start]&conflictBit != 0 {
			judgedKeys = append(judgedKeys, key)
		}
		start = end
	}
	var kept []history.Op // the judged groups' operations, in history order
	if len(judgedKeys) > 0 {
		for _, o := range f.all() {
			if i5Answers(o) {
				if _, ok := slices.BinarySearch(judgedKeys, i5Pack(o)); ok {
					kept = append(kept, *o)
				}
			}
		}
	}
	slices.SortStableFunc(kept, func(x, y history.Op) int { return cmp.Compare(i5Pack(&x), i5Pack(&y)) })
	return kept
}

// i5Answer is one user's answer to a request id.
type i5Answer struct {
	code lua.ReserveCode
	rid  string
}

// judgeI5Group judges the answers to one request id: every user's answers
// agree, one user at most got a real answer, a REQUEST_ID_CONFLICT leaks
// no reservation; where users competed for the id, the cached owner is the
// one answered for real (foreign 1; unread 1 when its result could not be read).
func judgeI5Group(f *Facts, group []history.Op) (foreign, unread int, bad []string) {
	key := RequestKey{group[0].Bucket, group[0].Req}
	id := history.RequestID(key.Req)
	answers := map[uint32]i5Answer{} // per user: the first non-conflict answer
	conflicted := map[uint32]bool{}
	for i := range group {
		o := &group[i]
		code := lua.ReserveCode(o.Outcome)
		if code == lua.DuplicateRequest {
			continue // a violation of its own, reported once by judgeResent
		}
		if code == lua.RequestIDConflict {
			conflicted[o.User] = true
			if o.RID != "" {
				bad = append(bad, fmt.Sprintf("%s: REQUEST_ID_CONFLICT to %s leaked reservation %s", id, o.UserID(), o.RID))
			}
			continue
		}
		got := i5Answer{code, o.RID}
		if prev, ok := answers[o.User]; ok && prev != got {
			bad = append(bad, fmt.Sprintf("%s: %s answered %s/%s and later %s/%s", id, o.UserID(), prev.code, prev.rid, got.code, got.rid))
		} else if !ok {
			answers[o.User] = got
		}
	}
	if len(answers) > 1 {
		var users []string
		for u := range answers {
			users = append(users, history.UserID(u))
		}
		bad = append(bad, fmt.Sprintf("%s: %d users got a real answer: %v", id, len(answers), listed(users)))
	}
	for u := range answers {
		if conflicted[u] {
			bad = append(bad, fmt.Sprintf("%s: %s got both a real answer and REQUEST_ID_CONFLICT", id, history.UserID(u)))
		}
	}
	if len(conflicted) == 0 || len(answers) != 1 {
		return 0, 0, bad
	}
	var owner uint32
	for u := range answers {
		owner = u
	}
	switch res := f.Requests[key]; {
	case res.Err != "":
		return 1, 1, bad
	case res.Found && res.Result.UserID != history.UserID(owner):
		bad = append(bad, fmt.Sprintf("%s: Redis says %s owns it, answers say %s", id, res.Result.UserID, history.UserID(owner)))
	}
	return 1, 0, bad
}

// judgeResent is I5 across request ids: an operation's answer must be the
// answer of its own request_id.
//
//   - No request is refused USER_ALREADY_RESERVED for the reservation it
//     created itself (its derived reservation_id): the contract answers a
//     repeat of a request from its cached result.
//
//   - An operation answered by a re-send: the contract re-sends with the
//     same ids, so an ACCEPTED names the reservation derived from the
//     operation's request_id, and the answer agrees with the result Redis
//     cached for that request_id.
//
//   - No request is answered DUPLICATE_REQUEST (a system that refuses a
//     request id it has seen instead of repeating its first answer): the
//     first answer is the only one the contract allows.
//
// A client that re-sends under a new request_id, or a script that re-runs a
// request whose reply was lost, passes every other check: the one-per-user
// marker turns the second run into USER_ALREADY_RESERVED, which overwrites
// or never meets the first answer, which the client never saw.
func judgeResent(f *Facts) (checked int, bad []string, unreadable int) {
	for _, o := range f.all() {
		if !o.Kind.IsReserve() || o.Outcome < 0 {
			continue
		}
		code := lua.ReserveCode(o.Outcome)
		if o.Sends >= 2 {
			checked++
		}
		if code == lua.DuplicateRequest {
			bad = append(bad, fmt.Sprintf("%s of %s: answered DUPLICATE_REQUEST (send %d), not the request's first answer: a client whose first reply was lost never learns whether it holds a unit", history.RequestID(o.Req), o.UserID(), o.Sends))
			continue
		}
		own := f.OwnReservation[UserRequest{o.User, o.Req}]
		if code == lua.UserAlreadyReserved && o.RID != "" && o.RID == own {
			bad = append(bad, fmt.Sprintf("%s of %s: refused USER_ALREADY_RESERVED for %s, the reservation this request created", history.RequestID(o.Req), o.UserID(), o.RID))
			continue
		}
		if o.Sends < 2 {
			continue
		}
		switch code {
		case lua.ConfigMissing, lua.InvariantViolation, lua.BadArgument, lua.ReservationIDConflict, lua.RequestIDConflict:
			continue // not cached for this user by the contract
		}
		if o.Accepted() && o.RID != own {
			bad = append(bad, fmt.Sprintf("%s of %s: re-sent and answered ACCEPTED %s, not its own reservation %s", history.RequestID(o.Req), o.UserID(), o.RID, own))
			continue
		}
		res := f.Requests[RequestKey{o.Bucket, o.Req}]
		switch {
		case res.Err != "":
			unreadable++
			continue
		case !res.Found, res.Result.UserID != o.UserID():
			continue // never executed, lost with a failover (I6/I7 speak to that), or another user's
		}
		if res.Result.Code != code || res.Result.ReservationID != o.RID {
			bad = append(bad, fmt.Sprintf("%s of %s: Redis holds %s %s for it, the re-sent operation answered %s %s",
				history.RequestID(o.Req), o.UserID(), res.Result.Code, res.Result.ReservationID, code, o.RID))
		}
	}
	return checked, bad, unreadable
}

func vacuousI5(f *Facts, v Verdict) string {
	if v.Evidence["repeated_request_ids"] != 0 || v.Evidence["resent_ops"] != 0 {
		return ""
	}
	for _, o := range f.all() {
		if o.Kind.IsReserve() && o.Outcome == history.Outcome(lua.UserAlreadyReserved) && o.RID != "" {
			return ""
		}
	}
	return "no request id was answered twice, re-sent or refused USER_ALREADY_RESERVED: no answer to compare"
}

// lostAcks lists the reservations acknowledged ACCEPTED without a record
// in Redis, sorted, and how many distinct reservations were acknowledged.
func lostAcks(f *Facts) []string {
	lost, _ := lostAndAcked(f)
	return lost
}

func lostAndAcked(f *Facts) ([]string, int) {
	acked := map[string]bool{}
	for _, o := range f.all() {
		if o.Accepted() && o.RID != "" {
			acked[o.RID] = true
		}
	}
	var lost []string
	for rid := range acked {
		if _, ok := f.Records[rid]; !ok {
			lost = append(lost, rid)
		}
	}
	sort.Strings(lost)
	return lost, len(acked)
}

// LostAck names one reservation acknowledged ACCEPTED that Redis no longer
// holds (I6's evidence "lost_acks", every one of them, in the order they
// were acknowledged).
type LostAck struct {
	ReservationID string  `json:"reservation_id"`
	Bucket        uint16  `json:"bucket"`
	User          string  `json:"user"`
	RequestID     string  `json:"request_id"`
	Op            uint32  `json:"op"`                // the history's operation id
	AckedAtS      float64 `json:"acknowledged_at_s"` // when the ACCEPTED answer arrived, seconds into the load
}

// judgeI6: every reservation acknowledged ACCEPTED still exists in Redis.
// The evidence names each lost one (lost_acks) and counts, per bucket, the
// units that became sellable again and were sold a second time
// (resold_units): a lost reservation's unit went back into the promoted
// replica's stock; when the bucket then held more acknowledged
// reservations than its stock, the excess, up to the bucket's lost count,
// is that unit sold again (I3 fails with it).
func judgeI6(f *Facts) Verdict {
	lost, acked := lostAndAcked(f)
	named := namedLostAcks(f, lost)
	lostBy, resoldBy, resold := resoldAfterLoss(f, named)
	detail := fmt.Sprintf("all %d acknowledged reservations exist in Redis", acked)
	if len(lost) > 0 {
		detail = fmt.Sprintf("%d of %d acknowledged reservations are gone from Redis", len(lost), acked)
		if len(named) > 0 {
			detail += fmt.Sprintf(" (acknowledged %.3fs–%.3fs into the load)", named[0].AckedAtS, named[len(named)-1].AckedAtS)
		}
		if resold > 0 {
			detail += fmt.Sprintf("; %d of their units became sellable again and were sold a second time", resold)
		}
	}
	return Verdict{len(lost) > 0, detail,
		map[string]any{"acknowledged": acked, "lost": len(lost), "lost_ids": listed(append([]string(nil), lost...)),
			"lost_acks": named, "lost_by_bucket": lostBy, "resold_units": resold, "resold_by_bucket": resoldBy}}
}

// resoldAfterLoss counts, per bucket, the acknowledged reservations lost
// (of named) and the units sold again after them: the excess of held
// acknowledged reservations over the bucket's stock, up to its lost count.
func resoldAfterLoss(f *Facts, named []LostAck) (lostBy, resoldBy []int64, resold int64) {
	lostBy = make([]int64, f.Buckets())
	for _, l := range named {
		if int(l.Bucket) < len(lostBy) {
			lostBy[l.Bucket]++
		}
	}
	resoldBy = make([]int64, f.Buckets())
	for b, held := range heldByBucket(f) {
		resoldBy[b] = min(lostBy[b], max(0, held-f.Planned[b]))
		resold += resoldBy[b]
	}
	return lostBy, resoldBy, resold
}

// oversellOfLostAcks is I3's ConsequenceOf: "I6" when every unit it found
// acknowledged beyond the stock, in every bucket, was sold again after an
// acknowledged reservation of that bucket was lost (the promoted replica
// never had it, so its unit was sellable again): the oversell is then the
// lost acknowledgements' consequence, not the reserve's own.
func oversellOfLostAcks(f *Facts, v Verdict) string {
	if f.Unexposed[sut.Records] {
		return ""
	}
	lost, _ := lostAndAcked(f)
	if len(lost) == 0 {
		return ""
	}
	_, resoldBy, _ := resoldAfterLoss(f, namedLostAcks(f, lost))
	for b, held := range heldByBucket(f) {
		if over := held - f.Planned[b]; over > 0 && resoldBy[b] < over {
			return "" // more oversold here than was lost: the reserve's own oversell
		}
	}
	var total, initial int64
	for b, held := range heldByBucket(f) {
		total, initial = total+held, initial+f.Planned[b]
	}
	if lostTotal := int64(len(lost)); total-initial > lostTotal {
		return ""
	}
	return "I6"
}

// namedLostAcks names each lost reservation by its first ACCEPTED answer,
// sorted by when it was acknowledged.
func namedLostAcks(f *Facts, lost []string) []LostAck {
	want := make(map[string]bool, len(lost))
	for _, rid := range lost {
		want[rid] = true
	}
	named := make([]LostAck, 0, len(lost))
	for _, o := range f.all() {
		if !o.Accepted() || !want[o.RID] {
			continue
		}
		delete(want, o.RID)
		named = append(named, LostAck{ReservationID: o.RID, Bucket: o.Bucket, User: o.UserID(), RequestID: o.RequestID(),
			Op: o.ID, AckedAtS: o.End.Seconds()})
	}
	sort.SliceStable(named, func(i, j int) bool { return named[i].AckedAtS < named[j].AckedAtS })
	return named
}

// unknownSummary resolves each reserve operation that ended UNKNOWN by its
// cached request result: executed when it holds the operation's user.
func unknownSummary(f *Facts) UnknownSummary {
	u, _ := resolveUnknowns(f)
	return u
}

func resolveUnknowns(f *Facts) (UnknownSummary, []string) {
	var u UnknownSummary
	var unresolved []string
	for _, o := range f.all() {
		if o.HadUnknown() && o.Outcome >= 0 {
			u.ResolvedByRetry++
		}
		if o.Outcome != history.OutcomeUnknown || !o.Kind.IsReserve() {
			continue
		}
		u.Total++
		res, read := f.Requests[RequestKey{o.Bucket, o.Req}]
		switch {
		case !read:
			u.Unresolved++
			unresolved = append(unresolved, fmt.Sprintf("op %d: request result not read", o.ID))
		case res.Err != "":
			u.Unresolved++
			unresolved = append(unresolved, fmt.Sprintf("op %d: %s", o.ID, res.Err))
		case res.Found && res.Result.UserID == o.UserID():
			u.Executed++
		default:
			u.NotExecuted++
		}
	}
	return u, unresolved
}

// judgeI7: each UNKNOWN is resolved by reading its request result: executed or not.
func judgeI7(f *Facts) Verdict {
	u, unresolved := resolveUnknowns(f)
	ev := map[string]any{"unknown": u.Total, "executed": u.Executed, "not_executed": u.NotExecuted,
		"unresolved": u.Unresolved, "resolved_by_retry": u.ResolvedByRetry, "unresolved_ops": listed(unresolved)}
	detail := fmt.Sprintf("%d UNKNOWN: %d executed, %d not executed", u.Total, u.Executed, u.NotExecuted)
	if u.Unresolved > 0 {
		detail += fmt.Sprintf(", %d could not be resolved", u.Unresolved)
	}
	return Verdict{u.Unresolved > 0, detail, ev}
}

func vacuousI7(_ *Facts, v Verdict) string {
	if v.Evidence["unknown"] != 0 {
		return ""
	}
	return fmt.Sprintf("no operation ended UNKNOWN (%d lost replies were resolved by a same-id re-send)", v.Evidence["resolved_by_retry"])
}

// judgeI8: no reservation is released twice; repeats answer ALREADY_RELEASED.
func judgeI8(f *Facts) Verdict {
	releases := 0
	releasedBy := map[string]int{}
	for _, o := range f.all() {
		if o.Kind != history.KindRelease || o.Outcome < 0 {
			continue
		}
		releases++
		if o.Outcome == history.Outcome(lua.CompensateReleased) {
			releasedBy[o.RID]++
		}
	}
	if releases == 0 {
		return Verdict{false, "no compensation ran", map[string]any{"releases": 0}}
	}
	var bad []string
	for rid, n := range releasedBy {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("%s released %d times", rid, n))
		}
	}
	detail := fmt.Sprintf("%d compensations, %d reservations released, each once", releases, len(releasedBy))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d reservations released more than once", len(bad))
	}
	return Verdict{len(bad) > 0, detail,
		map[string]any{"compensations": releases, "released": len(releasedBy), "violations": listed(bad)}}
}

func vacuousI8(_ *Facts, v Verdict) string {
	if _, none := v.Evidence["releases"]; none {
		return "no compensation ran"
	}
	if v.Evidence["released"] == 0 {
		return fmt.Sprintf("%d compensations ran, none released a reservation: nothing to release twice", v.Evidence["compensations"])
	}
	return ""
}

// judgeI9: without faults and with demand >= stock, every bucket sells
// out. A bucket that answered SOLD_OUT after its last release and still
// holds stock at the end refused while holding stock (after the last
// release, available only goes down). Always reports the stock left behind.
func judgeI9(f *Facts) Verdict {
	nb := f.Buckets()
	lastRelease := make([]time.Duration, nb)
	releasedIn := make([]int, nb)
	for _, o := range f.all() {
		// The latest a release can have run bounds "after its last release":
		// a release whose reply was lost ran no later than its re-send's
		// ALREADY_RELEASED; an UNKNOWN one may have run at any time, so no
		// SOLD_OUT in its bucket is judged after it.
		if _, to, bounded, ok := releaseWindow(f, o); ok && int(o.Bucket) < nb {
			releasedIn[o.Bucket]++
			if !bounded {
				to = math.MaxInt64 - f.ClockSkew
			}
			lastRelease[o.Bucket] = max(lastRelease[o.Bucket], to)
		}
	}
	soldOutAfter := make([]int, nb)
	demand := demandByBucket(f)
	for _, o := range f.all() {
		if !o.Kind.IsReserve() || o.Outcome < 0 || int(o.Bucket) >= nb {
			continue
		}
		after := lastRelease[o.Bucket]
		if releasedIn[o.Bucket] > 0 {
			after += f.ClockSkew // merged clocks may disagree by up to skew
		}
		if lua.ReserveCode(o.Outcome) == lua.SoldOut && o.Start > after {
			soldOutAfter[o.Bucket]++
		}
	}
	left := make([]int64, nb)
	var total int64
	var bad, below []string
	for b, s := range f.Stock {
		if s.Available < 0 { // nothing left to sell: I1 judges the counter itself
			below = append(below, fmt.Sprintf("bucket %d: available=%d", b, s.Available))
		}
		left[b] = max(0, s.Available)
		total += left[b]
		if s.Available <= 0 {
			continue
		}
		switch {
		case soldOutAfter[b] > 0:
			bad = append(bad, fmt.Sprintf("bucket %d answered SOLD_OUT %d times after its last release yet has %d left", b, soldOutAfter[b], s.Available))
		case releasedIn[b] == 0 && int64(len(demand[b])) >= s.Initial:
			bad = append(bad, fmt.Sprintf("bucket %d: %d users asked for %d units, %d left unsold", b, len(demand[b]), s.Initial, s.Available))
		}
	}
	detail := fmt.Sprintf("%d units left unsold; no bucket refused while holding stock", total)
	if len(bad) > 0 {
		detail = fmt.Sprintf("undersell: %v", bad)
	}
	ev := map[string]any{"left_per_bucket": left, "left_total": total, "violations": bad}
	if len(below) > 0 {
		detail += fmt.Sprintf(" (counted as 0 left, below 0 at the end: %v)", below)
		ev["below_zero"] = below
	}
	return Verdict{len(bad) > 0, detail, ev}
}

// demandByBucket is, per bucket, the users answered ACCEPTED or SOLD_OUT:
// those who asked while the sale was on.
func demandByBucket(f *Facts) []map[uint32]struct{} {
	demand := make([]map[uint32]struct{}, f.Buckets())
	for b := range demand {
		demand[b] = map[uint32]struct{}{}
	}
	for _, o := range f.all() {
		if !o.Kind.IsReserve() || o.Outcome < 0 || int(o.Bucket) >= len(demand) {
			continue
		}
		switch lua.ReserveCode(o.Outcome) {
		case lua.Accepted, lua.SoldOut:
			demand[o.Bucket][o.User] = struct{}{}
		}
	}
	return demand
}

// appliesI9: liveness is only promised without faults; a fault may
// legitimately leave stock unsold.
func appliesI9(f *Facts, v Verdict) string {
	if !f.FaultsInjected {
		return ""
	}
	return fmt.Sprintf("faults were injected; %d units left unsold", v.Evidence["left_total"])
}

// vacuousI9: no bucket was tested for undersell — none sold out, none
// answered SOLD_OUT, and in each the demand stayed below the stock.
func vacuousI9(f *Facts, _ Verdict) string {
	for _, o := range f.all() {
		if o.Kind.IsReserve() && o.Outcome == history.Outcome(lua.SoldOut) {
			return ""
		}
	}
	demand := demandByBucket(f)
	var users int
	for b, s := range f.Stock {
		if s.Initial > 0 && (s.Available <= 0 || int64(len(demand[b])) >= s.Initial) {
			return ""
		}
		users += len(demand[b])
	}
	return fmt.Sprintf("no bucket sold out or answered SOLD_OUT, and demand (%d users answered) stayed below the stock in every bucket: undersell not tested", users)
}
