package checks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"seckill-harness/history"
	"seckill-harness/sut"
)

// Invariant declares one check: who it is, what it promises, and the pure
// function that judges it over Facts. The table (Invariants) is the only
// place a check is declared: the valid ids of scenario and bad-path
// fields, the order of report.json's invariants, docs/CHECKS.md's table and
// the JUnit test cases all come from it.
type Invariant struct {
	ID       string // report.json invariants[].id, e.g. "I3"
	Name     string // report.json invariants[].name, e.g. "no_oversell"
	Contract string // one line: what a pass guarantees

	// Judge is the verdict over the facts. It never reads Redis.
	Judge func(f *Facts) Verdict
	// Needs are the facts of the system under test the check judges (the
	// history, the plan and the pipeline's own log are always there): a
	// system that does not expose one of them gets the check skip, "this
	// system under test does not expose …", whatever Judge would say.
	Needs []sut.Fact
	// Compares are facts the check compares against when the system
	// exposes them; without them it judges the rest (the history alone)
	// and its detail says what it could not compare ("not compared: this
	// system under test does not expose …"). Never a skip.
	Compares []sut.Fact
	// FromAnswers: for a system under test that does not expose the facts
	// of Needs (a service without state: reference, an adapter file
	// without state.record), the check is judged from the answers in the
	// history alone, its Needs then acting as Compares (the detail says
	// what it could not compare).
	FromAnswers bool

	// Pipeline marks a check of the asynchronous pipeline: it is judged
	// (and in the report) only when the run had a pipeline.
	Pipeline bool
	// EndToEnd marks a pipeline check down to the order database: judged
	// only when its facts were collected (Facts.EndToEnd, CollectEndToEnd).
	EndToEnd bool
	// LocalSoldOut marks a check of the reserve path's local sold-out
	// flag: judged only in runs with it (Facts.LocalSoldOutTTL > 0).
	LocalSoldOut bool
	// Service marks a check of a running access service under test: judged
	// only in runs against one (Facts.Answers set).
	Service bool
	// WholeLoad marks a check of the activity's global counters against
	// the history: a generator of a split load holds only part of the
	// history, so it reports skip, "judged on the merge".
	WholeLoad bool
	// Applies, when set, says why the check does not apply to this run
	// ("" when it does): the check then reports skip with that reason
	// (its evidence kept), whatever its verdict. SkipWhen documents it.
	// Both Applies and Vacuous see the verdict, whose evidence may hold
	// the counts they need.
	Applies  func(f *Facts, v Verdict) string
	SkipWhen string // when Applies or Vacuous skips, in a few words (for docs/CHECKS.md)
	// Vacuous, when set, says why the facts give the check nothing to
	// judge ("" when they do): a passing verdict then becomes skip with
	// that reason. A failing verdict stays a failure.
	Vacuous func(f *Facts, v Verdict) string
	// ConsequenceOf, when set, names the check whose failure wholly
	// explains a failure of this one ("" when none does): I3's oversell
	// when every unit acknowledged beyond the stock was sold again after
	// its first reservation was lost (I6); I4's double acknowledgements
	// when each involves another user's reservation answered to a reused
	// request id (I5). A scenario that does not
	// require the cause does not fail on its consequence either (the run
	// waives it and says so); one that requires the cause fails on both.
	ConsequenceOf func(f *Facts, v Verdict) string
	// Unwaivable marks a check whose failure fails every run, whatever
	// invariants the scenario requires: a finding about the system itself
	// that refused the load (A1), not a property a scenario may choose not
	// to require. See Unwaivable.
	Unwaivable bool
	// ServerSide marks a check judged from the servers' own counters
	// alone (Facts.Evictions), not the activity's state: it is judged even
	// when that state cannot be read back (JudgeServerSide), where its
	// verdict often says why.
	ServerSide bool
	// FailCount, when set, names the evidence entry (an integer) that
	// counts a failure of the check, and FailCountOf says what it counts.
	// Only such a check may be expected to fail (a scenario's expect_fail:
	// "fails with at least N of them"); see FailureCount.
	FailCount, FailCountOf string
}

// Verdict is what a Judge decides: fail or not, why, and the evidence.
type Verdict struct {
	Failed   bool
	Detail   string
	Evidence map[string]any
}

// The facts the checks need (Invariant.Needs). A count of releases (I8)
// or of units sold again (L1) is taken from the system's answers, which
// only its records or its stock can confirm: those checks need them too.
// The pipeline works on the reference contract's records and queues.
var (
	stock           = []sut.Fact{sut.Stock}
	available       = []sut.Fact{sut.Available}
	records         = []sut.Fact{sut.Records}
	recordsAndStock = []sut.Fact{sut.Records, sut.Stock}
	requests        = []sut.Fact{sut.Requests}
	keys            = []sut.Fact{sut.Keys}
	evictions       = []sut.Fact{sut.Evictions}
	pipelineState   = []sut.Fact{sut.Records, sut.Queues}
)

// invariants is the table, in report order.
var invariants = []Invariant{
	{ID: "I1", Name: "stock_conservation", Needs: available, Compares: stock,
		Contract: "per bucket `available + reserved == initial`, both ≥ 0, at the end and at every sample taken during the run; for a system that shows its available units alone, `available ≥ 0` at the end and at every sample, and at the end `available == initial − (distinct ACCEPTED − RELEASED)` when every outcome is known",
		Judge:    judgeI1, Vacuous: stockUntouched, SkipWhen: "the stock never moved"},
	{ID: "I2", Name: "reservation_accounting", Needs: recordsAndStock,
		Contract: "per bucket `reserved` == live reservation records, `released_total` == RELEASED records",
		Judge:    judgeI2, WholeLoad: true, Vacuous: vacuousI2, SkipWhen: "no record and untouched counters"},
	{ID: "I3", Name: "no_oversell", Needs: records, FromAnswers: true,
		Contract: "distinct reservation ids acknowledged ACCEPTED, less those released, ≤ initial stock (per bucket and in total)",
		Judge:    judgeI3, Vacuous: noAcknowledgement, SkipWhen: "no ACCEPTED answer", ConsequenceOf: oversellOfLostAcks,
		FailCount: "oversold_units", FailCountOf: "units acknowledged beyond the stock (sum over buckets)"},
	{ID: "I4", Name: "one_per_user", Needs: records, FromAnswers: true,
		Contract: "no user holds two live reservations, nor was told ACCEPTED for a second before the first was released",
		Judge:    judgeI4, Vacuous: vacuousI4, SkipWhen: "no ACCEPTED answer and no reservation record", ConsequenceOf: doubleAckOfReusedRequests},
	{ID: "I5", Name: "idempotency", Compares: requests,
		Contract: "every answer to one request_id agrees (and with Redis' cached result); another user reusing it gets REQUEST_ID_CONFLICT and no reservation id",
		Judge:    judgeI5, Vacuous: vacuousI5, SkipWhen: "no request id answered twice, re-sent or refused USER_ALREADY_RESERVED"},
	{ID: "I6", Name: "no_lost_acks", Needs: records,
		Contract: "every reservation acknowledged ACCEPTED still exists in Redis",
		Judge:    judgeI6, Vacuous: noAcknowledgement, SkipWhen: "no ACCEPTED answer",
		FailCount: "lost", FailCountOf: "acknowledged reservations lost"},
	{ID: "I7", Name: "unknowns_resolved", Needs: requests,
		Contract: "every UNKNOWN outcome is resolved, executed or not, by reading its request result",
		Judge:    judgeI7, Vacuous: vacuousI7, SkipWhen: "no operation ended UNKNOWN"},
	{ID: "I8", Name: "release_at_most_once", Needs: records,
		Contract: "no reservation is released twice; a repeated compensation answers ALREADY_RELEASED",
		Judge:    judgeI8, Vacuous: vacuousI8, SkipWhen: "no compensation released anything"},
	{ID: "I9", Name: "liveness", Needs: available,
		Contract: "without faults and with demand ≥ stock, no bucket refuses SOLD_OUT while it holds stock (no undersell); reports the stock left",
		Judge:    judgeI9, WholeLoad: true, Applies: appliesI9, Vacuous: vacuousI9,
		SkipWhen: "faults were injected; demand below stock and no SOLD_OUT"},
	{ID: "I10", Name: "wait_confirmed_not_lost", Needs: records,
		Contract: "every reservation whose ACCEPTED answer the replicas confirmed with WAIT (`--wait-replicas`) still exists in Redis",
		Judge:    judgeI10, Vacuous: noWaitConfirmation, SkipWhen: "no ACCEPTED answer was WAIT-confirmed",
		FailCount: "lost_confirmed", FailCountOf: "WAIT-confirmed reservations lost"},
	{ID: "H1", Name: "linearizability",
		Contract: "every answer of the history (reserve, release and status query, and the pipeline's compensations, UNKNOWN ones taking effect at any time after their start or never) is explained by one order of the operations that respects real time, under the model of the sale: per user its hold, its reservations and its cached request answers; per bucket the stock counter and the counts the answers carry; a search that does not finish within its budget is reported not checked, never passed",
		Judge:    judgeLinearizability, Vacuous: vacuousLinearizability, ConsequenceOf: linearizabilityOfLostAcks,
		SkipWhen:  "no answered operation; the search did not finish within its budget (not checked)",
		FailCount: "violating_partitions", FailCountOf: "partitions (users, buckets) whose answers no order explains"},
	{ID: "K1", Name: "keys_expire_by_retention", Needs: keys,
		Contract: "every key of the activity the path's contract names (per bucket meta, stock, soldout, both zsets, the 256 request shards; the reservation records and user markers the run reached) has a TTL and expires no later than the activity's retention time",
		Judge:    judgeK1, Vacuous: vacuousK1, SkipWhen: "the path left no key of its own",
		FailCount: "leaked_keys", FailCountOf: "keys without a TTL or expiring after the retention time"},
	{ID: "K2", Name: "no_key_evicted", Needs: evictions,
		Contract: "no node evicted a key during the run (evicted_keys of every node unchanged from before the load to after the run settled)",
		Judge:    judgeK2, Vacuous: vacuousK2, SkipWhen: "the servers' counters were not read (verify)", ServerSide: true,
		FailCount: "evicted_keys", FailCountOf: "keys the nodes evicted"},
	{ID: "A1", Name: "cluster_safe",
		Contract: "before any load, the pre-flight's sample calls of the adapter file's scripts touch only keys they pass in KEYS, every call's KEYS in one slot, and no call fails with a script error; a finding Redis refused on a sample call (or any, with preflight: strict) refuses the load, the others let it run",
		Judge:    judgeA1, Applies: appliesA1, SkipWhen: "the system under test is not an adapter file (no pre-flight)", Unwaivable: true},
	{ID: "R1", Name: "service_behind_proxies",
		Contract: "every Redis connection of the service the run started (--service-cmd) went through the proxies, so the faults on them reached its traffic: none to a node's own address, and some through them",
		Judge:    judgeR1, Applies: appliesR1, Vacuous: vacuousR1, SkipWhen: "no service child; its connections never read"},
	{ID: "S1", Service: true, Name: "fail_closed",
		Contract: "a service answers no ACCEPTED for a bucket while a fault leaves its slot without a master (the whole request inside the window), and every SYSTEM_BUSY carries retryable=true and the original request_id",
		Judge:    judgeS1, Applies: appliesService, Vacuous: vacuousS1,
		SkipWhen:  "the system under test is not a service; no SYSTEM_BUSY answer and no request inside a window without a master",
		FailCount: "fail_open", FailCountOf: "ACCEPTED answers without a master, and SYSTEM_BUSY answers without retryable=true or the original request_id"},
	{ID: "S2", Service: true, Name: "no_new_request_id", Compares: requests,
		Contract: "a service never makes up a request id: every answer carries the request's own request_id, and every request id it cached in Redis (with the reference contract's keys) is one the harness sent",
		Judge:    judgeS2, Applies: appliesService, Vacuous: vacuousS2,
		SkipWhen:  "the system under test is not a service; no answer carried a request_id and the request cache was not read",
		FailCount: "new_request_ids", FailCountOf: "request ids the harness never sent, in answers or in the request cache"},
	{ID: "S3", Service: true, Name: "answer_within_deadline",
		Contract: "a service answers every request (SYSTEM_BUSY and OUTCOME_UNKNOWN included) within the client's per-request deadline",
		Judge:    judgeS3, Applies: appliesService, Vacuous: vacuousS3,
		SkipWhen:  "the system under test is not a service; no request sent",
		FailCount: "timed_out", FailCountOf: "requests without an answer within the deadline"},
	{ID: "S4", Service: true, Name: "timeout_is_unknown", Needs: records, Compares: requests,
		Contract: "a service answers no definitive failure (FAILED, not retryable) for a request Redis reserved: a request that may have run is OUTCOME_UNKNOWN, answered with its outcome, or SYSTEM_BUSY — never failed while its reservation exists",
		Judge:    judgeS4, Applies: appliesService, Vacuous: vacuousS4,
		SkipWhen:  "the system under test is not a service; no answer was FAILED or OUTCOME_UNKNOWN (the timeout path was not exercised)",
		FailCount: "failed_but_reserved", FailCountOf: "FAILED answers to requests whose reservation Redis holds"},
	{ID: "S5", Service: true, Name: "no_bypass", Needs: pipelineState, EndToEnd: true,
		Contract: "a service never writes an order around Redis: every order of the activity in PostgreSQL came through the pipeline (its message was handed to the order stage), none written while Redis could not be asked",
		Judge:    judgeS5, Applies: appliesService, Vacuous: vacuousS5,
		SkipWhen:  "the system under test is not a service; no order in PostgreSQL",
		FailCount: "bypass_orders", FailCountOf: "orders in PostgreSQL the pipeline never wrote"},
	{ID: "L1", Name: "local_soldout_recovery", Needs: stock, LocalSoldOut: true,
		Contract: "with the local sold-out flag, every unit released after its bucket sold out is sold again within the flag's TTL + 1 s (the flag expires into a re-check of Redis): the undersell window is bounded",
		Judge:    judgeL1, Vacuous: vacuousL1, SkipWhen: "no unit released after a sell-out"},
	{ID: "P1", Name: "resale_no_oversell", Needs: pipelineState, Pipeline: true,
		Contract: "per bucket distinct ACCEPTED − RELEASED ≤ initial (released stock may sell again), orders ≤ initial, every order's reservation ORDER_CREATED",
		Judge:    judgeP1, Vacuous: vacuousP1, SkipWhen: "no ACCEPTED answer and no order"},
	{ID: "P2", Name: "drained_terminal", Needs: pipelineState, Pipeline: true,
		Contract: "after the drain every reservation is ORDER_CREATED or RELEASED and both zsets are empty",
		Judge:    judgeP2, Applies: appliesP2, Vacuous: vacuousP2, SkipWhen: "no drain ran; no reservation to drain"},
	{ID: "P3", Name: "legal_transitions", Needs: pipelineState, Pipeline: true,
		Contract: "every accepted status change is in the state machine, and ORDER_CREATED / RELEASED are never left",
		Judge:    judgeP3, Vacuous: vacuousP3, SkipWhen: "no transition or compensation answered"},
	{ID: "P4", Name: "one_order_per_reservation", Needs: pipelineState, Pipeline: true,
		Contract: "duplicate deliveries allowed; one order per reservation, one row per message_id, message_id = `reserve-order:<rid>:v1`",
		Judge:    judgeP4, Vacuous: vacuousP4, SkipWhen: "no message sent and no order row"},
	{ID: "P5", Name: "no_unsafe_release", Needs: pipelineState, Pipeline: true,
		Contract: "no reservation released (or sent to compensate) without RELEASE_PENDING or REJECTED first, nor while its message was still in the MQ",
		Judge:    judgeP5, Vacuous: vacuousP5, SkipWhen: "no release, compensation or consumed message"},
	{ID: "E1", Name: "orders_within_stock", Needs: pipelineState, Pipeline: true, EndToEnd: true,
		Contract: "PostgreSQL never oversells, whatever Redis did: CREATED orders ≤ stock.total and stock.sold ≤ stock.total",
		Judge:    judgeE1},
	{ID: "E2", Name: "one_valid_order_per_user", Needs: pipelineState, Pipeline: true, EndToEnd: true,
		Contract: "no user holds two CREATED orders of the activity",
		Judge:    judgeE2},
	{ID: "E3", Name: "one_order_per_resv_msg", Needs: pipelineState, Pipeline: true, EndToEnd: true,
		Contract: "no reservation_id and no message_id has two orders",
		Judge:    judgeE3},
	{ID: "E4", Name: "divergences_explained", Needs: pipelineState, Pipeline: true, EndToEnd: true,
		Contract: "every divergence the final reconciliation found is explained (an ACCEPTED reservation Redis lost, with or without its order, or a status it repaired)",
		Judge:    judgeE4, Applies: appliesE4, SkipWhen: "the reconciliation's final pass did not run"},
	{ID: "E5", Name: "end_to_end_liveness", Needs: pipelineState, Pipeline: true, EndToEnd: true,
		Contract: "after the drain every ACCEPTED reservation ended as an order, a recorded rejection or a release with a supported reason",
		Judge:    judgeE5, Applies: appliesE5, SkipWhen: "no drain ran"},
}

// Invariants returns the table of checks, in report order.
func Invariants() []Invariant { return slices.Clone(invariants) }

// Unwaivable reports whether check id fails every run it fails in, even
// one whose scenario lists the invariants it requires without it.
func Unwaivable(id string) bool {
	inv, ok := LookupInvariant(id)
	return ok && inv.Unwaivable
}

// InvariantIDs lists the ids of every check, in report order: the ids a
// scenario may require and a bad path may expect.
func InvariantIDs() []string {
	ids := make([]string, len(invariants))
	for i, inv := range invariants {
		ids[i] = inv.ID
	}
	return ids
}

// LookupInvariant returns the check of id (case-insensitive).
func LookupInvariant(id string) (Invariant, bool) {
	for _, inv := range invariants {
		if strings.EqualFold(inv.ID, id) {
			return inv, true
		}
	}
	return Invariant{}, false
}

// ExpectableIDs lists the ids of the checks that define a failure count
// (Invariant.FailCount), in report order: the ids a scenario may expect
// to fail.
func ExpectableIDs() []string {
	var ids []string
	for _, inv := range invariants {
		if inv.FailCount != "" {
			ids = append(ids, inv.ID)
		}
	}
	return ids
}

// FailureCount reads the failure count of check id from its evidence (as
// judged, or as read back from report.json), and says what it counts. ok
// is false when the check defines no count or the evidence lacks it.
func FailureCount(id string, evidence map[string]any) (n int64, of string, ok bool) {
	inv, found := LookupInvariant(id)
	if !found || inv.FailCount == "" {
		return 0, "", false
	}
	switch v := evidence[inv.FailCount].(type) {
	case int:
		return int64(v), inv.FailCountOf, true
	case int64:
		return v, inv.FailCountOf, true
	case float64:
		return int64(v), inv.FailCountOf, true
	}
	return 0, inv.FailCountOf, false
}

// IDRange spells the ids for messages, from the table, one range per
// letter: "I1-I9" for the core checks (pipeline false), "P1-P5 and E1-E5"
// for the pipeline's.
func IDRange(pipeline bool) string {
	var ranges []string
	var first, last string
	for _, inv := range invariants {
		if inv.Pipeline != pipeline {
			continue
		}
		if first != "" && inv.ID[0] != first[0] {
			ranges = append(ranges, first+"-"+last)
			first = ""
		}
		if first == "" {
			first = inv.ID
		}
		last = inv.ID
	}
	if first != "" {
		ranges = append(ranges, first+"-"+last)
	}
	return strings.Join(ranges, " and ")
}

// judge runs one check over f.
func (inv *Invariant) judge(f *Facts) Check {
	if why := inv.unexposed(f); why != "" {
		return Check{ID: inv.ID, Name: inv.Name, Status: StatusSkip, Detail: why,
			Evidence: map[string]any{"not_exposed": why}}
	}
	if inv.WholeLoad && f.Generator.Split() {
		return judgedOnMerge(inv, f.Generator)
	}
	began := time.Now()
	v := inv.Judge(f)
	c := Check{ID: inv.ID, Name: inv.Name, Status: StatusPass, Detail: v.Detail, Evidence: v.Evidence, Elapsed: time.Since(began)}
	if v.Failed && inv.ConsequenceOf != nil {
		c.ConsequenceOf = inv.ConsequenceOf(f, v)
	}
	if why := inv.uncompared(f); why != "" {
		c.Detail += " (not compared: " + why + ")"
		if c.Evidence == nil {
			c.Evidence = map[string]any{}
		}
		c.Evidence["not_compared"] = why
	}
	if v.Failed {
		c.Status = StatusFail
	}
	if inv.Applies != nil {
		if why := inv.Applies(f, v); why != "" {
			c.Status, c.Detail = StatusSkip, why
			return c
		}
	}
	if c.Status == StatusPass && inv.Vacuous != nil {
		if why := inv.Vacuous(f, v); why != "" {
			c.Status, c.Detail = StatusSkip, why
		}
	}
	return c
}

// unexposed says which of the facts the check needs the system under test
// does not expose ("" when it exposes them all).
func (inv *Invariant) unexposed(f *Facts) string {
	if inv.FromAnswers {
		return ""
	}
	return missingFacts(f, inv.Needs)
}

// uncompared says which of the facts the check compares against the
// system under test does not expose ("" when it exposes them all).
func (inv *Invariant) uncompared(f *Facts) string {
	if inv.FromAnswers {
		return missingFacts(f, append(slices.Clone(inv.Needs), inv.Compares...))
	}
	return missingFacts(f, inv.Compares)
}

func missingFacts(f *Facts, facts []sut.Fact) string {
	var missing []string
	for _, n := range facts {
		if f.Unexposed[n] {
			missing = append(missing, string(n))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "this system under test does not expose " + strings.Join(missing, " nor ")
}

// judgedOnMerge is the skip of a WholeLoad check on a generator's share:
// another generator's reservations and releases count in the counters but
// not in this history, so its verdict would be neither a fail nor a pass
// worth reading.
func judgedOnMerge(inv *Invariant, g history.Generator) Check {
	return Check{ID: inv.ID, Name: inv.Name, Status: StatusSkip,
		Detail:   fmt.Sprintf("generator %s of a split load: judged on the merge (seckill-harness verify over every generator's run)", g),
		Evidence: map[string]any{"generator": g.String(), "judged_on": "merge"}}
}

// JudgeFacts judges every check of the table that applies to f (the
// pipeline checks only when f.Pipeline is set, the end-to-end ones only
// when f.EndToEnd is), in table order. It is pure: it reads nothing but f.
func JudgeFacts(f *Facts) *CheckReport {
	rep := &CheckReport{Buckets: f.Stock, Unknown: unknownSummary(f)}
	if f.Unexposed[sut.Records] {
		rep.LostAcksNotJudged = "this system under test does not expose " + string(sut.Records)
	} else {
		rep.LostAcks = lostAcks(f)
	}
	if f.Keys != nil {
		ks := f.Keys.Space
		rep.KeySpace = &ks
	}
	for i := range invariants {
		inv := &invariants[i]
		if (inv.Pipeline && !inv.EndToEnd && f.Pipeline == nil) || (inv.EndToEnd && f.EndToEnd == nil) || (inv.LocalSoldOut && f.LocalSoldOutTTL <= 0) || (inv.Service && f.Answers == nil) {
			continue
		}
		rep.Checks = append(rep.Checks, inv.judge(f))
	}
	rep.Drawing = f.memo.linDrawing
	return rep
}

// JudgeServerSide judges only the table's ServerSide checks over f: what
// a run can still say when the activity's state could not be read back
// (CollectFacts failed), e.g. that a node evicted its keys.
func JudgeServerSide(f *Facts) []Check {
	var out []Check
	for i := range invariants {
		if inv := &invariants[i]; inv.ServerSide {
			out = append(out, inv.judge(f))
		}
	}
	return out
}

// InvariantsMarkdown is docs/CHECKS.md's table of checks, generated from
// the table (a test keeps docs/CHECKS.md equal to it).
func InvariantsMarkdown() string {
	var b strings.Builder
	b.WriteString("| id | name | contract | judged | skip when |\n|----|------|----------|--------|-----------|\n")
	for _, inv := range invariants {
		judged := "every run"
		switch {
		case inv.Service && inv.EndToEnd:
			judged = "runs against a service with a pipeline (orders in PostgreSQL)"
		case inv.EndToEnd:
			judged = "runs with a pipeline (orders in PostgreSQL)"
		case inv.Pipeline:
			judged = "runs with a pipeline"
		case inv.LocalSoldOut:
			judged = "runs with `--local-soldout`"
		case inv.Service:
			judged = "runs against a service (`--service`)"
		}
		skip := inv.SkipWhen
		if inv.WholeLoad {
			skip = strings.TrimPrefix(skip+"; a generator of a split load (judged on the merge)", "; ")
		}
		if skip == "" {
			skip = "never"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", inv.ID, inv.Name, inv.Contract, judged, skip)
	}
	return b.String()
}
