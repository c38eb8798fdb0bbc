package checks

import (
	"bytes"
	"cmp"
	"container/heap"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/sut"
)

// The linearizability check (H1): every answer of the history is
// explained by one order of the operations that respects real time, under
// the model of the sale in linmodel.go, checked by porcupine partition by
// partition (each user's holds, each bucket's counter), the smallest
// first, within linBudget in all. A partition porcupine could not finish
// within what was left of the budget is reported as not checked: the check
// then skips with what it did check, never passes.

// linBudget bounds the whole check's search (every partition's).
var linBudget = 10 * time.Second

// largePartition is the size from which a partition gets only its share
// of the budget left (the budget over the large partitions left), so that
// one whose search does not end leaves time for the others.
const largePartition = 1000

// LinearizabilityBudget is how long the linearizability check searches at
// most, over every partition.
func LinearizabilityBudget() time.Duration { return linBudget }

// linPartition is one partition of the history with its model.
type linPartition struct {
	name  string // "user u17", "bucket 0"
	model porcupine.Model
	ops   []porcupine.Operation
	// stock is a bucket's initial units (-1 for a user's partition).
	stock int64
}

// LinDrawing is porcupine's visualisation of the smallest partition no
// order explains, ready to be drawn with the run's fault windows.
type LinDrawing struct {
	Partition string // e.g. "user u17"
	model     porcupine.Model
	info      porcupine.LinearizationInfo
}

// LinWindow is a time span of the run (the history's clock) to mark on
// the drawing: a fault's window.
type LinWindow struct {
	Name     string
	From, To time.Duration
}

// Render writes the drawing as a self-contained HTML page, with windows
// marked on a row of their own.
func (d *LinDrawing) Render(w io.Writer, windows []LinWindow) error {
	info := d.info // a copy: the annotations are this rendering's
	var notes []porcupine.Annotation
	for _, win := range windows {
		notes = append(notes, porcupine.Annotation{Tag: "faults", Start: int64(win.From), End: int64(win.To),
			Description: win.Name, Details: fmt.Sprintf("%s: %.3f s to %.3f s of the run", win.Name, win.From.Seconds(), win.To.Seconds()),
			BackgroundColor: "#f6c6c6"})
	}
	info.AddAnnotations(notes)
	var page bytes.Buffer
	if err := porcupine.Visualize(d.model, info, &page); err != nil {
		return err
	}
	// The page opens at the answer no order explains (porcupine's "jump
	// to first error"), not at the partition's first operation: a
	// bucket's partition holds thousands.
	html := page.Bytes()
	if i := bytes.LastIndex(html, []byte("</body>")); i >= 0 {
		html = slices.Concat(html[:i], []byte(openAtError), html[i:])
	}
	_, err := w.Write(html)
	return err
}

// openAtError is the drawing's script that follows porcupine's jump link
// once the page is drawn.
const openAtError = `<script>window.addEventListener('load', () => {
  const j = document.querySelector('#jump-link')
  if (j) j.dispatchEvent(new MouseEvent('click'))
  const p = [...document.querySelectorAll('.linearization-invalid')].find((e) => !e.parentElement.classList.contains('hidden'))
  if (p) p.scrollIntoView({inline: 'center', block: 'center'})
})</script>
`

// LinearizabilityFileName is the drawing's file beside report.html.
const LinearizabilityFileName = reports.LinearizabilityFileName

// linScope is what the partitions hold: the operations put in, their
// lost replies, the pipeline's releases among them, and the users left
// out of the model.
type linScope struct {
	ops              int
	lost             lostReplies
	pipelineReleases int
	// unfollowed are users a pipeline release of a reservation no request
	// of the history is known to have made left out of the model.
	unfollowed int
}

// linPartitions splits the history into the model's partitions. why is
// why the counters are not judged ("" when they are).
func linPartitions(f *Facts) (parts []linPartition, sc linScope, why string) {
	var end time.Duration
	type userReq struct {
		user uint32
		rid  string
	}
	reqOf := map[userReq]uint32{} // a user's reservation id -> the request that made it
	for _, o := range f.all() {
		end = max(end, o.End)
		if o.RID != "" && o.Accepted() && !o.Replay() {
			reqOf[userReq{o.User, o.RID}] = o.Req
		}
	}
	for k, rf := range f.Requests { // an UNKNOWN reserve that ran: its reservation, read back
		if rf.Found && rf.Err == "" && rf.Result.Code == lua.Accepted && rf.Result.ReservationID != "" {
			if u, ok := history.ParseUserID(rf.Result.UserID); ok {
				if _, known := reqOf[userReq{u, rf.Result.ReservationID}]; !known {
					reqOf[userReq{u, rf.Result.ReservationID}] = k.Req
				}
			}
		}
	}
	for _, o := range f.all() { // a release of the load names its reservation's request too
		if k := (userReq{o.User, o.RID}); o.RID != "" && o.Kind == history.KindRelease && o.Flags&FlagPipelineRelease == 0 {
			if _, ok := reqOf[k]; !ok {
				reqOf[k] = o.Req
			}
		}
	}
	// The pipeline's releases (compensate calls of the release stage and
	// the expiry checker, WithPipelineReleases) are releases like the
	// load's, of the reservation they name. One whose reservation no
	// request of the history is known to have made leaves its user out of
	// the model (unheld: that user's holds cannot be followed).
	unheld := map[uint32]bool{}
	for _, o := range f.all() {
		if o.Flags&FlagPipelineRelease != 0 {
			if _, ok := reqOf[userReq{o.User, o.RID}]; !ok {
				unheld[o.User] = true
			}
		}
	}
	infinity := int64(end) + int64(time.Millisecond)
	execs := executionsOf(f)
	countBuckets := true
	switch {
	case f.Generator.Split():
		countBuckets, why = false, fmt.Sprintf("generator %s holds part of the load: the counters are judged on the merge", f.Generator)
	case len(f.Planned) == 0:
		countBuckets, why = false, "the buckets' initial stock is not known"
	}
	users := map[uint32][]porcupine.Operation{}
	buckets := map[uint16][]porcupine.Operation{}
	for _, o := range f.all() {
		if o.Outcome == history.OutcomeError || o.Outcome == history.OutcomeDropped || o.Outcome == history.OutcomeLocalSoldOut {
			continue
		}
		if o.Kind == history.KindQuery && o.Outcome == history.OutcomeUnknown {
			continue // a read whose reply was lost said nothing and changed nothing
		}
		in := linInput{release: o.Kind == history.KindRelease, query: o.Kind == history.KindQuery, req: o.Req, user: o.User}
		in.retried = in.release && o.HadUnknown()
		resolved := false // an UNKNOWN reserve whose cached result was read back
		if o.Outcome == history.OutcomeUnknown && in.reserve() && !f.Unexposed[sut.Requests] {
			if rf, read := f.Requests[RequestKey{o.Bucket, o.Req}]; read && rf.Err == "" {
				if !rf.Found || rf.Result.UserID != o.UserID() {
					sc.lost.neverRan++
					continue // it never ran: no result of this user's request in Redis
				}
				resolved = true
				sc.lost.ran++
			}
		}
		if r, ok := reqOf[userReq{o.User, o.RID}]; ok && in.release {
			in.req = r // the reservation released, by the request that made it
		}
		out := linOutput{unknown: o.Outcome == history.OutcomeUnknown, code: int16(o.Outcome), held: -1, rid: o.RID, remaining: -1, replay: o.Replay()}
		if n, ok := o.RemainingOf(); ok && !out.unknown {
			out.remaining = int64(n)
		}
		if !in.release && lua.ReserveCode(o.Outcome) == lua.UserAlreadyReserved && !out.unknown { // a reserve's or a query's
			if r, ok := reqOf[userReq{o.User, o.RID}]; ok {
				out.held = int64(r)
			}
		}
		if resolved {
			// It ran, some time after its start, with the answer Redis cached.
			rf := f.Requests[RequestKey{o.Bucket, o.Req}]
			out = linOutput{code: int16(rf.Result.Code), held: -1, rid: rf.Result.ReservationID, remaining: rf.Result.Remaining}
			if r, ok := reqOf[userReq{o.User, rf.Result.ReservationID}]; ok && rf.Result.Code == lua.UserAlreadyReserved {
				out.held = int64(r)
			}
		}
		op := porcupine.Operation{Input: in, Output: out, Call: int64(o.Start), Return: int64(o.End), Metadata: fmt.Sprintf("op %d", o.ID)}
		if o.Outcome == history.OutcomeUnknown {
			op.Return = infinity // may take effect any time after its start
		}
		sc.ops++
		if out.unknown {
			sc.lost.pending++
		}
		if o.Flags&FlagPipelineRelease != 0 {
			sc.pipelineReleases++
		}
		if !unheld[o.User] {
			users[o.User] = append(users[o.User], op)
		}
		ranElsewhere := resolved && execs.ran[RequestKey{o.Bucket, o.Req}] // another operation's answer was the run
		run, merged := execs.merged[mergeKey{RequestKey{o.Bucket, o.Req}, out.code}]
		switch {
		case !countBuckets || ranElsewhere || in.query:
		case merged && in.reserve() && !out.unknown && !resolved:
			if run.first == o.ID { // the one run its answers stand for, somewhere in their span
				op.Call, op.Return = int64(run.call), int64(run.ret)
				out.remaining = run.remaining
				op.Output = out
				buckets[o.Bucket] = append(buckets[o.Bucket], op)
			}
		case out.unknown || countsInBucket(in, out) && (in.release || resolved || execs.counts(o)):
			if sp, ok := execs.repSpan[RequestKey{o.Bucket, o.Req}]; ok && in.reserve() && o.Replay() && !resolved {
				op.Call, op.Return = int64(sp[0]), int64(sp[1]) // the run was one of the replayed answers' lost sends
			}
			buckets[o.Bucket] = append(buckets[o.Bucket], op)
		case in.retried && lua.CompensateCode(out.code) == lua.CompensateAlreadyReleased:
			// Its lost send may have given the unit back (then the re-send
			// found it released): to the counter, a lost release.
			asLost := op // not the named result lost, which counts UNKNOWN answers
			asLost.Output, asLost.Return = linOutput{unknown: true, code: out.code, held: -1, remaining: -1}, infinity
			buckets[o.Bucket] = append(buckets[o.Bucket], asLost)
		}
	}
	for u, list := range users {
		name := "user " + history.UserID(u)
		seen, keep := map[uint32]bool{}, repeatedSet{}
		for _, op := range list {
			if in := op.Input.(linInput); !in.release { // a query asks again too
				keep[in.req] = seen[in.req]
				seen[in.req] = true
			}
		}
		for r, again := range keep {
			if !again {
				delete(keep, r)
			}
		}
		parts = append(parts, linPartition{name: name, model: userModel(keep), ops: list, stock: -1})
	}
	if half := f.ClockSkew / 2; half > 0 {
		// A merge of generators' histories (verify): their clocks may
		// disagree by up to ClockSkew, so a bucket's operations (every
		// generator's) are only ordered when apart by more than that:
		// each is widened by half of it on both sides. A user's are one
		// generator's (users ≡ I mod N), on one clock.
		for _, list := range buckets {
			for i := range list {
				list[i].Call -= int64(half)
				if list[i].Return != infinity {
					list[i].Return += int64(half)
				}
			}
		}
	}
	for b, list := range buckets {
		if int(b) >= len(f.Planned) {
			return nil, sc, fmt.Sprintf("bucket %d is not among the %d buckets set up", b, len(f.Planned))
		}
		parts = append(parts, linPartition{name: fmt.Sprintf("bucket %d", b), model: bucketModel(f.Planned[b]), ops: list, stock: f.Planned[b]})
	}
	slices.SortFunc(parts, func(a, b linPartition) int {
		return cmp.Or(cmp.Compare(len(a.ops), len(b.ops)), strings.Compare(a.name, b.name))
	})
	for i := range parts {
		assignRows(parts[i].ops)
	}
	sc.unfollowed = len(unheld)
	return parts, sc, why
}

// lostReplies counts the UNKNOWN operations: resolved from the request
// results read back (ran, never ran) or left to take effect at any time
// after their start (pending).
type lostReplies struct{ ran, neverRan, pending int }

func (l lostReplies) String() string {
	if l.ran+l.neverRan+l.pending == 0 {
		return "no UNKNOWN"
	}
	return fmt.Sprintf("%d UNKNOWN (%d ran and %d never ran, by the request results read back; %d taking effect any time after their start, or never)",
		l.ran+l.neverRan+l.pending, l.ran, l.neverRan, l.pending)
}

// countsInBucket reports whether a known answer goes into its bucket's
// partition: those that move the counter (ACCEPTED, RELEASED) and
// SOLD_OUT, which needs it empty. The answers that only read the count
// (USER_ALREADY_RESERVED, the cached refusals, ALREADY_RELEASED) are left
// out: each fits the counter at one moment of its span, but porcupine,
// trying operations in call order, would first place every write called
// before it and then search back through them, which takes more than a
// run's budget on a bucket of thousands of operations. Their holds are
// judged in the user's partition.
func countsInBucket(in linInput, out linOutput) bool {
	if in.release {
		return lua.CompensateCode(out.code) == lua.CompensateReleased
	}
	code := lua.ReserveCode(out.code)
	return code == lua.Accepted || code == lua.SoldOut
}

// executions says which reserve answer of each request id is the one
// execution of reserve.lua the bucket's counter saw: every other answer to
// the request is the cached one (replay=1), judged by the user's
// partition. Which operation ran is not which was sent first: a replay
// sent after its original may reach Redis first (a queue after a
// failover), and the original then gets the cached answer.
type executions struct {
	ran      map[RequestKey]bool   // an answer with replay=0: that one ran
	unknown  map[RequestKey]bool   // a reply was lost: that one may have run (pending in the counter)
	firstRep map[RequestKey]uint32 // else the first replay=1 answer sent stands for the run (a lost send)
	// repSpan is, for those, from the first replay=1 answer's start to the
	// last one's end: the run was one of their lost sends, which one the
	// history cannot say (the first sent need not be the first to reach
	// Redis), so the counter places it anywhere in that span.
	repSpan map[RequestKey][2]time.Duration
	// merged: for a system whose answers do not say which one ran
	// (answersSayReplay false), the answers of one request that move or
	// need the counter (ACCEPTED, SOLD_OUT) stand for one run, by code.
	merged map[mergeKey]mergedRun
}

// mergeKey is one request's answers of one code.
type mergeKey struct {
	key  RequestKey
	code int16
}

// mergedRun is the one run a request's answers of one code stand for,
// when the answers do not say which of them ran: it ran after the
// request's first send started (call) and before the first of those
// answers came back (ret); remaining is the count they all carried, -1
// when they differ or carry none.
type mergedRun struct {
	first     uint32 // the operation that stands for it
	call, ret time.Duration
	remaining int64
}

func executionsOf(f *Facts) executions {
	e := executions{ran: map[RequestKey]bool{}, unknown: map[RequestKey]bool{}, firstRep: map[RequestKey]uint32{}, repSpan: map[RequestKey][2]time.Duration{}}
	if !answersSayReplay(f) {
		e.merged = mergedRuns(f)
	}
	for _, o := range f.all() {
		if !o.Kind.IsReserve() || o.Outcome < 0 && o.Outcome != history.OutcomeUnknown {
			continue
		}
		k := RequestKey{o.Bucket, o.Req}
		switch {
		case o.Outcome == history.OutcomeUnknown:
			e.unknown[k] = true
		case stateless(lua.ReserveCode(o.Outcome)):
		case !o.Replay():
			e.ran[k] = true
		default:
			sp, ok := e.repSpan[k]
			if !ok || o.Start < sp[0] {
				e.firstRep[k] = o.ID
			}
			if !ok {
				sp = [2]time.Duration{o.Start, o.End}
			}
			e.repSpan[k] = [2]time.Duration{min(sp[0], o.Start), max(sp[1], o.End)}
		}
	}
	return e
}

// mergedRuns are the runs of the requests of a system whose answers do
// not say which one ran (see executions.merged).
func mergedRuns(f *Facts) map[mergeKey]mergedRun {
	firstSend := map[RequestKey]time.Duration{}
	for _, o := range f.all() {
		if o.Kind.IsReserve() {
			k := RequestKey{o.Bucket, o.Req}
			if t, ok := firstSend[k]; !ok || o.Start < t {
				firstSend[k] = o.Start
			}
		}
	}
	runs := map[mergeKey]mergedRun{}
	for _, o := range f.all() {
		code := lua.ReserveCode(o.Outcome)
		if !o.Kind.IsReserve() || o.Outcome < 0 || code != lua.Accepted && code != lua.SoldOut {
			continue
		}
		rem := int64(-1)
		if n, ok := o.RemainingOf(); ok {
			rem = int64(n)
		}
		k := RequestKey{o.Bucket, o.Req}
		mk := mergeKey{k, int16(o.Outcome)}
		r, ok := runs[mk]
		if !ok {
			runs[mk] = mergedRun{first: o.ID, call: firstSend[k], ret: o.End, remaining: rem}
			continue
		}
		r.ret = min(r.ret, o.End)
		if r.remaining != rem {
			r.remaining = -1
		}
		runs[mk] = r
	}
	return runs
}

// counts reports whether reserve operation o's answer is its request's
// execution (see executions).
func (e executions) counts(o *history.Op) bool {
	if !o.Replay() {
		return true
	}
	k := RequestKey{o.Bucket, o.Req}
	return !e.ran[k] && !e.unknown[k] && e.firstRep[k] == o.ID
}

// assignRows gives each operation of a partition the drawing's row
// (porcupine's ClientId) of the first row free at its call.
func assignRows(ops []porcupine.Operation) {
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var busyUntil []int64
	for i := range ops {
		row := slices.IndexFunc(busyUntil, func(t int64) bool { return t < ops[i].Call })
		if row < 0 {
			row = len(busyUntil)
			busyUntil = append(busyUntil, 0)
		}
		busyUntil[row] = ops[i].Return
		ops[i].ClientId = row
	}
}

// judgeLinearizability checks every partition within linBudget.
func judgeLinearizability(f *Facts) Verdict {
	began := time.Now()
	parts, sc, why := linPartitions(f)
	total, lost := sc.ops, sc.lost
	var users, buckets, checked, checkedOps int
	var illegal []linPartition
	var unchecked []linPartition
	largeLeft := make([]int, len(parts)) // partitions of largePartition operations or more from i on
	for i := len(parts) - 1; i >= 0; i-- {
		if i+1 < len(parts) {
			largeLeft[i] = largeLeft[i+1]
		}
		if len(parts[i].ops) >= largePartition {
			largeLeft[i]++
		}
	}
	for i, p := range parts {
		if strings.HasPrefix(p.name, "user ") {
			users++
		} else {
			buckets++
		}
		left := linBudget - time.Since(began)
		if left <= 0 {
			unchecked = append(unchecked, p)
			continue
		}
		if large := largeLeft[i]; large > 1 && len(p.ops) >= largePartition {
			left /= time.Duration(large) // one slow partition does not starve the others
		}
		switch checkPartition(p, left) {
		case porcupine.Ok:
			checked++
			checkedOps += len(p.ops)
		case porcupine.Illegal:
			checked++
			checkedOps += len(p.ops)
			illegal = append(illegal, p)
		default:
			unchecked = append(unchecked, p)
		}
	}
	ev := map[string]any{"operations": total, "user_partitions": users, "bucket_partitions": buckets,
		"checked_partitions": checked, "checked_operations": checkedOps, "unknown_operations": lost.ran + lost.neverRan + lost.pending,
		"unknown_ran": lost.ran, "unknown_never_ran": lost.neverRan,
		"violating_partitions": len(illegal), "budget_s": linBudget.Seconds()}
	if why != "" {
		ev["counters_not_checked"] = why
	}
	if sc.pipelineReleases > 0 {
		ev["pipeline_releases"] = sc.pipelineReleases
	}
	if sc.unfollowed > 0 {
		ev["users_not_followed"] = sc.unfollowed
	}
	scope := fmt.Sprintf("%d operations in %d user and %d bucket partitions", total, users, buckets)
	if sc.pipelineReleases > 0 {
		scope += fmt.Sprintf(", %d of them the pipeline's releases", sc.pipelineReleases)
	}
	if sc.unfollowed > 0 {
		scope += fmt.Sprintf("; %d user(s) not followed: the pipeline released a reservation of theirs no request of the history is known to have made", sc.unfollowed)
	}
	if why != "" {
		scope += " (counters not checked: " + why + ")"
	}
	if len(illegal) > 0 {
		smallest := illegal[0] // parts are sorted smallest first
		names := make([]string, 0, min(len(illegal), maxListed))
		for _, p := range illegal[:min(len(illegal), maxListed)] {
			names = append(names, p.name)
		}
		ev["violating"] = names
		ev["drawn_partition"] = smallest.name
		detail := fmt.Sprintf("%d partition(s) whose answers no order explains: %s", len(illegal), strings.Join(names, ", "))
		res, info := porcupine.CheckOperationsVerbose(smallest.model, smallest.ops, max(linBudget-time.Since(began), time.Second))
		if res == porcupine.Illegal {
			if op, ok := unexplained(smallest.ops, info); ok {
				d := fmt.Sprintf("%s (%s)", smallest.model.DescribeOperation(op.Input, op.Output), op.Metadata)
				ev["unexplained"] = d
				detail += fmt.Sprintf("; smallest, %s (%d operations): no order explains %s", smallest.name, len(smallest.ops), d)
			}
			f.memo.linDrawing = &LinDrawing{Partition: smallest.name, model: smallest.model, info: info}
			ev["drawing"] = LinearizabilityFileName
		}
		if len(unchecked) > 0 {
			detail += fmt.Sprintf("; %d partition(s) not checked within %s", len(unchecked), linBudget)
		}
		return Verdict{Failed: true, Detail: detail + " [" + scope + "]", Evidence: ev}
	}
	if len(unchecked) > 0 {
		var names []string
		uncheckedOps := 0
		for _, p := range unchecked {
			uncheckedOps += len(p.ops)
			if len(names) < maxListed {
				names = append(names, fmt.Sprintf("%s (%d operations)", p.name, len(p.ops)))
			}
		}
		ev["not_checked"] = names
		ev["not_checked_operations"] = uncheckedOps
		ev["timed_out"] = true
		return Verdict{Detail: fmt.Sprintf("not checked within %s: %d of %d partitions checked (%d operations), those linearizable; %d partition(s) with %d operations not checked: %s [%s]",
			fmtBudget(linBudget), checked, len(parts), checkedOps, len(unchecked), uncheckedOps, strings.Join(names, ", "), scope), Evidence: ev}
	}
	return Verdict{Detail: fmt.Sprintf("every answer explained by an order that respects real time: %s; %s", scope, lost), Evidence: ev}
}

// checkPartition checks one partition within budget. A lost reply may
// never have taken effect, so the answers explained without the lost
// replies are explained with them (each placed last, never taking
// effect): that is tried first, since the lost replies make the search
// branch where the answers do not (a lost reserve near a sell-out can
// explain a SOLD_OUT one unit early, and porcupine then tries every order
// of the sell-out's answers). Only answers it cannot explain so are
// searched with the lost replies.
func checkPartition(p linPartition, budget time.Duration) porcupine.CheckResult {
	if r, ok := checkSequential(p); ok {
		return r
	}
	if orderWitness(p) {
		return porcupine.Ok
	}
	began := time.Now()
	known := make([]porcupine.Operation, 0, len(p.ops))
	for _, op := range p.ops {
		if !op.Output.(linOutput).unknown {
			known = append(known, op)
		}
	}
	if p.stock >= 0 && bucketWitness(p.stock, known) {
		return porcupine.Ok
	}
	if len(known) < len(p.ops) {
		if porcupine.CheckOperationsTimeout(p.model, known, budget) == porcupine.Ok {
			return porcupine.Ok
		}
		if budget -= time.Since(began); budget <= 0 {
			return porcupine.Unknown
		}
	}
	return porcupine.CheckOperationsTimeout(p.model, p.ops, budget)
}

// checkSequential checks a partition whose operations real time orders
// wholly (each returned before the next was called: most users'): that
// order is the only one, so the model is stepped through it, without
// porcupine's search and the goroutine and timer it starts per call,
// which cost more than the check on the 100,000 one-operation partitions
// of a large run. ok is false when real time leaves some order open.
func checkSequential(p linPartition) (porcupine.CheckResult, bool) {
	ops := slices.Clone(p.ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	for i := 1; i < len(ops); i++ {
		if ops[i-1].Return >= ops[i].Call {
			return porcupine.Unknown, false
		}
	}
	if !stepsThrough(p.model, ops) {
		return porcupine.Illegal, true
	}
	return porcupine.Ok, true
}

// orderWitness steps the model through the partition's operations in the
// order their answers came back, then in the order they were called: both
// respect real time (an operation that returned before another was called
// comes first in each). Either explaining every answer is a witness.
// Concurrent replays of one request (a replay storm: one user, 100,000
// operations) are explained so in one pass, where porcupine's search keeps
// a copy of its 100,000-bit set of placed operations per step.
func orderWitness(p linPartition) bool {
	ops := slices.Clone(p.ops)
	for _, by := range []func(a, b porcupine.Operation) int{
		func(a, b porcupine.Operation) int {
			return cmp.Or(cmp.Compare(a.Return, b.Return), cmp.Compare(a.Call, b.Call))
		},
		func(a, b porcupine.Operation) int {
			return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.Return, b.Return))
		},
	} {
		slices.SortStableFunc(ops, by)
		if stepsThrough(p.model, ops) {
			return true
		}
	}
	return false
}

// stepsThrough reports whether model explains ops in the order given.
func stepsThrough(model porcupine.Model, ops []porcupine.Operation) bool {
	state := model.Init()
	for _, op := range ops {
		ok, next := model.Step(state, op.Input, op.Output)
		if !ok {
			return false
		}
		state = next
	}
	return true
}

// bucketWitness looks for one order of a bucket's known answers that
// explains them, placing at each step, of the operations real time lets
// come next, one the counter explains now: first the one whose answer came
// back first (earliest deadline first), then, if that order fails, with
// count-less releases as late as possible (lateReleases). Found, it is a
// witness: the answers are explained. Not found proves nothing; porcupine
// then searches every order. Without counts in the answers (a service, an
// adapter file that maps none) porcupine's search, which tries operations
// in call order, lets the answers that came back later take a sell-out's
// last units and backtracks through every subset of the concurrent ones;
// earliest deadline first is the order that does not. With counts in the
// reserves' answers and none in the pipeline's releases, earliest deadline
// first may place a release before an ACCEPTED whose count needs it after
// (two answers leaving the same count, the release between them);
// releases as late as possible do not.
func bucketWitness(stock int64, ops []porcupine.Operation) bool {
	return bucketOrder(stock, ops, earliestDeadline) || bucketOrder(stock, ops, lateReleases)
}

// A placement rule ranks an operation the counter explains now (a before,
// n after): the lowest rank is placed, the earliest return among equals.
type placementRule func(a, n int64, out linOutput) int

// earliestDeadline ranks every explained operation alike.
func earliestDeadline(int64, int64, linOutput) int { return 0 }

// lateReleases places what leaves the counter as it is first (SOLD_OUT,
// the refusals: placing them never hurts), then a change the answer's own
// count pins down, then a count-less ACCEPTED, and a count-less RELEASED
// (the pipeline's) last, when nothing else can come.
func lateReleases(a, n int64, out linOutput) int {
	switch {
	case n == a:
		return 0
	case out.remaining >= 0:
		return 1
	case n < a:
		return 2
	}
	return 3
}

// bucketOrder is one greedy pass of bucketWitness under rule.
func bucketOrder(stock int64, ops []porcupine.Operation, rule placementRule) bool {
	byCall := slices.Clone(ops)
	slices.SortFunc(byCall, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	rets := make([]int64, len(byCall)) // returns of the operations not placed, as a min-heap
	for i, op := range byCall {
		rets[i] = op.Return
	}
	h := int64Heap(rets)
	heap.Init(&h)
	placed := make(map[int64]int, len(byCall)) // a return placed, not yet removed from the heap
	var pool []porcupine.Operation             // operations real time lets come next
	next, a := 0, stock
	for left := len(byCall); left > 0; left-- {
		for len(h) > 0 && placed[h[0]] > 0 {
			placed[h[0]]--
			heap.Pop(&h)
		}
		for ; next < len(byCall) && byCall[next].Call <= h[0]; next++ {
			pool = append(pool, byCall[next])
		}
		best, bestRank := -1, 0
		var after int64
		for i, op := range pool {
			out := op.Output.(linOutput)
			n, ok := bucketApply(a, op.Input.(linInput), out)
			if !ok {
				continue
			}
			if r := rule(a, n, out); best < 0 || r < bestRank || (r == bestRank && op.Return < pool[best].Return) {
				best, bestRank, after = i, r, n
			}
		}
		if best < 0 {
			return false
		}
		a = after
		placed[pool[best].Return]++
		pool[best] = pool[len(pool)-1]
		pool = pool[:len(pool)-1]
	}
	return true
}

// int64Heap is a min-heap of int64 (container/heap).
type int64Heap []int64

func (h int64Heap) Len() int           { return len(h) }
func (h int64Heap) Less(i, j int) bool { return h[i] < h[j] }
func (h int64Heap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *int64Heap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *int64Heap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func fmtBudget(d time.Duration) string { return fmt.Sprintf("%g s", d.Seconds()) }

// unexplained is the answer no order explains: of the operations outside
// the longest legal prefix porcupine found, the one that returned first.
func unexplained(ops []porcupine.Operation, info porcupine.LinearizationInfo) (porcupine.Operation, bool) {
	parts := info.PartialLinearizations()
	if len(parts) == 0 {
		return porcupine.Operation{}, false
	}
	longest := []int(nil)
	for _, l := range parts[0] {
		if len(l) > len(longest) {
			longest = l
		}
	}
	in := make(map[int]bool, len(longest))
	for _, id := range longest {
		in[id] = true
	}
	best, found := porcupine.Operation{Return: math.MaxInt64}, false
	for i, op := range ops { // porcupine numbers a partition's operations in the order given
		if !in[i] && op.Return < best.Return {
			best, found = op, true
		}
	}
	return best, found
}

// linearizabilityOfLostAcks is H1's ConsequenceOf: "I6" when every
// partition no order explains is the user or the bucket of an
// acknowledged reservation Redis lost (a failover to a replica that never
// got it): the counter and the user's hold went back, which no order
// explains, and I6 already names the loss.
func linearizabilityOfLostAcks(f *Facts, v Verdict) string {
	names, _ := v.Evidence["violating"].([]string)
	n, _ := v.Evidence["violating_partitions"].(int)
	if len(names) == 0 || len(names) < n {
		return ""
	}
	lost := lostAcks(f)
	if len(lost) == 0 {
		return ""
	}
	isLost := make(map[string]bool, len(lost))
	for _, rid := range lost {
		isLost[rid] = true
	}
	touched := map[string]bool{}
	for _, o := range f.all() {
		if o.Accepted() && isLost[o.RID] {
			touched["user "+o.UserID()] = true
			touched[fmt.Sprintf("bucket %d", o.Bucket)] = true
		}
	}
	for _, name := range names {
		if !touched[name] {
			return ""
		}
	}
	return "I6"
}

// vacuousLinearizability: nothing was answered.
func vacuousLinearizability(_ *Facts, v Verdict) string {
	if n, _ := v.Evidence["operations"].(int); n == 0 {
		return "no operation was answered"
	}
	if t, _ := v.Evidence["timed_out"].(bool); t {
		return v.Detail
	}
	return ""
}

// answersSayReplay reports whether the system under test's answers say
// which answer of a re-sent request ran it (replay=0) and which returned
// the cached result (replay=1): the reference scripts do; an adapter
// file's (Preflight set) and a service's (Answers set) answers do not.
func answersSayReplay(f *Facts) bool { return f.Preflight == nil && f.Answers == nil }
