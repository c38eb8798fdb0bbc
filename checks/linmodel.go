package checks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"

	"seckill-harness/history"
	"seckill-harness/lua"
)

// The model of the sale the linearizability check (linearizability.go)
// holds the history to, in two partitions that each stand alone:
//
//   - per user, the user's holds: which reservation (by the request index
//     that made it) the one-per-user marker points at, which reservations
//     exist and which are released, and the answer cached for each request
//     id. Reserve: a cached request answers its cached answer (a replay);
//     else a user holding a reservation is answered USER_ALREADY_RESERVED
//     with that reservation; else ACCEPTED (a new hold), or a refusal
//     (SOLD_OUT, the window and state refusals) the stock decides, which
//     the user's partition cannot see. Release: NOT_FOUND for a reservation
//     never made, ALREADY_RELEASED for a released one, RELEASED for a live
//     one (the marker is cleared when it points at it); a release re-sent
//     after a lost reply may answer ALREADY_RELEASED for its own first
//     send's release. Query (what became
//     of a request, asked without re-sending it): the answer cached for the
//     request, or NOT_FOUND when none is; a release changes no request's
//     answer, so a query after it still reads ACCEPTED.
//   - per bucket, the stock counter: ACCEPTED takes a unit (there must be
//     one), SOLD_OUT needs none left, RELEASED gives one back; the count
//     ACCEPTED and RELEASED answers carry (Op.Remaining) must be the one
//     left. Replayed answers are the first answer's, judged where it was
//     given: left out, as are the answers that only read the count
//     (countsInBucket).
//
// The pipeline's compensations (the release stage's and the expiry
// checker's, added to the history by WithPipelineReleases) are releases
// of the reservation they name, in both partitions; its transitions
// change neither holds nor stock (a release fenced past RESERVED answers
// NOT_COMPENSATABLE, which a live reservation allows).
//
// An operation whose reply was lost (UNKNOWN) may have taken effect at
// any time after its start, with any answer: its return is placed after
// the history's end and its step is every step the model allows.
// Answers that change no state and that another partition or check
// judges (REQUEST_ID_CONFLICT: another user's request; INVARIANT_VIOLATION,
// CONFIG_MISSING, BAD_ARGUMENT) are allowed in any state.

// linInput is one operation's call in the model.
type linInput struct {
	release bool
	// retried: a release re-sent after a send whose reply was lost: that
	// send may have released the reservation itself, so the re-send's
	// ALREADY_RELEASED may be about its own release.
	retried bool
	query   bool   // a status query: reads the request's cached answer
	req     uint32 // the request id's index (a release: the reservation's request)
	user    uint32
}

// reserve reports whether the call is a reserve.
func (in linInput) reserve() bool { return !in.release && !in.query }

// linOutput is one operation's answer in the model.
type linOutput struct {
	unknown   bool  // the reply was lost: any answer
	code      int16 // reserve and query: lua.ReserveCode (a query: queryNotFound when none); release: lua.CompensateCode
	held      int64 // USER_ALREADY_RESERVED: the request index of the held reservation, -1 when unmapped
	rid       string
	remaining int64 // the count the answer carried, -1 when none
	replay    bool
}

// queryNotFound is a query's code when no answer is on record.
const queryNotFound = int16(history.OutcomeNotFound)

// noHold is userState.hold when the user holds nothing.
const noHold = -1

// anyRefusal is the cached code of a request whose reply was lost and that
// the model let be refused: any cached refusal replays it.
const anyRefusal int16 = -1

// userState is one user's holds; comparable with == (sets as sorted,
// comma-separated lists), so porcupine can cache states.
type userState struct {
	hold     int64  // request index of the reservation the marker points at, noHold when none
	created  string // request indices whose reservation exists (live or released)
	released string // ... of those released
	cache    string // "req:code:held;" per cached request, sorted
	// keep are the requests of the partition sent more than once: only
	// their answers are cached (the others are never asked again, and a
	// cache of thousands of requests would slow every step). Shared by
	// every state of one partition, so == still compares the rest.
	keep *repeatedSet
}

// repeatedSet is the requests of a partition sent more than once.
type repeatedSet map[uint32]bool

func (r *repeatedSet) has(req uint32) bool { return r != nil && (*r)[req] }

func setHas(set string, n int64) bool {
	return strings.Contains(","+set, ","+strconv.FormatInt(n, 10)+",")
}

func setAdd(set string, n int64) string {
	if setHas(set, n) {
		return set
	}
	var items []int64
	for _, s := range strings.Split(strings.TrimSuffix(set, ","), ",") {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			items = append(items, v)
		}
	}
	items = append(items, n)
	slices.Sort(items)
	var b strings.Builder
	for _, v := range items {
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte(',')
	}
	return b.String()
}

// cached returns the answer cached for request req.
func (s userState) cached(req uint32) (code int16, held int64, ok bool) {
	key := ";" + strconv.FormatUint(uint64(req), 10) + ":"
	i := strings.Index(";"+s.cache, key)
	if i < 0 {
		return 0, 0, false
	}
	rest := s.cache[i+len(key)-1:]
	rest = rest[:strings.IndexByte(rest, ';')]
	c, h, _ := strings.Cut(rest, ":")
	ci, _ := strconv.ParseInt(c, 10, 16)
	hi, _ := strconv.ParseInt(h, 10, 64)
	return int16(ci), hi, true
}

func (s userState) remember(req uint32, code int16, held int64) userState {
	if !s.keep.has(req) {
		return s // never asked again: nothing can replay it
	}
	entries := strings.Split(strings.TrimSuffix(s.cache, ";"), ";")
	if s.cache == "" {
		entries = nil
	}
	entries = append(entries, fmt.Sprintf("%d:%d:%d", req, code, held))
	slices.Sort(entries)
	s.cache = strings.Join(entries, ";") + ";"
	return s
}

// remembered reports whether reserve.lua caches an answer of code: the
// final answers (ACCEPTED, USER_ALREADY_RESERVED, the version, window,
// state and sold-out refusals).
func remembered(code lua.ReserveCode) bool {
	switch code {
	case lua.Accepted, lua.UserAlreadyReserved, lua.VersionMismatch, lua.ActivityNotStarted,
		lua.ActivityEnded, lua.ActivityNotActive, lua.SoldOut:
		return true
	}
	return false
}

// stateless reports whether a reserve answer of code changes no state and
// is judged elsewhere (allowed in any state of a partition).
func stateless(code lua.ReserveCode) bool {
	switch code {
	case lua.RequestIDConflict, lua.InvariantViolation, lua.ConfigMissing, lua.BadArgument,
		lua.ReservationIDConflict, lua.DuplicateRequest:
		return true
	}
	return false
}

// userStep is every next state of s after in answered out (none: the
// answer is not explained in s).
func userStep(s userState, in linInput, out linOutput) []userState {
	if in.release {
		return userRelease(s, in, out)
	}
	if in.query {
		if userQueryExplained(s, in, out) {
			return []userState{s}
		}
		return nil
	}
	code := lua.ReserveCode(out.code)
	if !out.unknown && stateless(code) {
		return []userState{s}
	}
	if c, h, ok := s.cached(in.req); ok {
		refusal := c == anyRefusal && code != lua.Accepted && code != lua.UserAlreadyReserved && remembered(code)
		if out.unknown || refusal || (lua.ReserveCode(c) == code && (code != lua.UserAlreadyReserved || out.held < 0 || out.held == h)) {
			return []userState{s}
		}
		return nil
	}
	var next []userState
	if out.unknown {
		next = append(next, s) // not run, or refused without a trace
	}
	if s.hold != noHold {
		if out.unknown || (code == lua.UserAlreadyReserved && (out.held < 0 || out.held == s.hold)) {
			next = append(next, s.remember(in.req, int16(lua.UserAlreadyReserved), s.hold))
		}
		return next
	}
	r := int64(in.req)
	switch {
	case out.unknown:
		n := s
		n.hold, n.created = r, setAdd(s.created, r)
		next = append(next, n.remember(in.req, int16(lua.Accepted), r))
		next = append(next, s.remember(in.req, anyRefusal, 0))
	case code == lua.Accepted && !setHas(s.created, r):
		n := s
		n.hold, n.created = r, setAdd(s.created, r)
		next = append(next, n.remember(in.req, int16(lua.Accepted), r))
	case code != lua.Accepted && code != lua.UserAlreadyReserved && remembered(code):
		next = append(next, s.remember(in.req, out.code, 0))
	}
	return next
}

// userQueryExplained reports whether a query answered out is the answer
// on record for its request in s: NOT_FOUND when none is, else the cached
// code (any cached refusal for a lost reply the model let be refused; for
// USER_ALREADY_RESERVED the same held reservation when the answer names
// one the history knows). The stateless answers (REQUEST_ID_CONFLICT for
// another user's request id, …) are explained in any state, as a
// reserve's are.
func userQueryExplained(s userState, in linInput, out linOutput) bool {
	if out.code >= 0 && stateless(lua.ReserveCode(out.code)) {
		return true // another user's request id, a refusal judged elsewhere
	}
	c, h, ok := s.cached(in.req)
	switch {
	case !ok:
		return out.code == queryNotFound
	case out.code == queryNotFound:
		return false
	case c == anyRefusal:
		code := lua.ReserveCode(out.code)
		return code != lua.Accepted && code != lua.UserAlreadyReserved && remembered(code)
	}
	return c == out.code && (lua.ReserveCode(c) != lua.UserAlreadyReserved || out.held < 0 || out.held == h)
}

func userRelease(s userState, in linInput, out linOutput) []userState {
	r := int64(in.req)
	code := lua.CompensateCode(out.code)
	live := setHas(s.created, r) && !setHas(s.released, r)
	released := func() userState {
		n := s
		n.released = setAdd(s.released, r)
		if n.hold == r {
			n.hold = noHold
		}
		return n
	}
	switch {
	case out.unknown:
		if live {
			return []userState{s, released()}
		}
		return []userState{s}
	case code == lua.CompensateInvariantViolation, code == lua.CompensateIDConflict:
		return []userState{s}
	case code == lua.CompensateReleased && live:
		return []userState{released()}
	case code == lua.CompensateAlreadyReleased && setHas(s.released, r):
		return []userState{s}
	case code == lua.CompensateAlreadyReleased && in.retried && live:
		return []userState{released()} // its own lost send released it
	case code == lua.CompensateNotFound && !setHas(s.created, r):
		return []userState{s}
	case code == lua.CompensateNotCompensatable && live:
		// the fence did not take (a status past RESERVED): nothing changed
		return []userState{s}
	}
	return nil
}

// bucketApply is the count of the bucket after a known answer out to in,
// from available units a; false when the answer is not explained.
func bucketApply(a int64, in linInput, out linOutput) (int64, bool) {
	counts := out.remaining < 0 || out.remaining == a
	if in.release {
		switch lua.CompensateCode(out.code) {
		case lua.CompensateReleased:
			return a + 1, out.remaining < 0 || out.remaining == a+1
		case lua.CompensateAlreadyReleased, lua.CompensateNotCompensatable:
			return a, counts
		}
		return a, true // NOT_FOUND and the refusals carry no count
	}
	switch code := lua.ReserveCode(out.code); {
	case code == lua.Accepted:
		return a - 1, a > 0 && (out.remaining < 0 || out.remaining == a-1)
	case code == lua.SoldOut:
		return a, a <= 0
	case stateless(code):
		return a, true
	}
	return a, counts // USER_ALREADY_RESERVED and the cached refusals carry the count
}

// userModel is the model of one user's partition; keep are its requests
// sent more than once.
func userModel(keep repeatedSet) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{userState{hold: noHold, keep: &keep}} },
		Step: func(state, input, output any) []any {
			var out []any
			for _, n := range userStep(state.(userState), input.(linInput), output.(linOutput)) {
				out = append(out, n)
			}
			return out
		},
		DescribeOperation: describeLinOp,
		DescribeState: func(state any) string {
			s := state.(userState)
			hold := "nothing"
			if s.hold != noHold {
				hold = history.RequestID(uint32(s.hold)) + "'s reservation"
			}
			return fmt.Sprintf("holds %s; reservations of %s; released %s", hold, reqList(s.created), reqList(s.released))
		},
	}
	return nm.ToModel()
}

// bucketState is one bucket's counter: the available units, and the
// operations whose reply was lost that have not taken effect yet (a lost
// reserve may take a unit, a lost release may give one back, at any later
// moment or never). Keeping them pending, rather than placing each lost
// reply at every point of the history in turn, keeps the search linear.
type bucketState struct {
	available          int64
	reserves, releases int32 // lost replies still pending
}

// bucketNext is every next state of s after in answered out: before a
// known answer, any of the pending lost replies may take effect.
func bucketNext(s bucketState, in linInput, out linOutput, next []bucketState) []bucketState {
	if out.unknown {
		if in.release {
			s.releases++
		} else {
			s.reserves++
		}
		return append(next, s)
	}
	for x := int32(0); x <= s.reserves; x++ {
		for y := int32(0); y <= s.releases; y++ {
			a := s.available - int64(x) + int64(y)
			if a < 0 {
				continue
			}
			if n, ok := bucketApply(a, in, out); ok {
				next = append(next, bucketState{available: n, reserves: s.reserves - x, releases: s.releases - y})
			}
		}
	}
	return next
}

// bucketModel is the model of one bucket's stock counter, from initial
// available units. Its state is a bucketState, or a []bucketState (sorted,
// distinct) when lost replies leave several counts possible; a step that
// the answer does not explain allocates nothing, since porcupine tries
// every pending operation at each step.
func bucketModel(initial int64) porcupine.Model {
	states := func(state any) []bucketState {
		if one, ok := state.(bucketState); ok {
			return []bucketState{one}
		}
		return state.([]bucketState)
	}
	return porcupine.Model{
		Init: func() any { return bucketState{available: initial} },
		Step: func(state, input, output any) (bool, any) {
			in, out := input.(linInput), output.(linOutput)
			if one, ok := state.(bucketState); ok && !out.unknown && one.reserves == 0 && one.releases == 0 {
				n, ok := bucketApply(one.available, in, out)
				if !ok {
					return false, nil
				}
				return true, bucketState{available: n}
			}
			var next []bucketState
			for _, s := range states(state) {
				next = bucketNext(s, in, out, next)
			}
			switch next = uniqueStates(next); len(next) {
			case 0:
				return false, nil
			case 1:
				return true, next[0]
			}
			return true, next
		},
		Equal: func(a, b any) bool { return slices.Equal(states(a), states(b)) },
		Hash: func(state any) uint64 {
			var h uint64 = 14695981039346656037
			for _, s := range states(state) {
				h = (h ^ uint64(s.available)) * 1099511628211
				h = (h ^ uint64(s.reserves)<<32 ^ uint64(s.releases)) * 1099511628211
			}
			return h
		},
		DescribeOperation: describeLinOp,
		DescribeState: func(state any) string {
			var ds []string
			for _, s := range states(state) {
				d := fmt.Sprintf("available %d", s.available)
				if s.reserves+s.releases > 0 {
					d += fmt.Sprintf(" (lost replies pending: %d reserves, %d releases)", s.reserves, s.releases)
				}
				ds = append(ds, d)
			}
			return strings.Join(ds, " or ")
		},
	}
}

// uniqueStates sorts states and drops repeats.
func uniqueStates(states []bucketState) []bucketState {
	slices.SortFunc(states, func(a, b bucketState) int {
		if a.available != b.available {
			return cmpInt(a.available, b.available)
		}
		if a.reserves != b.reserves {
			return cmpInt(int64(a.reserves), int64(b.reserves))
		}
		return cmpInt(int64(a.releases), int64(b.releases))
	})
	return undominated(slices.Compact(states))
}

// dominates reports whether every future a bucket in state b can explain,
// one in state a can too: a holds more lost replies pending and, had the
// extra ones taken effect, would be b (a pending reply may take effect
// before any later answer, or never).
func (a bucketState) dominates(b bucketState) bool {
	k, m := a.reserves-b.reserves, a.releases-b.releases
	return k >= 0 && m >= 0 && (k > 0 || m > 0) && a.available-int64(k)+int64(m) == b.available
}

// undominated drops the states another of states dominates: they add
// nothing the search could use, and keeping them makes the orders of a
// sell-out's answers differ in state where they do not in substance, so
// porcupine's cache cannot merge them and the search grows exponentially
// (a single lost reply near a sell-out did that).
func undominated(states []bucketState) []bucketState {
	if len(states) < 2 {
		return states
	}
	out := states[:0:0]
	for i, b := range states {
		dominated := false
		for j, a := range states {
			if i != j && a.dominates(b) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, b)
		}
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func reqList(set string) string {
	if set == "" {
		return "none"
	}
	var ids []string
	for _, s := range strings.Split(strings.TrimSuffix(set, ","), ",") {
		if v, err := strconv.ParseUint(s, 10, 32); err == nil {
			ids = append(ids, history.RequestID(uint32(v)))
		}
	}
	return strings.Join(ids, " ")
}

// describeLinOp is an operation as the drawing shows it.
func describeLinOp(input, output any) string {
	in, out := input.(linInput), output.(linOutput)
	var b strings.Builder
	switch {
	case in.release:
		fmt.Fprintf(&b, "release(%s of %s)", history.RequestID(in.req), history.UserID(in.user))
	case in.query:
		fmt.Fprintf(&b, "query(%s, %s)", history.UserID(in.user), history.RequestID(in.req))
	default:
		fmt.Fprintf(&b, "reserve(%s, %s)", history.UserID(in.user), history.RequestID(in.req))
	}
	b.WriteString(" → ")
	switch {
	case out.unknown:
		b.WriteString("UNKNOWN")
	case in.release:
		b.WriteString(lua.CompensateCode(out.code).String())
	case out.code == queryNotFound:
		b.WriteString("NOT_FOUND")
	default:
		b.WriteString(lua.ReserveCode(out.code).String())
		if out.held >= 0 && lua.ReserveCode(out.code) == lua.UserAlreadyReserved {
			fmt.Fprintf(&b, " (%s's)", history.RequestID(uint32(out.held)))
		}
	}
	if out.remaining >= 0 {
		fmt.Fprintf(&b, " remaining=%d", out.remaining)
	}
	if out.replay {
		b.WriteString(" replay")
	}
	return b.String()
}
