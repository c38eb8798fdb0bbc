package runner

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

// Check statuses.
const (
	StatusPass = "pass"
	StatusFail = "fail"
	StatusSkip = "skip"
)

// maxListed bounds the offending ids listed in a check's evidence.
const maxListed = 20

// Check is the verdict of one invariant.
type Check struct {
	ID       string
	Name     string
	Status   string
	Detail   string
	Evidence map[string]any
}

// CheckInput is what the checker needs besides the Redis state.
type CheckInput struct {
	History *History
	Samples []StockSample
	// FaultsInjected turns the no-undersell check (I9) into a report of the
	// stock left behind: a fault may legitimately leave stock unsold.
	FaultsInjected bool
	// Generator is the share of the load this history holds. When the load
	// was split (N > 1) the checks that compare the activity's global
	// counters with the records reachable from this history (I2, I9) report
	// skip, "judged on the merge": only the union of every generator's
	// history can judge them (seckill-harness verify).
	Generator Generator
	// ClockSkew bounds how far apart the clocks of merged histories may be
	// (generators on several machines): I9 only counts a SOLD_OUT that
	// started more than this after the bucket's last release. 0 for one run.
	ClockSkew time.Duration
}

// UnknownSummary is how the UNKNOWN outcomes were resolved (I7).
type UnknownSummary struct {
	Total, Executed, NotExecuted, Unresolved int
	ResolvedByRetry                          int // operations whose send lost a reply and whose same-id re-send answered
}

// CheckReport is the checker's whole answer.
type CheckReport struct {
	Checks   []Check
	Buckets  []lua.Stock // final stock per bucket, read back from Redis
	Unknown  UnknownSummary
	LostAcks []string // acknowledged reservation ids missing from Redis
}

// Passed reports whether no check failed.
func (r *CheckReport) Passed() bool {
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			return false
		}
	}
	return true
}

// Failed lists the ids of the failed checks.
func (r *CheckReport) Failed() []string {
	var ids []string
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// record is what the checker reads of one reservation record.
type record struct {
	status lua.Status
	user   string
	bucket uint32
}

// Verify reads the final state of tgt's activity back from Redis and checks
// I1–I9 against it and the history. Reads are bounded: the stock hashes, the
// two zsets, and one HMGET per reservation id named by the history or the
// zsets, pipelined. Never KEYS or SCAN. A Go error means the state could not
// be read (the checks are then unknown, not passed).
func Verify(ctx context.Context, tgt Target, in CheckInput) (*CheckReport, error) {
	a := tgt.Activity
	st := tgt.Store
	rdb := st.Client()
	ops := in.History.Ops
	rep := &CheckReport{}

	for b := uint32(0); b < a.Buckets; b++ {
		s, err := lua.ReadStock(ctx, rdb, a.Scope(b))
		if err != nil {
			return nil, fmt.Errorf("checker: %w", err)
		}
		rep.Buckets = append(rep.Buckets, s)
	}

	// Reservation ids to read: every one the history names or may have
	// created, and every member of the two zsets.
	cand := map[string]uint32{}
	for i := range ops {
		o := &ops[i]
		if o.RID != "" {
			cand[o.RID] = uint32(o.Bucket)
		}
		if o.Kind.IsReserve() && (o.Outcome == OutcomeUnknown || o.HadUnknown()) {
			cand[st.ReservationIDFor(a, o.UserID(), o.RequestID())] = uint32(o.Bucket)
		}
	}
	for b := uint32(0); b < a.Buckets; b++ {
		sc := a.Scope(b)
		for _, z := range []string{sc.SendPendingKey(), sc.ExpiryKey()} {
			ms, err := rdb.ZRange(ctx, z, 0, -1).Result()
			if err != nil {
				return nil, fmt.Errorf("checker: read %s: %w", z, err)
			}
			for _, m := range ms {
				cand[m] = b
			}
		}
	}
	recs, err := readRecords(ctx, rdb, a, cand)
	if err != nil {
		return nil, err
	}

	rep.Checks = append(rep.Checks,
		checkI1(rep.Buckets, in.Samples),
		checkI2(a, rep.Buckets, recs),
		checkI3(a, ops, recs),
		checkI4(ops, recs),
	)
	i5, err := checkI5(ctx, st, a, ops)
	if err != nil {
		return nil, err
	}
	i6, lost := checkI6(ops, recs)
	rep.LostAcks = lost
	i7, unk, err := checkI7(ctx, st, a, ops)
	if err != nil {
		return nil, err
	}
	rep.Unknown = unk
	rep.Checks = append(rep.Checks, i5, i6, i7, checkI8(ops), checkI9(a, ops, rep.Buckets, in.FaultsInjected, in.ClockSkew))
	if in.Generator.Split() {
		for i, c := range rep.Checks {
			switch c.ID {
			case "I2", "I9":
				rep.Checks[i] = judgedOnMerge(c, in.Generator)
			case "I3":
				// A bound on a part of the acknowledgements: a fail is an
				// oversell, a pass only this generator's; the merge judges all.
				rep.Checks[i].Detail += fmt.Sprintf(" (generator %s's acknowledgements only; the merge judges them all)", in.Generator)
			}
		}
	}
	return rep, nil
}

// judgedOnMerge replaces a check of global counters against this history
// (I2, I9) by a skip: another generator's reservations and releases count
// in the counters but not in this history, so its verdict would be neither
// a fail nor a pass worth reading.
func judgedOnMerge(c Check, g Generator) Check {
	return Check{ID: c.ID, Name: c.Name, Status: StatusSkip,
		Detail:   fmt.Sprintf("generator %s of a split load: judged on the merge (seckill-harness verify over every generator's run)", g),
		Evidence: map[string]any{"generator": g.String(), "judged_on": "merge"}}
}

func readRecords(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, cand map[string]uint32) (map[string]record, error) {
	ids := make([]string, 0, len(cand))
	for id := range cand {
		if lua.ValidateID("reservation_id", id) == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make(map[string]record, len(ids))
	for start := 0; start < len(ids); start += 1000 {
		end := min(start+1000, len(ids))
		cmds := make([]*redis.SliceCmd, 0, end-start)
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids[start:end] {
				cmds = append(cmds, p.HMGet(ctx, a.Scope(cand[id]).ResvKey(id), "status", "user_id", "bucket_id"))
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			return nil, fmt.Errorf("checker: read reservation records: %w", err)
		}
		for i, c := range cmds {
			v := c.Val()
			if len(v) != 3 || v[0] == nil {
				continue // no such record
			}
			s, _ := v[0].(string)
			u, _ := v[1].(string)
			out[ids[start+i]] = record{status: lua.Status(s), user: u, bucket: cand[ids[start+i]]}
		}
	}
	return out, nil
}

func listed(ids []string) []string {
	sort.Strings(ids)
	if len(ids) > maxListed {
		return ids[:maxListed]
	}
	return ids
}

func pass(id, name, detail string, ev map[string]any) Check {
	return Check{ID: id, Name: name, Status: StatusPass, Detail: detail, Evidence: ev}
}

func verdict(id, name string, failed bool, detail string, ev map[string]any) Check {
	c := pass(id, name, detail, ev)
	if failed {
		c.Status = StatusFail
	}
	return c
}

// I1: per bucket available + reserved == initial, both >= 0 — at the end and
// at every sample taken during the run.
func checkI1(buckets []lua.Stock, samples []StockSample) Check {
	var bad []string
	for b, s := range buckets {
		if !s.Conserved() {
			bad = append(bad, fmt.Sprintf("bucket %d: initial=%d available=%d reserved=%d", b, s.Initial, s.Available, s.Reserved))
		}
	}
	var transient []map[string]any
	readErrs := 0
	for _, s := range samples {
		if s.Err != "" {
			readErrs++
		}
		if s.Violates() && len(transient) < maxListed {
			transient = append(transient, map[string]any{"t_s": s.At.Seconds(), "bucket": s.Bucket,
				"initial": s.Stock.Initial, "available": s.Stock.Available, "reserved": s.Stock.Reserved})
		}
	}
	ev := map[string]any{"final_violations": bad, "samples": len(samples), "sample_read_errors": readErrs, "transient_violations": transient}
	detail := fmt.Sprintf("%d buckets conserve stock; %d samples during the run, %d violations", len(buckets)-len(bad), len(samples), len(transient))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d of %d buckets break initial == available + reserved: %v", len(bad), len(buckets), bad)
	}
	return verdict("I1", "stock_conservation", len(bad) > 0 || len(transient) > 0, detail, ev)
}

// I2: per bucket reserved == live records, released_total == RELEASED records.
func checkI2(a *lua.Activity, buckets []lua.Stock, recs map[string]record) Check {
	live := make([]int64, a.Buckets)
	released := make([]int64, a.Buckets)
	for _, r := range recs {
		if r.status == lua.StatusReleased {
			released[r.bucket]++
		} else {
			live[r.bucket]++
		}
	}
	var bad []string
	for b, s := range buckets {
		if s.Reserved != live[b] || s.ReleasedTotal != released[b] {
			bad = append(bad, fmt.Sprintf("bucket %d: reserved=%d but %d live records; released_total=%d but %d RELEASED records",
				b, s.Reserved, live[b], s.ReleasedTotal, released[b]))
		}
	}
	detail := fmt.Sprintf("%d reservation records read; counters match them in every bucket", len(recs))
	if len(bad) > 0 {
		detail = fmt.Sprintf("counters disagree with the records: %v", bad)
	}
	return verdict("I2", "reservation_accounting", len(bad) > 0, detail,
		map[string]any{"records_read": len(recs), "live_records": live, "released_records": released, "mismatches": bad})
}

// I3: distinct reservation ids acknowledged ACCEPTED, less those released, never exceed initial.
func checkI3(a *lua.Activity, ops []Op, recs map[string]record) Check {
	acked := make([]map[string]struct{}, a.Buckets)
	for b := range acked {
		acked[b] = map[string]struct{}{}
	}
	for i := range ops {
		if ops[i].Accepted() && ops[i].RID != "" {
			acked[ops[i].Bucket][ops[i].RID] = struct{}{}
		}
	}
	var bad []string
	var total, totalInitial int64
	perBucket := make([]int64, a.Buckets)
	for b := range acked {
		n := int64(0)
		for rid := range acked[b] {
			if r, ok := recs[rid]; !ok || r.status != lua.StatusReleased {
				n++
			}
		}
		perBucket[b] = n
		total += n
		initial := a.BucketStock(uint32(b))
		totalInitial += initial
		if n > initial {
			bad = append(bad, fmt.Sprintf("bucket %d: %d held acknowledged reservations > initial %d", b, n, initial))
		}
	}
	if total > totalInitial {
		bad = append(bad, fmt.Sprintf("total: %d > %d", total, totalInitial))
	}
	detail := fmt.Sprintf("%d acknowledged reservations held against %d stock", total, totalInitial)
	if len(bad) > 0 {
		detail = "oversold: " + fmt.Sprint(bad)
	}
	return verdict("I3", "no_oversell", len(bad) > 0, detail,
		map[string]any{"acknowledged_held": perBucket, "total_held": total, "initial": totalInitial, "violations": bad})
}

// I4: no user holds two live reservations in Redis, and no user was told
// ACCEPTED for a second reservation while the first had not been released.
func checkI4(ops []Op, recs map[string]record) Check {
	liveByUser := map[string][]string{}
	for rid, r := range recs {
		if r.status != lua.StatusReleased {
			liveByUser[r.user] = append(liveByUser[r.user], rid)
		}
	}
	var bad []string
	for u, rids := range liveByUser {
		if len(rids) > 1 {
			bad = append(bad, fmt.Sprintf("%s holds %d live reservations %v", u, len(rids), listed(rids)))
		}
	}
	// Acknowledgements: per user, the distinct reservation ids in the order
	// they were first acknowledged; each must have been released (a release
	// op answered RELEASED, started before) the next one was acknowledged.
	type ack struct {
		rid string
		end time.Duration
	}
	firstAck := map[uint32][]ack{}
	releasedStart := map[string]time.Duration{}
	for i := range ops {
		o := &ops[i]
		if o.Kind == KindRelease && o.Outcome == Outcome(lua.CompensateReleased) {
			if t, ok := releasedStart[o.RID]; !ok || o.Start < t {
				releasedStart[o.RID] = o.Start
			}
		}
	}
	for i := range ops {
		o := &ops[i]
		if !o.Accepted() || o.RID == "" {
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
					bad = append(bad, fmt.Sprintf("%s told ACCEPTED for %s and then %s while the first was not released", UserID(u), prev.rid, list[k].rid))
				}
			}
		}
	}
	detail := fmt.Sprintf("%d users with live reservations, none holds two", len(liveByUser))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d violations of one-per-user", len(bad))
	}
	return verdict("I4", "one_per_user", len(bad) > 0, detail,
		map[string]any{"violations": listed(bad), "double_acknowledgements": told})
}

// I5: every answer to one request_id agrees (code and reservation id), and
// another user reusing it gets REQUEST_ID_CONFLICT with no reservation id.
func checkI5(ctx context.Context, st *lua.Store, a *lua.Activity, ops []Op) (Check, error) {
	// Request results are cached per bucket: a request id is one per bucket.
	type reqKey struct {
		bucket uint16
		req    uint32
	}
	byReq := map[reqKey][]int{}
	for i := range ops {
		o := &ops[i]
		if !o.Kind.IsReserve() || o.Outcome < 0 {
			continue
		}
		switch lua.ReserveCode(o.Outcome) {
		case lua.ConfigMissing, lua.InvariantViolation, lua.BadArgument:
			continue // not cached by the contract: a repeat may differ
		}
		byReq[reqKey{o.Bucket, o.Req}] = append(byReq[reqKey{o.Bucket, o.Req}], i)
	}
	var bad []string
	groups, foreignGroups := 0, 0
	for key, idx := range byReq {
		req := key.req
		if len(idx) < 2 && ops[idx[0]].Outcome != Outcome(lua.RequestIDConflict) {
			continue
		}
		groups++
		type answer struct {
			code lua.ReserveCode
			rid  string
		}
		answers := map[uint32]answer{} // per user: the first non-conflict answer
		conflicted := map[uint32]bool{}
		for _, i := range idx {
			o := &ops[i]
			code := lua.ReserveCode(o.Outcome)
			if code == lua.RequestIDConflict {
				conflicted[o.User] = true
				if o.RID != "" {
					bad = append(bad, fmt.Sprintf("%s: REQUEST_ID_CONFLICT to %s leaked reservation %s", RequestID(req), o.UserID(), o.RID))
				}
				continue
			}
			got := answer{code, o.RID}
			if prev, ok := answers[o.User]; ok && prev != got {
				bad = append(bad, fmt.Sprintf("%s: %s answered %s/%s and later %s/%s", RequestID(req), o.UserID(), prev.code, prev.rid, got.code, got.rid))
			} else if !ok {
				answers[o.User] = got
			}
		}
		if len(answers) > 1 {
			var users []string
			for u := range answers {
				users = append(users, UserID(u))
			}
			bad = append(bad, fmt.Sprintf("%s: %d users got a real answer: %v", RequestID(req), len(answers), listed(users)))
		}
		for u := range answers {
			if conflicted[u] {
				bad = append(bad, fmt.Sprintf("%s: %s got both a real answer and REQUEST_ID_CONFLICT", RequestID(req), UserID(u)))
			}
		}
		// Where users competed for the id, Redis' cached owner must be the one answered for real.
		if len(conflicted) > 0 && len(answers) == 1 {
			foreignGroups++
			var owner uint32
			for u := range answers {
				owner = u
			}
			sc := a.Scope(uint32(key.bucket))
			res, found, err := st.LookupRequest(ctx, sc, RequestID(req))
			if err != nil {
				return Check{}, fmt.Errorf("checker I5: %w", err)
			}
			if found && res.UserID != UserID(owner) {
				bad = append(bad, fmt.Sprintf("%s: Redis says %s owns it, answers say %s", RequestID(req), res.UserID, UserID(owner)))
			}
		}
	}
	resent, resentBad, err := checkResent(ctx, st, a, ops)
	if err != nil {
		return Check{}, err
	}
	bad = append(bad, resentBad...)
	detail := fmt.Sprintf("%d request ids answered more than once (%d reused by another user), %d re-sent operations: all agree", groups, foreignGroups, resent)
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d idempotency violations", len(bad))
	}
	return verdict("I5", "idempotency", len(bad) > 0, detail,
		map[string]any{"repeated_request_ids": groups, "reused_by_another_user": foreignGroups, "resent_ops": resent,
			"resent_mismatches": len(resentBad), "violations": listed(bad), "violation_count": len(bad)}), nil
}

// checkResent is I5 across request ids: an operation's answer must be the
// answer of its own request_id.
//   - No request is refused USER_ALREADY_RESERVED for the reservation it
//     created itself (its derived reservation_id): the contract answers a
//     repeat of a request from its cached result (seed 000 §7.2).
//   - An operation answered by a re-send: the contract re-sends with the
//     same ids (seed 000 §7.4), so an ACCEPTED names the reservation derived
//     from the operation's request_id, and the answer agrees with the result
//     Redis cached for that request_id.
//
// A client that re-sends under a new request_id, or a script that re-runs a
// request whose reply was lost, passes every other check: the one-per-user
// marker turns the second run into USER_ALREADY_RESERVED, which overwrites
// or never meets the first answer, which the client never saw. Reads one
// request result per re-sent operation, pipelined.
func checkResent(ctx context.Context, st *lua.Store, a *lua.Activity, ops []Op) (int, []string, error) {
	var idx []int
	var bad []string
	checked := 0
	for i := range ops {
		o := &ops[i]
		if !o.Kind.IsReserve() || o.Outcome < 0 {
			continue
		}
		code := lua.ReserveCode(o.Outcome)
		if o.Sends >= 2 {
			checked++
		}
		if code == lua.UserAlreadyReserved && o.RID != "" && o.RID == st.ReservationIDFor(a, o.UserID(), o.RequestID()) {
			bad = append(bad, fmt.Sprintf("%s of %s: refused USER_ALREADY_RESERVED for %s, the reservation this request created", RequestID(o.Req), o.UserID(), o.RID))
			continue
		}
		if o.Sends < 2 {
			continue
		}
		switch code {
		case lua.ConfigMissing, lua.InvariantViolation, lua.BadArgument, lua.ReservationIDConflict, lua.RequestIDConflict:
			continue // not cached for this user by the contract
		}
		if o.Accepted() {
			if want := st.ReservationIDFor(a, o.UserID(), o.RequestID()); o.RID != want {
				bad = append(bad, fmt.Sprintf("%s of %s: re-sent and answered ACCEPTED %s, not its own reservation %s", RequestID(o.Req), o.UserID(), o.RID, want))
				continue
			}
		}
		idx = append(idx, i)
	}
	rdb := st.Client()
	for start := 0; start < len(idx); start += 1000 {
		batch := idx[start:min(start+1000, len(idx))]
		cmds := make([]*redis.StringCmd, 0, len(batch))
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range batch {
				o := &ops[i]
				cmds = append(cmds, p.HGet(ctx, a.Scope(uint32(o.Bucket)).ReqShardKey(o.RequestID()), o.RequestID()))
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			return 0, nil, fmt.Errorf("checker I5: read request results: %w", err)
		}
		for k, c := range cmds {
			v, err := c.Result()
			if err == redis.Nil {
				continue // never executed, or lost with a failover: I6/I7 speak to that
			}
			if err != nil {
				return 0, nil, fmt.Errorf("checker I5: read request result: %w", err)
			}
			o := &ops[batch[k]]
			res, perr := lua.ParseRequestResult(v)
			if perr != nil || res.UserID != o.UserID() {
				continue
			}
			if res.Code != lua.ReserveCode(o.Outcome) || res.ReservationID != o.RID {
				bad = append(bad, fmt.Sprintf("%s of %s: Redis holds %s %s for it, the re-sent operation answered %s %s",
					RequestID(o.Req), o.UserID(), res.Code, res.ReservationID, lua.ReserveCode(o.Outcome), o.RID))
			}
		}
	}
	return checked, bad, nil
}

// I6: every reservation acknowledged ACCEPTED still exists in Redis.
func checkI6(ops []Op, recs map[string]record) (Check, []string) {
	acked := map[string]bool{}
	for i := range ops {
		if ops[i].Accepted() && ops[i].RID != "" {
			acked[ops[i].RID] = true
		}
	}
	var lost []string
	for rid := range acked {
		if _, ok := recs[rid]; !ok {
			lost = append(lost, rid)
		}
	}
	sort.Strings(lost)
	detail := fmt.Sprintf("all %d acknowledged reservations exist in Redis", len(acked))
	if len(lost) > 0 {
		detail = fmt.Sprintf("%d of %d acknowledged reservations are gone from Redis", len(lost), len(acked))
	}
	return verdict("I6", "no_lost_acks", len(lost) > 0, detail,
		map[string]any{"acknowledged": len(acked), "lost": len(lost), "lost_ids": listed(append([]string(nil), lost...))}), lost
}

// I7: each UNKNOWN is resolved by reading its request result: executed or not.
func checkI7(ctx context.Context, st *lua.Store, a *lua.Activity, ops []Op) (Check, UnknownSummary, error) {
	var u UnknownSummary
	var unresolved []string
	for i := range ops {
		o := &ops[i]
		if o.HadUnknown() && o.Outcome >= 0 {
			u.ResolvedByRetry++
		}
		if o.Outcome != OutcomeUnknown || !o.Kind.IsReserve() {
			continue
		}
		u.Total++
		res, found, err := st.LookupRequest(ctx, a.Scope(uint32(o.Bucket)), o.RequestID())
		switch {
		case err != nil:
			u.Unresolved++
			unresolved = append(unresolved, fmt.Sprintf("op %d: %v", o.ID, err))
		case found && res.UserID == o.UserID():
			u.Executed++
		default:
			u.NotExecuted++
		}
	}
	ev := map[string]any{"unknown": u.Total, "executed": u.Executed, "not_executed": u.NotExecuted,
		"unresolved": u.Unresolved, "resolved_by_retry": u.ResolvedByRetry, "unresolved_ops": listed(unresolved)}
	if u.Total == 0 {
		return Check{ID: "I7", Name: "unknowns_resolved", Status: StatusSkip,
			Detail: fmt.Sprintf("no operation ended UNKNOWN (%d lost replies were resolved by a same-id re-send)", u.ResolvedByRetry), Evidence: ev}, u, nil
	}
	detail := fmt.Sprintf("%d UNKNOWN: %d executed, %d not executed", u.Total, u.Executed, u.NotExecuted)
	if u.Unresolved > 0 {
		detail += fmt.Sprintf(", %d could not be resolved", u.Unresolved)
	}
	return verdict("I7", "unknowns_resolved", u.Unresolved > 0, detail, ev), u, nil
}

// I8: no reservation is released twice; repeats answer ALREADY_RELEASED.
func checkI8(ops []Op) Check {
	releases := 0
	releasedBy := map[string]int{}
	for i := range ops {
		o := &ops[i]
		if o.Kind != KindRelease || o.Outcome < 0 {
			continue
		}
		releases++
		if o.Outcome == Outcome(lua.CompensateReleased) {
			releasedBy[o.RID]++
		}
	}
	if releases == 0 {
		return Check{ID: "I8", Name: "release_at_most_once", Status: StatusSkip, Detail: "no compensation ran", Evidence: map[string]any{"releases": 0}}
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
	return verdict("I8", "release_at_most_once", len(bad) > 0, detail,
		map[string]any{"compensations": releases, "released": len(releasedBy), "violations": listed(bad)})
}

// I9: without faults and with demand >= stock, every bucket sells out. A
// bucket that answered SOLD_OUT after its last release and still holds stock
// at the end refused while holding stock (after the last release, available
// only goes down). Always reports the stock left behind.
func checkI9(a *lua.Activity, ops []Op, buckets []lua.Stock, faults bool, skew time.Duration) Check {
	lastRelease := make([]time.Duration, a.Buckets)
	releasedIn := make([]int, a.Buckets)
	for i := range ops {
		o := &ops[i]
		if o.Kind == KindRelease && o.Outcome == Outcome(lua.CompensateReleased) {
			releasedIn[o.Bucket]++
			if o.End > lastRelease[o.Bucket] {
				lastRelease[o.Bucket] = o.End
			}
		}
	}
	soldOutAfter := make([]int, a.Buckets)
	demand := make([]map[uint32]struct{}, a.Buckets)
	for b := range demand {
		demand[b] = map[uint32]struct{}{}
	}
	for i := range ops {
		o := &ops[i]
		if !o.Kind.IsReserve() || o.Outcome < 0 {
			continue
		}
		switch lua.ReserveCode(o.Outcome) {
		case lua.Accepted, lua.SoldOut:
			demand[o.Bucket][o.User] = struct{}{}
		}
		after := lastRelease[o.Bucket]
		if releasedIn[o.Bucket] > 0 {
			after += skew // merged clocks may disagree by up to skew
		}
		if lua.ReserveCode(o.Outcome) == lua.SoldOut && o.Start > after {
			soldOutAfter[o.Bucket]++
		}
	}
	left := make([]int64, a.Buckets)
	var total int64
	var bad []string
	for b, s := range buckets {
		left[b] = s.Available
		total += s.Available
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
	ev := map[string]any{"left_per_bucket": left, "left_total": total, "violations": bad}
	if faults {
		return Check{ID: "I9", Name: "liveness", Status: StatusSkip,
			Detail: fmt.Sprintf("faults were injected; %d units left unsold", total), Evidence: ev}
	}
	detail := fmt.Sprintf("%d units left unsold; no bucket refused while holding stock", total)
	if len(bad) > 0 {
		detail = fmt.Sprintf("undersell: %v", bad)
	}
	return verdict("I9", "liveness", len(bad) > 0, detail, ev)
}
