package checks

import (
	"time"

	"seckill-harness/lua"
)

// doubleAckOfReusedRequests is I4's ConsequenceOf: "I5" when every one-
// per-user violation disappears once the ACCEPTED answers I5 finds given
// to a reused request id are left out (reusedRequestAcks). A system that
// answers another user's reuse of a request id with the first user's
// ACCEPTED tells the second user it holds a reservation it never made;
// when that user then reserves for real, I4 sees two acknowledgements:
// the same defect as I5's, seen twice. A violation that stays without
// those answers (two reservations of the user's own, or two live records
// of one user) is I4's own: no consequence.
func doubleAckOfReusedRequests(f *Facts, v Verdict) string {
	skip := reusedRequestAcks(f)
	if len(skip) == 0 {
		return ""
	}
	if judgeI4Without(f, skip).Failed {
		return ""
	}
	return "I5"
}

// reusedRequestAcks are the operations (by id) answered ACCEPTED with
// another user's reservation, on a request id I5 finds answered for real
// to more than one user (judgeI5Group's "users got a real answer"): the
// answer of another user's request. A reservation's user is its record's
// when one was read, else the user it was acknowledged to first.
func reusedRequestAcks(f *Facts) map[uint32]bool {
	type first struct {
		user uint32
		end  time.Duration
	}
	owner := map[string]first{} // reservation id -> the user it was first acknowledged to
	realUsers := map[RequestKey]map[uint32]bool{}
	for _, o := range f.all() {
		if !i5Answers(o) {
			continue
		}
		code := lua.ReserveCode(o.Outcome)
		if code == lua.RequestIDConflict || code == lua.DuplicateRequest {
			continue
		}
		k := RequestKey{o.Bucket, o.Req}
		if realUsers[k] == nil {
			realUsers[k] = map[uint32]bool{}
		}
		realUsers[k][o.User] = true
		if o.Accepted() && o.RID != "" {
			if w, ok := owner[o.RID]; !ok || o.End < w.end {
				owner[o.RID] = first{o.User, o.End}
			}
		}
	}
	skip := map[uint32]bool{}
	for _, o := range f.all() {
		if !o.Accepted() || o.RID == "" || len(realUsers[RequestKey{o.Bucket, o.Req}]) < 2 {
			continue
		}
		if r, ok := f.Records[o.RID]; ok && r.User != "" {
			if r.User != o.UserID() {
				skip[o.ID] = true
			}
		} else if owner[o.RID].user != o.User {
			skip[o.ID] = true
		}
	}
	return skip
}
