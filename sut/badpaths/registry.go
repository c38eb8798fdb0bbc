package badpaths

import (
	"errors"
	"fmt"

	"seckill-harness/checks"
	"seckill-harness/lua"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
	"seckill-harness/sut/serve"
)

// Names of the bad paths.
const (
	GetThenDecr                  = "get-then-decr"
	DecrThenIncr                 = "decr-then-incr"
	LuaNoRequestIdempotency      = "lua-no-request-idempotency"
	LuaNoUserMarker              = "lua-no-user-marker"
	LuaNoTTL                     = "lua-no-ttl"
	CompensateWithoutStatusCheck = "compensate-without-status-check"
	NewRequestIDOnTimeout        = "new-request-id-on-timeout"
	ReleaseOnSendTimeout         = "release-on-send-timeout"
	CompensateMarkerLeft         = "compensate-marker-left"
	LuaStaleSoldOut              = "lua-stale-soldout"
	QueryHidesReleased           = "query-hides-released"
	LuaStaleRemaining            = "lua-stale-remaining"
	CompensateFalseAlready       = "compensate-false-already-released"
)

// Info describes one bad path.
type Info struct {
	Name        string `json:"name"`
	Description string `json:"description"` // one line: what it does wrong
	Source      string `json:"source"`      // where the seeds describe it
	// Expect lists the invariants expected to catch it: a run catches the
	// path when at least one of them fails.
	Expect []string `json:"expect"`
	Why    string   `json:"why"`  // why those invariants see it
	Load   string   `json:"load"` // the load (see Loads) that exposes it
	// Pending, when set, says why the path cannot run yet.
	Pending string `json:"pending,omitempty"`
	// PipelineDefect, when set, names the pipeline defect (one of
	// pipeline.DefectNames) that makes this bad path: the reserve path is
	// the reference and the fault is in the asynchronous stages, so the
	// load must run the pipeline (Load.Pipeline). Such a path has no
	// reserve-path constructor (Lookup does not find it).
	PipelineDefect string `json:"pipeline_defect,omitempty"`

	// System builds the path as the system under test of a run, on the
	// run's store (lifecycle.Plan.Path); nil for a pending path and for a
	// pipeline defect (its reserve path is the reference).
	System func(st *lua.Store) sut.System `json:"-"`
	// Reference, when set, is the correct system the path is a broken
	// version of: the matrix runs it under the path's load as the control
	// (its row must pass every run); nil: the reference path.
	Reference *Info `json:"reference,omitempty"`

	validate func() error
}

// Runnable reports whether the path can run (it is not pending).
func (i Info) Runnable() bool { return i.Pending == "" && (i.System != nil || i.PipelineDefect != "") }

// Defects returns the pipeline defects the path turns on (none for a reserve-path variant).
func (i Info) Defects() (pipeline.Defects, error) {
	if i.PipelineDefect == "" {
		return pipeline.Defects{}, nil
	}
	d, err := pipeline.ParseDefects([]string{i.PipelineDefect})
	if err != nil {
		return pipeline.Defects{}, fmt.Errorf("badpaths: %s: %w", i.Name, err)
	}
	return d, nil
}

var registry = []Info{
	{
		Name:        GetThenDecr,
		Description: "HGET available, compare, then HINCRBY available -1 / reserved +1, SET NX marker, write record/zsets/result: separate round trips, no Lua",
		Source:      "spec §4, §4.1, §17 错误一; anti-pattern §2.1",
		Expect:      []string{"I3", "I1"},
		Why:         "concurrent clients all read available > 0 and all decrement: more ACCEPTED than stock (I3), available ends negative (I1)",
		Load:        LoadContention,
		System:      newCounterPath(GetThenDecr, true),
	},
	{
		Name:        DecrThenIncr,
		Description: "HINCRBY available -1 first; if negative HINCRBY +1 back and SOLD_OUT; then reserved +1, marker, record: separate round trips",
		Source:      "spec §4.1; anti-pattern §2.1 (负库存会短暂暴露给其他读请求)",
		Expect:      []string{"I1"},
		Why:         "no oversell, but every refused request leaves available negative for a round trip, and each accepted one leaves available + reserved != initial for a round trip: the I1 sampler reads it during the run",
		Load:        LoadContention,
		System:      newCounterPath(DecrThenIncr, false),
	},
	{
		Name:        LuaNoRequestIdempotency,
		Description: "reserve.lua without the request-id idempotency (no cached-result lookup, no rebuild from the record): a replay is re-evaluated",
		Source:      "spec §7.2, §18 Q6; anti-pattern §2.2 (script keyed by user only)",
		Expect:      []string{"I5"},
		Why:         "a replay of an ACCEPTED request answers USER_ALREADY_RESERVED, and a request_id reused by another user gets a real answer instead of REQUEST_ID_CONFLICT",
		Load:        LoadReplay,
		System:      newScriptPath(LuaNoRequestIdempotency, reserveVariant(LuaNoRequestIdempotency, noRequestIdempotencyEdits)),
		validate:    func() error { _, err := reserveVariant("", noRequestIdempotencyEdits).get(); return err },
	},
	{
		Name:        LuaNoUserMarker,
		Description: "reserve.lua without the one-per-user check: the marker is written but never read",
		Source:      "spec §7.3, §18 Q6",
		Expect:      []string{"I4"},
		Why:         "a user's second request_id is ACCEPTED while the first reservation is live: two live reservations and two acknowledgements for one user",
		Load:        LoadSameUser,
		System:      newScriptPath(LuaNoUserMarker, reserveVariant(LuaNoUserMarker, noUserMarkerEdits)),
		validate:    func() error { _, err := reserveVariant("", noUserMarkerEdits).get(); return err },
	},
	{
		Name:        LuaNoTTL,
		Description: "reserve.lua that writes the reservation record without its PEXPIREAT at retention_until_ms: the record never expires",
		Source:      "spec §8.3, §10.2, §14.3 (every key expires at the activity's retention time)",
		Expect:      []string{"K1"},
		Why:         "every ACCEPTED reservation leaves a resv key with no TTL (PEXPIRETIME -1): a memory leak that outlives the sale, named in K1's evidence",
		Load:        LoadContention,
		System:      newScriptPath(LuaNoTTL, reserveVariant(LuaNoTTL, noTTLEdits)),
		validate:    func() error { _, err := reserveVariant("", noTTLEdits).get(); return err },
	},
	{
		Name:        CompensateWithoutStatusCheck,
		Description: "compensate.lua that releases whatever the status, and again when repeated",
		Source:      "spec §9.3, §18 Q18",
		Expect:      []string{"I8", "I2"},
		Why:         "a duplicate compensation answers RELEASED again (I8) and gives the unit back twice: released_total exceeds the RELEASED records and reserved falls below the live ones (I2)",
		Load:        LoadReleaseDup,
		System:      newScriptPath(CompensateWithoutStatusCheck, compensateVariant(CompensateWithoutStatusCheck, compensateNoStatusEdits)),
		validate:    func() error { _, err := compensateVariant("", compensateNoStatusEdits).get(); return err },
	},
	{
		Name:        CompensateMarkerLeft,
		Description: "compensate.lua that answers marker_deleted=1 but leaves the user marker: a released user is refused USER_ALREADY_RESERVED for the rest of the sale",
		Source:      "spec §7.3, §9.3 (the marker is deleted while it points at the released reservation)",
		Expect:      []string{"H1"},
		Why:         "the end state is right (stock given back, record RELEASED), but a released user who comes back with a new request_id is told USER_ALREADY_RESERVED for a reservation that was released: no order of the operations explains that answer (H1, the user's partition)",
		Load:        LoadReleaseReturn,
		System:      newScriptPath(CompensateMarkerLeft, compensateVariant(CompensateMarkerLeft, compensateMarkerLeftEdits)),
		validate:    func() error { _, err := compensateVariant("", compensateMarkerLeftEdits).get(); return err },
	},
	{
		Name:        LuaStaleSoldOut,
		Description: "reserve.lua that answers SOLD_OUT, touching nothing, to users with an even last digit while the bucket holds 100 to 110 units (a stale sold-out flag)",
		Source:      "spec §7.1 step 8 (SOLD_OUT only when available <= 0)",
		Expect:      []string{"H1"},
		Why:         "SOLD_OUT is answered while the stock counter, as the ACCEPTED answers around it show, holds about a hundred units: no order of the bucket's operations puts the counter at 0 there (H1, the bucket's partition)",
		Load:        LoadContention,
		System:      newScriptPath(LuaStaleSoldOut, reserveVariant(LuaStaleSoldOut, staleSoldOutEdits)),
		validate:    func() error { _, err := reserveVariant("", staleSoldOutEdits).get(); return err },
	},
	{
		Name:        QueryHidesReleased,
		Description: "the reference scripts with a status query that reads the reservation record and answers NOT_FOUND once it is RELEASED, instead of the request's answer on record",
		Source:      "spec §7.4 (the request's result is the lookup a client may make instead of a re-send)",
		Expect:      []string{"H1"},
		Why:         "a request answered ACCEPTED is reported NOT_FOUND after its reservation was released, which tells its client the request never ran (and to send it again): no order explains NOT_FOUND after the ACCEPTED answer (H1, the user's partition); the end state is right",
		Load:        LoadReleaseQuery,
		System: func(st *lua.Store) sut.System {
			return queryHidesReleased{sut.NewReference(st)}
		},
	},
	{
		Name:        LuaStaleRemaining,
		Description: "reserve.lua that answers ACCEPTED with a remaining count five above the one left, to users with an even last digit while 100 to 110 units are left (a count read from a lagging copy)",
		Source:      "spec §7.1 step 9 (the answer carries the units left after this reservation)",
		Expect:      []string{"H1"},
		Why:         "the counts the ACCEPTED answers carry go back up by five and down again in real time while every unit is sold once: no order of the bucket's operations gives those counts (H1, the bucket's partition); the end state is right",
		Load:        LoadContention,
		System:      newScriptPath(LuaStaleRemaining, reserveVariant(LuaStaleRemaining, staleRemainingEdits)),
		validate:    func() error { _, err := reserveVariant("", staleRemainingEdits).get(); return err },
	},
	{
		Name:        CompensateFalseAlready,
		Description: "compensate.lua that answers ALREADY_RELEASED, touching nothing, for live reservations whose id ends in an even byte (a status read from a stale copy)",
		Source:      "spec §9.3 (ALREADY_RELEASED only for a reservation already RELEASED)",
		Expect:      []string{"H1"},
		Why:         "a release of a live reservation is told ALREADY_RELEASED although nothing released it, and the user keeps the hold: no order of the user's operations explains that answer (H1, the user's partition); stock and records stay consistent",
		Load:        LoadReleaseReturn,
		System:      newScriptPath(CompensateFalseAlready, compensateVariant(CompensateFalseAlready, compensateFalseAlreadyReleasedEdits)),
		validate:    func() error { _, err := compensateVariant("", compensateFalseAlreadyReleasedEdits).get(); return err },
	},
	{
		Name:        NewRequestIDOnTimeout,
		Description: "after an UNKNOWN the client re-sends under a fresh request_id (new reservation_id and message_id)",
		Source:      "spec §7.4 (禁止立即生成新 request_id), §13.1, §18 Q7–Q8",
		Expect:      []string{"I5"},
		Why:         "the lost send ran: its request_id holds ACCEPTED r1 in Redis while the client's answer for that request comes from another request (USER_ALREADY_RESERVED r1, or ACCEPTED with a reservation not derived from it)",
		Load:        LoadDisconnect,
		System: func(st *lua.Store) sut.System {
			return newRequestIDPath{ReferenceState: sut.ReferenceState{Store: st}, st: st}
		},
	},
	{
		Name:           ReleaseOnSendTimeout,
		Description:    "the dispatcher releases a reservation as soon as its MQ send times out (SEND_UNKNOWN -> RELEASE_PENDING -> compensate at once, no MQ/order check) although the message may have been stored",
		Source:         "spec §8.4, §13.1, §17 错误五, §18 Q9",
		Expect:         []string{"P5"},
		Why:            "every move is legal, but most timed-out messages were stored anyway: each is consumed after its reservation was RELEASED and its unit resold (P5: a first consumption finds the reservation released while its message was in the MQ; the order stage's fence refuses the late order, so P1 holds)",
		Load:           LoadMQTimeout,
		PipelineDefect: "release-on-send-timeout",
	},
	{
		Name:        ServeNewRequestIDOnTimeout,
		Description: defectDoes(serve.DefectNewRequestIDOnTimeout),
		Source:      serviceSource,
		Expect:      []string{"S2"},
		Why:         "the re-send after a Redis timeout carries a request_id no client sent: the answer names it, and Redis caches a result under it (S2 no_new_request_id)",
		Load:        LoadServiceLatency,
		System:      newServicePath(ServeNewRequestIDOnTimeout, serve.DefectNewRequestIDOnTimeout),
		Reference:   &serviceReferenceInfo,
	},
	{
		Name:        ServeFailOpen,
		Description: defectDoes(serve.DefectFailOpen),
		Source:      serviceSource,
		Expect:      []string{"S1"},
		Why:         "while the bucket's master is dead it answers ACCEPTED from its local counter, inside the fault's window without a master (S1 fail_closed)",
		Load:        LoadServiceMasterless,
		System:      newServicePath(ServeFailOpen, serve.DefectFailOpen),
		Reference:   &serviceReferenceInfo,
	},
	{
		Name:        ServeQueryHidesReleased,
		Description: defectDoes(serve.DefectQueryHidesReleased),
		Source:      serviceSource,
		Expect:      []string{"H1"},
		Why:         "the service's query endpoint says NOT_FOUND for a request it answered ACCEPTED, once the reservation was released: no order of the user's operations explains NOT_FOUND after that answer (H1, judged from the service's answers and its query endpoint); the end state is right",
		Load:        LoadReleaseQuery,
		System:      newServicePath(ServeQueryHidesReleased, serve.DefectQueryHidesReleased),
		Reference:   &serviceReferenceInfo,
	},
	{
		Name:        ServeTimeoutIsFailure,
		Description: defectDoes(serve.DefectTimeoutIsFailure),
		Source:      serviceSource,
		Expect:      []string{"S4"},
		Why:         "a Redis timeout is answered FAILED (not retryable) although the late script reserved: the reservation behind the FAILED answer is in Redis, RELEASED by the defect's compensation (S4 timeout_is_unknown)",
		Load:        LoadServiceLatency,
		System:      newServicePath(ServeTimeoutIsFailure, serve.DefectTimeoutIsFailure),
		Reference:   &serviceReferenceInfo,
	},
	{
		Name:        ServeRetryWithoutIDs,
		Description: defectDoes(serve.DefectRetryWithoutIDs),
		Source:      serviceSource,
		Expect:      []string{"S2"},
		Why:         "every re-send after a Redis timeout carries a new request_id and reservation_id: Redis caches a result (and may hold a reservation) under a request id the harness never sent (S2 no_new_request_id)",
		Load:        LoadServiceLatency,
		System:      newServicePath(ServeRetryWithoutIDs, serve.DefectRetryWithoutIDs),
		Reference:   &serviceReferenceInfo,
	},
}

// Names lists every registered bad path, pending ones included, in registry order.
func Names() []string {
	out := make([]string, len(registry))
	for i, r := range registry {
		out[i] = r.Name
	}
	return out
}

// All returns the registry's entries, in order.
func All() []Info { return append([]Info(nil), registry...) }

// Get returns the entry of name.
func Get(name string) (Info, bool) {
	for _, r := range registry {
		if r.Name == name {
			return r, true
		}
	}
	return Info{}, false
}

// Lookup returns the constructor of a runnable bad reserve path; ok is false
// for an unknown name, a pending path and a pipeline defect (no reserve path
// of its own: see Info.PipelineDefect and Get).
func Lookup(name string) (func(st *lua.Store) sut.System, bool) {
	r, ok := Get(name)
	if !ok || !r.Runnable() || r.System == nil {
		return nil, false
	}
	return r.System, true
}

// Validate checks that every Lua variant could be derived from the embedded
// scripts (each edit applied exactly once) and that every pipeline defect
// is known and runs under a load with the pipeline. Call it before running:
// a variant whose edit no longer applies would run the reference script.
func Validate() error {
	var errs []error
	for _, r := range registry {
		if r.validate != nil {
			errs = append(errs, r.validate())
		}
		for _, id := range r.Expect {
			inv, ok := checks.LookupInvariant(id)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("badpaths: %s expects %q, not a check of the table: valid %v", r.Name, id, checks.InvariantIDs()))
			case inv.Pipeline && r.PipelineDefect == "":
				if l, ok := GetLoad(r.Load, false); !ok || l.Pipeline == nil {
					errs = append(errs, fmt.Errorf("badpaths: %s expects the pipeline check %s, but its load %q runs no pipeline", r.Name, id, r.Load))
				}
			}
		}
		if r.PipelineDefect != "" {
			_, err := r.Defects()
			errs = append(errs, err)
			if l, ok := GetLoad(r.Load, false); !ok || l.Pipeline == nil {
				errs = append(errs, fmt.Errorf("badpaths: %s is a pipeline defect: its load %q must run the pipeline", r.Name, r.Load))
			}
		}
	}
	return errors.Join(errs...)
}
