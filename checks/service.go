package checks

import (
	"fmt"
	"sort"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
)

// The service checks (S1-S5) judge a running access service under test
// from what only its answers show (Facts.Answers), the history, the
// faults' windows without a master and, when it keeps the reference
// contract's keys, the request ids it cached.

// appliesService: only a service under test is judged.
func appliesService(f *Facts, _ Verdict) string {
	if f.Answers == nil {
		return "the system under test is not a service: no HTTP answers to judge"
	}
	return ""
}

// notAService is the verdict of a service check on another system (the
// check then skips: appliesService).
var notAService = Verdict{Detail: "not a service"}

// judgeS1: no ACCEPTED answered wholly inside a window in which a fault
// left the bucket's slot without a master, and every SYSTEM_BUSY said
// retryable=true with the original request_id.
func judgeS1(f *Facts) Verdict {
	if f.Answers == nil {
		return notAService
	}
	var bad []string
	before := ackedBefore(f)
	inWindow, accepted := 0, 0
	for _, o := range f.all() {
		if !o.Kind.IsReserve() {
			continue
		}
		for _, w := range f.Masterless {
			if o.Start < w.From || o.End > w.To || !hasBucket(w.Buckets, uint32(o.Bucket)) {
				continue
			}
			inWindow++
			if o.Accepted() && !(o.RID != "" && before(o.RID, w.From)) {
				accepted++
				bad = append(bad, fmt.Sprintf("op %d (%s, bucket %d) answered ACCEPTED %s at %.3f-%.3f s, inside %s's window without a master (%.3f-%.3f s)",
					o.ID, o.RequestID(), o.Bucket, o.RID, o.Start.Seconds(), o.End.Seconds(), w.Fault, w.From.Seconds(), w.To.Seconds()))
			}
		}
	}
	a := f.Answers
	if a.BusyNotRetryable > 0 {
		bad = append(bad, fmt.Sprintf("%d SYSTEM_BUSY answers without retryable=true", a.BusyNotRetryable))
	}
	if a.BusyWrongRequestID > 0 {
		bad = append(bad, fmt.Sprintf("%d SYSTEM_BUSY answers without the original request_id", a.BusyWrongRequestID))
	}
	failOpen := int64(accepted) + a.BusyNotRetryable + a.BusyWrongRequestID
	detail := fmt.Sprintf("%d SYSTEM_BUSY answers, each retryable with the original request_id; %d requests inside %d windows without a master, none ACCEPTED",
		a.Busy, inWindow, len(f.Masterless))
	if len(bad) > 0 {
		detail = fmt.Sprintf("failed open: %d violations: %s", len(bad), listed(bad)[0])
	}
	return Verdict{len(bad) > 0, detail, map[string]any{"busy": a.Busy, "masterless_windows": len(f.Masterless),
		"requests_in_windows": inWindow, "accepted_without_master": accepted, "busy_not_retryable": a.BusyNotRetryable,
		"busy_wrong_request_id": a.BusyWrongRequestID, "fail_open": failOpen, "violations": listed(bad), "examples": a.Examples}}
}

// ackedBefore says whether reservation rid was answered ACCEPTED by an
// operation that ended before t: a later ACCEPTED for it repeats an
// earlier answer (a replay) and reserves nothing new.
func ackedBefore(f *Facts) func(rid string, t time.Duration) bool {
	first := map[string]time.Duration{}
	for _, o := range f.all() {
		if o.Accepted() && o.RID != "" {
			if e, ok := first[o.RID]; !ok || o.End < e {
				first[o.RID] = o.End
			}
		}
	}
	return func(rid string, t time.Duration) bool {
		e, ok := first[rid]
		return ok && e < t
	}
}

func hasBucket(bs []uint32, b uint32) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

func vacuousS1(f *Facts, v Verdict) string {
	if f.Answers == nil || f.Answers.Busy > 0 || v.Evidence["requests_in_windows"] != 0 {
		return ""
	}
	return fmt.Sprintf("no SYSTEM_BUSY answer and no request inside a window without a master (%d windows): the service never had to fail closed", len(f.Masterless))
}

// judgeS2: every answer's request_id is the request's own, and every
// request id cached in Redis is one the harness sent.
func judgeS2(f *Facts) Verdict {
	if f.Answers == nil {
		return notAService
	}
	a := f.Answers
	var bad []string
	if a.WrongRequestID > 0 {
		bad = append(bad, fmt.Sprintf("%d answers carried a request_id other than the request's own", a.WrongRequestID))
	}
	cached, unknown := 0, []string{}
	if f.CachedRequestIDs != nil {
		sent := map[string]bool{}
		for _, o := range f.all() {
			if o.Kind.IsReserve() {
				sent[o.RequestID()] = true
			}
		}
		buckets := make([]uint32, 0, len(f.CachedRequestIDs))
		for b := range f.CachedRequestIDs {
			buckets = append(buckets, b)
		}
		sort.Slice(buckets, func(i, j int) bool { return buckets[i] < buckets[j] })
		for _, b := range buckets {
			for _, id := range f.CachedRequestIDs[b] {
				cached++
				if !sent[id] {
					unknown = append(unknown, fmt.Sprintf("bucket %d: %s", b, id))
				}
			}
		}
	}
	if len(unknown) > 0 {
		bad = append(bad, fmt.Sprintf("%d request ids cached in Redis that the harness never sent: %v", len(unknown), listed(unknown)))
	}
	newIDs := a.WrongRequestID + int64(len(unknown))
	detail := fmt.Sprintf("%d answers, each with its own request_id", a.Total)
	if f.CachedRequestIDs != nil {
		detail += fmt.Sprintf("; %d cached request ids, each sent by the harness", cached)
	}
	if len(bad) > 0 {
		detail = fmt.Sprintf("new request ids: %v", bad)
	}
	return Verdict{len(bad) > 0, detail, map[string]any{"answers": a.Total, "wrong_request_id": a.WrongRequestID,
		"cached_request_ids": cached, "never_sent": listed(unknown), "new_request_ids": newIDs, "examples": a.Examples}}
}

func vacuousS2(f *Facts, _ Verdict) string {
	if f.Answers == nil || f.Answers.Total > 0 || f.CachedRequestIDs != nil {
		return ""
	}
	return "no answer came and the service's request cache was not read"
}

// judgeS3: every request was answered within the client's deadline.
func judgeS3(f *Facts) Verdict {
	if f.Answers == nil {
		return notAService
	}
	a := f.Answers
	detail := fmt.Sprintf("%d answers, all within the %s deadline", a.Total, a.Deadline)
	if a.TimedOut > 0 {
		detail = fmt.Sprintf("%d requests got no answer within the %s deadline (%d answered): a service answers OUTCOME_UNKNOWN or SYSTEM_BUSY in time rather than hold the client", a.TimedOut, a.Deadline, a.Total)
	}
	return Verdict{a.TimedOut > 0, detail, map[string]any{"answers": a.Total, "timed_out": a.TimedOut, "deadline_ms": float64(a.Deadline.Microseconds()) / 1000}}
}

func vacuousS3(f *Facts, _ Verdict) string {
	if f.Answers == nil || f.Answers.Total > 0 || f.Answers.TimedOut > 0 {
		return ""
	}
	return "no request was sent to the service"
}

// judgeS4: every FAILED answer is to a request Redis did not reserve: no
// reservation record under the id the contract derives for it, and no
// cached ACCEPTED result for its request id. A service that maps its own
// Redis timeout to "failed" (and compensates) leaves the record behind.
func judgeS4(f *Facts) Verdict {
	if f.Answers == nil {
		return notAService
	}
	var bad []string
	failed := 0
	for _, o := range f.all() {
		if !o.Kind.IsReserve() || o.Outcome != history.OutcomeError || o.ErrClass != history.ErrFailed {
			continue
		}
		failed++
		rid := f.OwnReservation[UserRequest{o.User, o.Req}]
		if st, ok := status(f, rid); ok && rid != "" {
			bad = append(bad, fmt.Sprintf("op %d (%s) answered FAILED, yet Redis holds its reservation %s (%s)", o.ID, o.RequestID(), rid, st))
			continue
		}
		if r, ok := f.Requests[RequestKey{o.Bucket, o.Req}]; ok && r.Found && r.Result.Code == lua.Accepted {
			bad = append(bad, fmt.Sprintf("op %d (%s) answered FAILED, yet Redis cached ACCEPTED %s for it", o.ID, o.RequestID(), r.Result.ReservationID))
		}
	}
	a := f.Answers
	detail := fmt.Sprintf("%d OUTCOME_UNKNOWN answers; %d FAILED answers, none to a request Redis reserved", a.Unknown, failed)
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d of %d FAILED answers were to requests Redis reserved (a timeout answered as a failure): %v", len(bad), failed, listed(bad))
	}
	return Verdict{len(bad) > 0, detail, map[string]any{"unknown_answers": a.Unknown, "failed_answers": int64(failed),
		"failed_but_reserved": int64(len(bad)), "examples": listed(bad)}}
}

func vacuousS4(f *Facts, _ Verdict) string {
	if f.Answers == nil || f.Answers.Unknown > 0 || f.Answers.Failed > 0 {
		return ""
	}
	return "no answer was FAILED or OUTCOME_UNKNOWN: the service's timeout path was not exercised"
}

// judgeS5: every order of the activity in PostgreSQL came through the
// pipeline: the order stage was handed its message (EndToEndFacts.Received).
// An order the stage never received was written around it: by a service
// that, with Redis out of reach, "keeps selling" into the database (the
// bypass §7.6 and §13.2 forbid). Its reservation's record in Redis, or
// its absence, is named.
func judgeS5(f *Facts) Verdict {
	e := f.EndToEnd
	if f.Answers == nil || e == nil || e.PG == nil {
		return notAService
	}
	var bad []string
	noRecord := 0
	for _, o := range e.PG.Orders {
		if e.Received[o.RID] > 0 {
			continue
		}
		redis := "Redis holds no reservation " + o.RID
		if st, ok := e.Redis[o.RID]; ok && st.Found {
			redis = fmt.Sprintf("Redis holds reservation %s as %s", o.RID, st.Status)
		} else {
			noRecord++
		}
		bad = append(bad, fmt.Sprintf("order %s (user %s, bucket %d, created %s) was never delivered to the order stage; %s",
			o.OrderID, o.User, o.Bucket, o.CreatedAt.UTC().Format("15:04:05.000"), redis))
	}
	detail := fmt.Sprintf("all %d orders in PostgreSQL came through the pipeline (each one's message handed to the order stage)", len(e.PG.Orders))
	if len(bad) > 0 {
		detail = fmt.Sprintf("%d of %d orders in PostgreSQL were written around the pipeline (%d without any reservation in Redis): %v",
			len(bad), len(e.PG.Orders), noRecord, listed(bad))
	}
	return Verdict{len(bad) > 0, detail, map[string]any{"orders": len(e.PG.Orders), "bypass_orders": int64(len(bad)),
		"without_reservation": noRecord, "examples": listed(bad)}}
}

func vacuousS5(f *Facts, _ Verdict) string {
	if f.EndToEnd == nil || f.EndToEnd.PG == nil || len(f.EndToEnd.PG.Orders) > 0 {
		return ""
	}
	return "no order of the activity in PostgreSQL"
}
