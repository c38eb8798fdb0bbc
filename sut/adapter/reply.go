package adapter

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"seckill-harness/lua"
)

// Outcome is what a reply means to the harness: one of the reserve or
// release outcome names.
type Outcome string

// The reserve outcomes every team's script can answer. DUPLICATE_REQUEST
// ("this request id was seen before", without the first answer) is no
// code of the reference contract: it is lua.DuplicateRequest, which the
// idempotency check (I5) counts as a violation. ERROR (no business answer)
// has no code at all.
const (
	Accepted            Outcome = "ACCEPTED"
	SoldOut             Outcome = "SOLD_OUT"
	UserAlreadyReserved Outcome = "USER_ALREADY_RESERVED"
	DuplicateRequest    Outcome = "DUPLICATE_REQUEST"
	Error               Outcome = "ERROR"
)

// Released is the release outcome that gave a unit back.
const Released Outcome = "RELEASED"

// reserveOutcomes are the names a reserve reply may map to: the five
// above and every other code of the contract (lua.ReserveCodes), so the
// reference scripts map one to one.
func reserveOutcomes() []Outcome {
	out := []Outcome{Accepted, SoldOut, UserAlreadyReserved, DuplicateRequest, Error}
	for _, c := range lua.ReserveCodes() {
		if o := Outcome(c.String()); !hasOutcome(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// releaseOutcomes are the names a release reply may map to: the
// compensate codes of the contract and ERROR.
func releaseOutcomes() []Outcome {
	out := []Outcome{Error}
	for c := lua.CompensateReleased; c <= lua.CompensateIDConflict; c++ {
		out = append(out, Outcome(c.String()))
	}
	return out
}

// ReserveCode is the code of a reserve outcome (lua.DuplicateRequest for
// DUPLICATE_REQUEST); false for ERROR, which has none.
func (o Outcome) ReserveCode() (lua.ReserveCode, bool) {
	for _, c := range lua.ReserveCodes() {
		if c.String() == string(o) {
			return c, true
		}
	}
	return 0, false
}

// matcher is one reply value of the mapping: a text, an integer interval
// or nil.
type matcher struct {
	outcome Outcome
	written string
	line    int
	isNil   bool
	numeric bool
	lo, hi  int64
}

func (m matcher) String() string {
	return fmt.Sprintf("%q (%s, line %d)", m.written, m.outcome, m.line)
}

// parseMatcher reads one value of an outcome's list.
func parseMatcher(o Outcome, s string, line int) (matcher, error) {
	m := matcher{outcome: o, written: s, line: line}
	t := strings.TrimSpace(s)
	if t == "nil" {
		m.isNil = true
		return m, nil
	}
	for _, op := range []string{">=", "<=", ">", "<"} {
		if !strings.HasPrefix(t, op) {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(t[len(op):]), 10, 64)
		if err != nil {
			return m, fmt.Errorf("%q: a comparison needs an integer (>0, >=1, <0, <=-1)", s)
		}
		m.numeric, m.lo, m.hi = true, math.MinInt64, math.MaxInt64
		switch op {
		case ">=":
			m.lo = n
		case "<=":
			m.hi = n
		case ">":
			m.lo = n + 1
		case "<":
			m.hi = n - 1
		}
		return m, nil
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		m.numeric, m.lo, m.hi = true, n, n
	}
	return m, nil
}

// overlaps reports whether a reply value could match both.
func (m matcher) overlaps(o matcher) bool {
	switch {
	case m.isNil || o.isNil:
		return m.isNil && o.isNil
	case m.numeric && o.numeric:
		return m.lo <= o.hi && o.lo <= m.hi
	case m.numeric != o.numeric:
		return false
	}
	return m.written == o.written
}

func (m matcher) matches(v any) bool {
	switch x := v.(type) {
	case nil:
		return m.isNil
	case int64:
		return m.numeric && m.lo <= x && x <= m.hi
	case string:
		if m.numeric {
			n, err := strconv.ParseInt(x, 10, 64)
			return err == nil && m.lo <= n && n <= m.hi
		}
		return !m.isNil && m.written == x
	}
	return false
}

// replyMap is a Reply compiled.
type replyMap struct {
	code, rid int
	matchers  []matcher
	otherwise Outcome
}

// compileReply checks r (outcome names among allowed, values parsable, no
// value mapped twice, required outcomes present) and compiles it.
func (f *File) compileReply(r *Reply, path string, allowed, need []Outcome) (replyMap, error) {
	rm := replyMap{code: r.Code, rid: r.ReservationID, otherwise: Outcome(r.Otherwise)}
	if r.Code < 0 || r.ReservationID < 0 {
		return rm, f.errAt(path+".code", "an element number is 1-based (0 or absent: the whole reply): use a positive number")
	}
	if r.Code > 0 && r.Code == r.ReservationID {
		return rm, f.errAt(path+".reservation_id", "the reservation id and the code are both element %d: they are different elements of the reply", r.Code)
	}
	if r.Otherwise != "" && !hasOutcome(allowed, Outcome(r.Otherwise)) {
		return rm, f.errAt(path+".otherwise", "unknown outcome %q: use one of %s", r.Otherwise, outcomeList(allowed))
	}
	names := make([]string, 0, len(r.Outcomes))
	for n := range r.Outcomes {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return f.line(path+".outcomes."+names[i]) < f.line(path+".outcomes."+names[j]) })
	for _, n := range names {
		p := path + ".outcomes." + n
		if !hasOutcome(allowed, Outcome(n)) {
			return rm, f.errAt(p, "unknown outcome %q: use one of %s", n, outcomeList(allowed))
		}
		if len(r.Outcomes[n]) == 0 {
			return rm, f.errAt(p, "outcome %s lists no reply value: give the values that mean it, or remove it", n)
		}
		for i, s := range r.Outcomes[n] {
			vp := fmt.Sprintf("%s[%d]", p, i+1)
			m, err := parseMatcher(Outcome(n), s, f.line(vp))
			if err != nil {
				return rm, f.errAt(vp, "%v", err)
			}
			for _, prev := range rm.matchers {
				if prev.overlaps(m) {
					return rm, f.errAt(vp, "duplicate mapping: reply value %q of %s also matches %s: a reply value may mean one outcome only; remove one", s, n, prev)
				}
			}
			rm.matchers = append(rm.matchers, m)
		}
	}
	for _, o := range need {
		if _, ok := r.Outcomes[string(o)]; !ok {
			return rm, f.errAt(path+".outcomes", "outcome %s is not mapped: add %s: [the reply value(s) that mean it]", o, o)
		}
	}
	return rm, nil
}

func hasOutcome(list []Outcome, o Outcome) bool {
	for _, x := range list {
		if x == o {
			return true
		}
	}
	return false
}

func outcomeList(list []Outcome) string {
	s := make([]string, len(list))
	for i, o := range list {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// UnmappedReplyError is a reply the mapping cannot decode: a shape it did
// not declare (not an array, too short) or a value no outcome lists and no
// otherwise: covers.
type UnmappedReplyError struct {
	Reply  any
	Reason string
}

func (e *UnmappedReplyError) Error() string {
	return fmt.Sprintf("reply %s: %s", formatReply(e.Reply), e.Reason)
}

func formatReply(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatReply(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// decode maps reply (as go-redis returns it: int64, string, []any, nil).
// The reservation id is "" when the mapping takes it from the call.
func (rm replyMap) decode(reply any) (Outcome, string, error) {
	v := reply
	arr, isArr := reply.([]any)
	if rm.code > 0 || rm.rid > 0 {
		need := max(rm.code, rm.rid)
		if !isArr || len(arr) < need {
			return "", "", &UnmappedReplyError{reply, fmt.Sprintf("want an array of at least %d elements", need)}
		}
	}
	if rm.code > 0 {
		v = arr[rm.code-1]
	} else if isArr {
		return "", "", &UnmappedReplyError{reply, "an array, but the mapping reads the whole reply: set reply.code to the element that holds the outcome"}
	}
	out := rm.otherwise
	for _, m := range rm.matchers {
		if m.matches(v) {
			out = m.outcome
			break
		}
	}
	if out == "" {
		return "", "", &UnmappedReplyError{reply, fmt.Sprintf("value %s is mapped to no outcome and reply.otherwise is not set", formatReply(v))}
	}
	rid := ""
	if rm.rid > 0 {
		switch x := arr[rm.rid-1].(type) {
		case string:
			rid = x
		case int64:
			rid = strconv.FormatInt(x, 10)
		}
	}
	return out, rid, nil
}
