package reports

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"seckill-harness/internal/boundedread"
)

// Status is the verdict of one invariant or assertion.
type Status string

// Status values, as written in report.json.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
	// StatusInconclusive is an assertion the run could not judge: a
	// latency or throughput one that failed while the stand could not
	// sustain the plan (Assertion.Inconclusive says why), or a fault that
	// missed the system under test (Detail names the miss): neither a pass
	// nor a finding against the path under test. Invariants are never
	// inconclusive.
	StatusInconclusive Status = "inconclusive"
)

// Valid reports whether s is one of StatusPass, StatusFail, StatusSkip,
// StatusInconclusive.
func (s Status) Valid() bool {
	return s == StatusPass || s == StatusFail || s == StatusSkip || s == StatusInconclusive
}

// Outcome names the runner uses for the well-known outcomes. Any other
// string (a business code name such as "USER_ALREADY_RESERVED") is counted
// under its own name.
const (
	OutcomeAccepted = "ACCEPTED"
	OutcomeSoldOut  = "SOLD_OUT"
	// OutcomeUnknown: no reply (timeout, connection lost): the script may
	// have run.
	OutcomeUnknown = "UNKNOWN"
	// OutcomeError: a non-business error reply (CROSSSLOT, OOM, ...).
	OutcomeError = "ERROR"
	// OutcomeUnset is what a Recorder counts a sample with an empty
	// Outcome under, so a runner bug shows in the report.
	OutcomeUnset = "UNSET"
)

// Report is the content of report.json. The JSON names of the fields that
// are listed in docs/REPORT.md ("report.json") and are a contract parsed by CI jobs: do not rename
// them. Fields marked "additive" are extensions.
type Report struct {
	Scenario  string    `json:"scenario"`
	Seed      int64     `json:"seed"`
	Passed    bool      `json:"passed"`
	StartedAt time.Time `json:"started_at"` // RFC 3339 (with fractional seconds)
	DurationS float64   `json:"duration_s"` // wall-clock length of the load phase

	Versions Versions `json:"versions"`
	Topology Topology `json:"topology"`
	Load     Load     `json:"load"`
	Totals   Totals   `json:"totals"`

	ThroughputOpsPerS float64     `json:"throughput_ops_per_s"`
	LatencyMs         Percentiles `json:"latency_ms"`      // completion − intended send
	ServiceTimeMs     Percentiles `json:"service_time_ms"` // completion − actual send

	Phases     []Phase  `json:"phases"`
	Timeseries []Second `json:"timeseries"`
	Faults     []Fault  `json:"faults"`

	Stock    Stock   `json:"stock"`
	Unknown  Unknown `json:"unknown"`
	LostAcks int64   `json:"lost_acks"`
	// LostAcksNotJudged, when set, says why lost_acks was not counted
	// (0 then means "not judged"): the system under test does not expose
	// its reservation records (additive).
	LostAcksNotJudged string `json:"lost_acks_not_judged,omitempty"`

	Invariants []Invariant `json:"invariants"`
	Assertions []Assertion `json:"assertions"`

	// HistoryFile is the path of the per-operation history, if written
	// (additive).
	HistoryFile string `json:"history_file,omitempty"`
	// HGRMFile is the path of the latency .hgrm file, if written (additive).
	HGRMFile string `json:"hgrm_file,omitempty"`
	// Scenario is the fully resolved scenario the run executed (additive).
	ResolvedScenario map[string]any `json:"resolved_scenario,omitempty"`
	// Path is the reserve path driven: "reference" or a known-bad variant (additive).
	Path string `json:"path,omitempty"`
	// SystemUnderTest names what the run judged: the reference path, a
	// known-bad path or a team's script through an adapter file, with
	// each script's path and SHA1 (additive).
	SystemUnderTest *SystemUnderTest `json:"system_under_test,omitempty"`
	// Service is what a service under test answered over HTTP: the
	// client's policy, its answers by meaning, and vegeta's view of the
	// requests (additive; kind service only).
	Service *ServiceSection `json:"service,omitempty"`
	// Pipeline summarises the async stages after ACCEPTED (sends, duplicates,
	// unknown sends, orders, releases, stuck), when they ran (additive).
	Pipeline map[string]any `json:"pipeline,omitempty"`
	// HlogFile is the path of the HdrHistogram interval log (latency.hlog),
	// if written (additive).
	HlogFile string `json:"hlog_file,omitempty"`
	// HTMLFile is the path of the HTML report, if written (additive).
	HTMLFile string `json:"html_file,omitempty"`
	// LinearizabilityFile is the drawing of the smallest partition of the
	// history no order explains (linearizability.html), written beside
	// report.html when the linearizability check found one (additive).
	LinearizabilityFile string `json:"linearizability_file,omitempty"`
	// Interrupted is set when the load was stopped before its end (a signal,
	// a deadline): the report is partial and passed is false (additive).
	Interrupted *Interruption `json:"interrupted,omitempty"`
	// ReplicationLag is every replica's link status and offset lag, sampled
	// about once a second during the load (additive).
	ReplicationLag []ReplicationSample `json:"replication_lag,omitempty"`
	// ScriptKills lists the SCRIPT KILLs the harness sent because a script
	// of the path under test ran too long or a node answered BUSY (additive).
	ScriptKills []ScriptKill `json:"script_kills,omitempty"`
	// ErrorTexts holds, per error class, the first distinct error texts the
	// path under test answered: why operations ended in ERROR (additive).
	ErrorTexts map[string][]string `json:"error_texts,omitempty"`
	// Servers is the cluster's own view of the run: every node's
	// per-second series, the slow log, the latency monitor, the scripts'
	// command statistics and the client's connection pool (additive; see
	// the Servers type).
	Servers *Servers `json:"servers,omitempty"`
	// Aim says how the faults' hot-* targets were chosen (additive; nil
	// without faults).
	Aim *Aim `json:"aim,omitempty"`
	// UnplannedEvents are the events the cluster showed that no planned
	// fault explains (an automatic failover, a restart, cluster_state:fail,
	// a full resync …; see Event), in time order (additive). They are
	// evidence: they do not fail a run by themselves; the verdict line
	// names the ones the scenario does not tolerate.
	UnplannedEvents []Event `json:"unplanned_events,omitempty"`
	// AttributedEvents are the events detected and attributed to a planned
	// fault (Event.Fault names it) (additive).
	AttributedEvents []Event `json:"attributed_events,omitempty"`

	// Pool is the load client's connection pool during the load: size,
	// waits, wait time and pool timeouts per second (additive).
	Pool *Pool `json:"pool,omitempty"`

	// Sources lists the runs a merged report was made from (additive;
	// empty for a single run). See MergeRuns.
	Sources []Source `json:"sources,omitempty"`
	// Compare is the side-by-side result of a compare run (additive;
	// absent for other runs).
	Compare *CompareResult `json:"compare,omitempty"`
	// Capacity is the rate/latency curve of a capacity run (additive;
	// absent for other runs).
	Capacity *CapacityResult `json:"capacity,omitempty"`
	// WarmUp is what the run readied before its t=0 and how long that took
	// (additive; absent when the run had no warm-up step).
	WarmUp *WarmUp `json:"warm_up,omitempty"`
	// KeySpace is the activity's keys as read back after the run: their
	// expiries against the retention time (check K1) and the size figures
	// of a capacity plan (additive; see the KeySpace type).
	KeySpace *KeySpace `json:"keyspace,omitempty"`
	// LocalSoldOut is what the reserve path's local sold-out flag
	// (--local-soldout) saved and cost (additive; absent without the flag).
	LocalSoldOut *LocalSoldOut `json:"local_soldout,omitempty"`
	// Wait is what WAIT after each ACCEPTED confirmed, and what it cost
	// (additive; absent unless the run sent WAIT: --wait-replicas).
	Wait *WaitSummary `json:"wait,omitempty"`
	// Host is the machine's and the harness's view of each second of the
	// load, and the harness stalls (additive; see the Host type).
	Host *Host `json:"host,omitempty"`
	// Baseline is run --baseline's comparison with the results history
	// (additive; see the Baseline type).
	Baseline *Baseline `json:"baseline,omitempty"`
}

// LocalSoldOut is report.json's local_soldout: the process-local sold-out
// flag of the reserve path. Each simulated service instance keeps a flag
// per bucket, set when Redis answers SOLD_OUT, broadcast to the other
// instances over Redis Pub/Sub, and held for TTL; while it holds, that
// instance answers SOLD_OUT itself (outcome LOCAL_SOLD_OUT) without a
// Redis call. The cost is the false sold-out window: a unit released
// after its bucket sold out is sold again only when some instance's flag
// has expired and it asks Redis again.
type LocalSoldOut struct {
	TTLMs     int64 `json:"ttl_ms"`
	Instances int   `json:"instances"`
	// AnsweredLocally counts the LOCAL_SOLD_OUT answers; each is a reserve
	// call Redis did not get (RedisCallsSaved, the same figure).
	AnsweredLocally int64 `json:"answered_locally"`
	RedisCallsSaved int64 `json:"redis_calls_saved"`
	// RedisCallsAfterSellOut counts the reserve calls on the wire that
	// started after their bucket's first SOLD_OUT from Redis.
	RedisCallsAfterSellOut int64 `json:"redis_calls_after_sell_out"`
	// Pub/Sub: notices published (a flag newly set by a SOLD_OUT), notices
	// received by another instance and applied, notices dropped by the
	// soldout-notice-lost fault; flags set by an answer and by a notice.
	NoticesPublished int64 `json:"notices_published"`
	NoticesReceived  int64 `json:"notices_received"`
	NoticesDropped   int64 `json:"notices_dropped"`
	FlagsSetByAnswer int64 `json:"flags_set_by_answer"`
	FlagsSetByNotice int64 `json:"flags_set_by_notice"`
	// Recovery: releases after their bucket's sell-out (units made
	// available again), how many were sold again, within TTL plus
	// RecoverySlackMs, never (although the load ran TTL plus the slack
	// past the release), and not judged (released too near the end).
	ReleasesAfterSellOut int   `json:"releases_after_sell_out"`
	Recovered            int   `json:"recovered"`
	RecoveredWithinTTL   int   `json:"recovered_within_ttl"`
	Unrecovered          int   `json:"unrecovered"`
	NotJudged            int   `json:"not_judged"`
	RecoverySlackMs      int64 `json:"recovery_slack_ms"`
	// FalseSoldOutWindowMs is, over the recovered releases, the time from
	// the release to the reserve that sold the unit again (the undersell
	// window); FalseSoldOutAnswers the LOCAL_SOLD_OUT answers given in a
	// bucket inside such a window.
	FalseSoldOutWindowMs Percentiles `json:"false_sold_out_window_ms"`
	FalseSoldOutAnswers  int         `json:"false_sold_out_answers"`
	// UnrecoveredExamples names a few releases never sold again.
	UnrecoveredExamples []string `json:"unrecovered_examples,omitempty"`
}

// WaitSummary is report.json's "wait": the reserve option that sends
// `WAIT replicas timeout` after each fresh ACCEPTED answer on the
// connection that ran the script. Answers are ACCEPTED answers of the
// history; lost counts are reservations (as lost_acks). WAIT's round trip
// is inside every latency figure of the report too: the client's answer
// waits for it.
type WaitSummary struct {
	Replicas  int     `json:"replicas"`
	TimeoutMs float64 `json:"timeout_ms"`
	// AcksConfirmed are the ACCEPTED answers WAIT confirmed (at least
	// replicas acknowledged); AcksNotConfirmed the others: WAIT answered
	// fewer (its timeout passed), failed, or was not sent (a replayed
	// ACCEPTED: its write was an earlier call's).
	AcksConfirmed    int64 `json:"acks_confirmed"`
	AcksNotConfirmed int64 `json:"acks_not_confirmed"`
	WaitsSent        int64 `json:"waits_sent"`
	// LostAcks is report.lost_acks again (every lost acknowledged
	// reservation); LostConfirmed those of them with a WAIT-confirmed
	// answer (I10 fails when it is not 0), LostNotConfirmed the rest.
	LostAcks         int64 `json:"lost_acks"`
	LostConfirmed    int64 `json:"lost_confirmed"`
	LostNotConfirmed int64 `json:"lost_not_confirmed"`
	// LatencyMs are WAIT's round trips (sent WAITs only).
	LatencyMs Percentiles `json:"latency_ms"`
}

// Line is the summaries' one line on WAIT.
func (w *WaitSummary) Line() string {
	return fmt.Sprintf("WAIT %d %gms after each ACCEPTED: %d acks confirmed, %d not; lost acks %d, of them WAIT-confirmed %d; WAIT p50 %.2f ms, p99 %.2f ms, max %.2f ms (inside the latency above)",
		w.Replicas, w.TimeoutMs, w.AcksConfirmed, w.AcksNotConfirmed, w.LostAcks, w.LostConfirmed, w.LatencyMs.P50, w.LatencyMs.P99, w.LatencyMs.Max)
}

// WarmUp is the step before t=0 that keeps the harness's own start-up out
// of the first second: every connection the load will use dialled through
// the load's client (and its proxies), the scripts loaded on every master,
// the workers started, and the cluster settled (no fork, replicas online).
// Its time is not part of duration_s, of any latency or of any timeseries
// second; Excluded says what, if anything, was left out of the statistics.
type WarmUp struct {
	DurationS float64 `json:"duration_s"` // wall time of the whole warm-up, before t=0
	// SettleWaitS is how long the cluster took to settle (part of duration_s).
	SettleWaitS float64 `json:"settle_wait_s"`
	Settled     bool    `json:"settled"`
	// Unsettled names what was still moving when the settle wait gave up.
	Unsettled []string `json:"unsettled,omitempty"`
	// ConnsPerMaster is the number of connections dialled per master: the
	// most workers any phase runs (capped at the client's pool size).
	ConnsPerMaster int `json:"conns_per_master"`
	// Masters is each master as the load's client saw it at the end of
	// the warm-up: connections open in its pool, scripts cached.
	Masters []WarmMaster `json:"masters"`
	// WorkersBeforeT0 is true when the first phase's workers were running
	// before t=0.
	WorkersBeforeT0 bool `json:"workers_before_t0"`
	// Excluded states what the warm-up keeps out of the run's figures.
	Excluded string `json:"excluded"`
	// Problems lists what the warm-up could not ready (the load runs anyway
	// and meets it on its own clock).
	Problems []string `json:"problems,omitempty"`
}

// WarmMaster is one master after the warm-up.
type WarmMaster struct {
	Addr    string `json:"addr"`
	Conns   int    `json:"conns"`
	Scripts int    `json:"scripts"` // scripts of the path under test cached there
}

// Versions of the parts the run used.
type Versions struct {
	Harness string `json:"harness"`
	Redis   string `json:"redis"`
	GoRedis string `json:"go_redis"`
	Go      string `json:"go,omitempty"`      // additive: runtime.Version()
	Scripts string `json:"scripts,omitempty"` // additive: which Lua scripts (path or SHA)
}

// Topology of the cluster under test.
type Topology struct {
	Masters           int      `json:"masters"`
	ReplicasPerMaster int      `json:"replicas_per_master"`
	Provider          string   `json:"provider"`          // "local", "compose", "testcontainers", "external"
	Nodes             []string `json:"nodes,omitempty"`   // additive: node addresses
	Proxied           bool     `json:"proxied,omitempty"` // additive: client connections went through toxiproxy
	// SettleWaitMs (additive): how long the run waited, before judging a
	// cluster it did not create, for every node to agree on its topology;
	// absent when the harness formed the cluster itself.
	SettleWaitMs *int64 `json:"settle_wait_ms,omitempty"`
}

// Load describes the offered load.
type Load struct {
	Mode       string  `json:"mode"`  // "open" or "closed"
	Shape      string  `json:"shape"` // "constant", "linear", "sine", ...
	TargetRate float64 `json:"target_rate"`
	Users      int64   `json:"users"`
	Stock      int64   `json:"stock"`
	Buckets    int     `json:"buckets"`

	Concurrency int            `json:"concurrency,omitempty"` // additive: workers
	DurationS   float64        `json:"duration_s,omitempty"`  // additive: planned length
	TimeoutMs   float64        `json:"timeout_ms,omitempty"`  // additive: per-call timeout
	ShapeParams map[string]any `json:"shape_params,omitempty"`
}

// Totals over the whole run.
type Totals struct {
	// Ops counts operations that were sent (Dropped ones excluded); the
	// outcome counts add up to Ops.
	Ops int64 `json:"ops"`
	// WireAttempts counts calls that went on the wire, retries included.
	WireAttempts int64 `json:"wire_attempts"`
	// LateStarts counts operations sent more than LateStartThresholdMs
	// after their intended time.
	LateStarts int64 `json:"late_starts"`
	// Dropped counts scheduled operations that were never sent.
	Dropped  int64            `json:"dropped"`
	Outcomes map[string]int64 `json:"outcomes"`

	LateStartThresholdMs float64 `json:"late_start_threshold_ms"` // additive
	// PacerClock is what the open-loop pacer slept on: "timerfd" (the
	// kernel's high-resolution timer) or "go-timer" (about 1 ms grained,
	// when no timerfd could be had: expect late starts from the pacer
	// itself). Empty for closed-loop runs, which are not paced. Merged:
	// the coarsest of the generators' clocks.
	PacerClock string           `json:"pacer_clock,omitempty"`
	Errors     map[string]int64 `json:"errors"`  // additive: error class → count
	Clamped    Clamps           `json:"clamped"` // additive
}

// Clamps counts recorded durations that fell outside the histogram range
// [1 µs, 60 s] and were clamped to it (additive). A negative duration (end
// before start) counts as low.
type Clamps struct {
	LatencyLow  int64 `json:"latency_low"`
	LatencyHigh int64 `json:"latency_high"`
	ServiceLow  int64 `json:"service_low"`
	ServiceHigh int64 `json:"service_high"`
}

// Total is the sum of all four counts.
func (c Clamps) Total() int64 {
	return c.LatencyLow + c.LatencyHigh + c.ServiceLow + c.ServiceHigh
}

// Percentiles of a distribution, in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// Phase summarises the operations whose INTENDED send time fell in
// [StartS, EndS).
type Phase struct {
	Name      string      `json:"name"`
	StartS    float64     `json:"start_s"`
	EndS      float64     `json:"end_s"`
	Ops       int64       `json:"ops"`
	LatencyMs Percentiles `json:"latency_ms"`

	ServiceTimeMs Percentiles      `json:"service_time_ms"` // additive
	Outcomes      map[string]int64 `json:"outcomes"`        // additive
	Dropped       int64            `json:"dropped"`         // additive
	// ThroughputOpsPerS: operations that COMPLETED inside the phase window,
	// divided by the window length (additive).
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
}

// Second summarises one second of the run: the operations whose intended
// send time t satisfies TS <= t < TS+1 (seconds from the run start).
// Its percentiles come from 3-significant-digit histograms (within 0.1%).
type Second struct {
	TS       int64            `json:"t_s"`
	Ops      int64            `json:"ops"`
	Outcomes map[string]int64 `json:"outcomes"`
	P50Ms    float64          `json:"p50_ms"`
	P99Ms    float64          `json:"p99_ms"`
	MaxMs    float64          `json:"max_ms"`

	// Additive.
	P95Ms        float64 `json:"p95_ms"`
	P999Ms       float64 `json:"p999_ms"`
	ServiceP50Ms float64 `json:"service_p50_ms"`
	ServiceP99Ms float64 `json:"service_p99_ms"`
	ServiceMaxMs float64 `json:"service_max_ms"`
	// Errors counts operations of this second without a business answer
	// (outcome UNKNOWN or ERROR).
	Errors  int64 `json:"errors"`
	Dropped int64 `json:"dropped"`
	// Completed counts operations that COMPLETED during this second,
	// whatever their intended time: it drops to 0 during a stall.
	Completed int64 `json:"completed"`
}

// Fault is one injected fault and the proof that it happened.
type Fault struct {
	Kind        string         `json:"kind"`
	Target      string         `json:"target"`
	Params      map[string]any `json:"params"`
	InjectedAtS float64        `json:"injected_at_s"`
	// HealedAtS: when the heal completed (0 and Healed false: never).
	HealedAtS float64        `json:"healed_at_s"`
	Evidence  map[string]any `json:"evidence"`

	Name      string `json:"name,omitempty"`       // additive: the scenario's name for it
	Healed    bool   `json:"healed"`               // additive
	HealError string `json:"heal_error,omitempty"` // additive
	// Aim is, for a fault that acts on Redis masters and says which
	// (failover, partition, slot-migration), how its target was chosen
	// and the share of the system under test's Redis traffic it served
	// before the injection (additive).
	Aim *FaultAim `json:"aim,omitempty"`
}

// Aim is how a run's hot-* fault targets (hot-master, hot-replica,
// slot-migration's hot slot) are chosen: from where the system under test
// keeps its sale.
type Aim struct {
	// ChosenBy: "reference contract keys", "adapter hash_tag {…}",
	// "service mapping hash_tag {…}" or "observed traffic" (the master
	// that served the most of the system's Redis traffic before each
	// injection).
	ChosenBy string `json:"chosen_by"`
	// Slots are the sale's slots by bucket (none when observed).
	Slots []int `json:"slots,omitempty"`
}

// FaultAim is where a fault acted against where the system under test
// keeps its sale.
type FaultAim struct {
	// ChosenBy is how the hot-* target was chosen: "reference contract
	// keys", "adapter hash_tag {…}", "service mapping hash_tag {…}",
	// "observed traffic", or "the scenario" for an explicit target
	// (node=, slot=, all-masters).
	ChosenBy string `json:"chosen_by"`
	// Masters are the masters the fault acted on.
	Masters []string `json:"masters"`
	// WindowS is the window before the injection the traffic was read
	// over; Commands the system's Redis commands in it on every master
	// (the harness's own upkeep left out), TargetCommands those on
	// Masters, Share their ratio (nil: no traffic seen, share unknown).
	WindowS        float64          `json:"window_s"`
	Commands       int64            `json:"commands"`
	TargetCommands int64            `json:"target_commands"`
	Share          *float64         `json:"share,omitempty"`
	ByMaster       map[string]int64 `json:"by_master,omitempty"`
	// Missed, when set, says the fault missed the system under test:
	// where its sale is and where the fault acted.
	Missed string `json:"missed,omitempty"`
}

// Stock is the final stock state, total and per bucket.
type Stock struct {
	Initial       int64         `json:"initial"`
	Available     int64         `json:"available"`
	Reserved      int64         `json:"reserved"`
	ReleasedTotal int64         `json:"released_total"`
	Buckets       []BucketStock `json:"buckets"`
}

// BucketStock is the final stock hash of one bucket.
type BucketStock struct {
	Bucket        int   `json:"bucket"`
	Initial       int64 `json:"initial"`
	Available     int64 `json:"available"`
	Reserved      int64 `json:"reserved"`
	ReleasedTotal int64 `json:"released_total"`
}

// Unknown is how the operations with outcome UNKNOWN were resolved by
// reading their request results.
type Unknown struct {
	Total       int64 `json:"total"`
	Executed    int64 `json:"executed"`
	NotExecuted int64 `json:"not_executed"`
	Unresolved  int64 `json:"unresolved"` // additive: could not be read
}

// Invariant is the verdict of one invariant check (one entry of the
// checker's table, checks.Invariants, e.g. I3 no_oversell).
type Invariant struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Status   Status         `json:"status"`
	Detail   string         `json:"detail"`
	Evidence map[string]any `json:"evidence"`
	// Waived: the scenario reports this invariant but does not require it
	// (e.g. lost acks under failover-kill): a failure does not fail the run.
	Waived bool `json:"waived,omitempty"`
	// ConsequenceOf names the invariant whose failure wholly explains this
	// one's (I3's oversell when every unit sold beyond the stock was sold
	// again after its reservation was lost: I6; I4's double
	// acknowledgements when each is another user's ACCEPTED answered to a
	// reused request id: I5). When the scenario does
	// not require that invariant, this failure is waived too, and its
	// detail says so (additive).
	ConsequenceOf string `json:"consequence_of,omitempty"`
	// Expected: the scenario expects this invariant to fail (a
	// demonstration of a known loss window). Its failure then does not fail
	// the run by itself: the assertion "<id> fails as expected" does, when
	// the check did not fail with at least Min of what it counts.
	Expected *ExpectedFailure `json:"expected,omitempty"`
	// Events are the planned faults and unplanned events that overlap the
	// check's violations (failing checks only; additive).
	Events []CheckEvent `json:"events,omitempty"`
	// ElapsedMs is how long judging the check took, in milliseconds
	// (additive; 0 and absent in reports that did not time it).
	ElapsedMs float64 `json:"elapsed_ms,omitempty"`
}

// ExpectedFailure is an invariant's expected failure and whether it came.
type ExpectedFailure struct {
	Min     int64  `json:"min"`      // the fewest counted failures expected
	Count   int64  `json:"count"`    // counted in the check's evidence
	CountOf string `json:"count_of"` // what is counted, e.g. "acknowledged reservations lost"
	Met     bool   `json:"met"`      // status fail and count >= min
}

// Assertion is the verdict of one scenario assertion (for example a
// latency bound).
type Assertion struct {
	Name     string  `json:"name"`
	Status   Status  `json:"status"`
	Observed float64 `json:"observed"`

	Threshold *float64 `json:"threshold,omitempty"` // additive
	Unit      string   `json:"unit,omitempty"`      // additive, e.g. "ms"
	Detail    string   `json:"detail,omitempty"`    // additive

	// Judges says what the assertion bounds when it is a performance
	// figure: "latency" or "throughput" (additive; empty for every other
	// assertion). Only these may become inconclusive.
	Judges string `json:"judges,omitempty"`
	// Phase is the report phase whose figure was judged ("" the whole
	// run) (additive).
	Phase string `json:"phase,omitempty"`
	// Inconclusive is set with status inconclusive: the rule and the
	// evidence that the stand could not sustain the plan (additive).
	Inconclusive *Inconclusive `json:"inconclusive,omitempty"`
	// Events: as Invariant.Events (additive).
	Events []CheckEvent `json:"events,omitempty"`
}

// ReplicationSample is every replica's replication state at one instant.
type ReplicationSample struct {
	TS       float64      `json:"t_s"` // seconds since the start of the load
	Replicas []ReplicaLag `json:"replicas"`
}

// ReplicaLag is one replica's replication state: its link and how many
// bytes of its master's stream it has not received yet (nil: unknown, the
// node did not answer).
type ReplicaLag struct {
	Replica       string `json:"replica"`
	Master        string `json:"master"`
	LinkStatus    string `json:"link_status"` // up, down, or "" (no answer)
	MasterOffset  *int64 `json:"master_repl_offset,omitempty"`
	ReplicaOffset *int64 `json:"replica_offset,omitempty"`
	LagBytes      *int64 `json:"lag_bytes,omitempty"`
}

// ScriptKill is one SCRIPT KILL the harness sent.
type ScriptKill struct {
	Node   string    `json:"node"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// Interruption says why and when a run was stopped before its end.
type Interruption struct {
	Reason string  `json:"reason"` // e.g. "interrupt signal received", "terminated signal received"
	AtS    float64 `json:"at_s"`   // seconds into the load
}

// FailedChecks lists the failed checks: the IDs of failed invariants (or
// their names when the ID is empty) then the names of failed assertions.
// It is nil when nothing failed.
func (r *Report) FailedChecks() []string {
	var out []string
	for _, inv := range r.Invariants {
		if inv.Status == StatusFail && !inv.Waived && inv.Expected == nil {
			if inv.ID != "" {
				out = append(out, inv.ID)
			} else {
				out = append(out, inv.Name)
			}
		}
	}
	for _, a := range r.Assertions {
		if a.Status == StatusFail {
			out = append(out, a.Name)
		}
	}
	return out
}

// InconclusiveChecks lists the names of the assertions reported
// inconclusive (nil: none).
func (r *Report) InconclusiveChecks() []string {
	var out []string
	for _, a := range r.Assertions {
		if a.Status == StatusInconclusive {
			out = append(out, a.Name)
		}
	}
	return out
}

// IsInconclusive reports a run whose only shortfall is inconclusive
// assertions: nothing failed, it was not interrupted, and at least one
// assertion is inconclusive (exit 3).
func (r *Report) IsInconclusive() bool {
	return !r.Passed && r.Interrupted == nil && len(r.FailedChecks()) == 0 && len(r.InconclusiveChecks()) > 0
}

// Verdict is the final line of the text summary: "PASS", "INCONCLUSIVE
// (…)" when only inconclusive assertions kept it from passing, or
// "FAIL (n checks failed: I3, I6)". It is FAIL when a check failed or
// when Passed is false otherwise.
func (r *Report) Verdict() string {
	failed := r.FailedChecks()
	switch {
	case len(failed) == 0 && r.Passed:
		return "PASS"
	case r.IsInconclusive():
		var inc, missed []string
		for _, a := range r.Assertions {
			switch {
			case a.Status != StatusInconclusive:
			case a.Inconclusive == nil && a.Detail != "":
				missed = append(missed, a.Detail) // a fault that missed the system under test
			default:
				inc = append(inc, a.Name)
			}
		}
		var why []string
		if len(inc) > 0 {
			why = append(why, "the stand could not sustain the plan: "+strings.Join(inc, ", "))
		}
		return fmt.Sprintf("INCONCLUSIVE (%s)", strings.Join(append(why, missed...), "; "))
	case len(failed) == 0:
		return "FAIL (passed=false, no invariant or assertion failed)"
	}
	if r.Interrupted != nil {
		failed = append([]string{fmt.Sprintf("INTERRUPTED at %.1fs (%s)", r.Interrupted.AtS, r.Interrupted.Reason)}, failed...)
	}
	noun := "checks"
	if len(failed) == 1 {
		noun = "check"
	}
	s := fmt.Sprintf("FAIL (%d %s failed: %s)", len(failed), noun, strings.Join(failed, ", "))
	if inc := r.InconclusiveChecks(); len(inc) > 0 {
		s += fmt.Sprintf(" (inconclusive: %s)", strings.Join(inc, ", "))
	}
	if r.Passed {
		s += " [report says passed=true]"
	}
	return s
}

// MarshalJSON writes the report with every nil slice or map of the
// contract as [] or {} (never null), and the four well-known outcomes
// always present in totals.outcomes.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report // no methods: avoids recursion
	n := plain(r)

	n.Totals.Outcomes = withOutcomeKeys(n.Totals.Outcomes)
	n.Totals.Errors = nonNilMap(n.Totals.Errors)

	n.Phases = cloneSlice(n.Phases)
	for i := range n.Phases {
		n.Phases[i].Outcomes = nonNilMap(n.Phases[i].Outcomes)
	}
	n.Timeseries = cloneSlice(n.Timeseries)
	for i := range n.Timeseries {
		n.Timeseries[i].Outcomes = nonNilMap(n.Timeseries[i].Outcomes)
	}
	n.Faults = cloneSlice(n.Faults)
	for i := range n.Faults {
		n.Faults[i].Params = nonNilMap(n.Faults[i].Params)
		n.Faults[i].Evidence = nonNilMap(n.Faults[i].Evidence)
	}
	n.Stock.Buckets = cloneSlice(n.Stock.Buckets)
	n.Invariants = cloneSlice(n.Invariants)
	for i := range n.Invariants {
		n.Invariants[i].Evidence = nonNilMap(n.Invariants[i].Evidence)
	}
	n.Assertions = cloneSlice(n.Assertions)
	if n.Compare != nil {
		c := *n.Compare
		c.Variants = cloneSlice(c.Variants)
		for i := range c.Variants {
			c.Variants[i].Outcomes = withOutcomeKeys(c.Variants[i].Outcomes)
			c.Variants[i].Stock.Buckets = cloneSlice(c.Variants[i].Stock.Buckets)
		}
		n.Compare = &c
	}
	if n.Capacity != nil {
		c := *n.Capacity
		c.Steps = cloneSlice(c.Steps)
		n.Capacity = &c
	}
	return json.Marshal(n)
}

// cloneSlice returns a copy of s that is never nil.
func cloneSlice[T any](s []T) []T {
	return append(make([]T, 0, len(s)), s...)
}

func nonNilMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

func withOutcomeKeys(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m)+4)
	for _, k := range []string{OutcomeAccepted, OutcomeSoldOut, OutcomeUnknown, OutcomeError} {
		out[k] = 0
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// MaxReportBytes is the largest report.json ReadJSON reads (256 MiB; a
// 24-hour run's report, one time-series point per second, takes a tenth).
const MaxReportBytes = 256 * boundedread.MiB

// WriteJSON writes the report to path as indented JSON with a trailing
// newline, atomically (WriteFileAtomic): a reader never sees a
// half-written report, and a symlink at path is replaced, not followed.
func (r *Report) WriteJSON(path string) error {
	return WriteFileAtomicFunc(path, r.encodeJSON)
}

// ReadJSON reads a report written by WriteJSON (unknown fields are
// ignored, so newer reports still read). Numbers inside the free-form
// maps (params, evidence) come back as float64.
//
// A path that is not a regular file or holds more than MaxReportBytes is
// refused unread.
func ReadJSON(path string) (*Report, error) {
	b, err := boundedread.File(path, MaxReportBytes, "report", "give the run directory seckill-harness wrote (its report.json is a regular file far under the limit)")
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reports: parse %s: %w: it is not a report.json seckill-harness wrote; give the run directory of a finished run", path, err)
	}
	return &r, nil
}

// SystemUnderTest is report.json's system_under_test.
type SystemUnderTest struct {
	Name string `json:"name"`
	// Kind is "reference" (the harness's own scripts, embedded or
	// --lua-dir), "path" (a known-bad path of the self-test) or "adapter"
	// (a team's script through an adapter file) or "service" (a running
	// access service, over HTTP).
	Kind string `json:"kind"`
	// Adapter is the adapter file, as given (kind adapter).
	Adapter string `json:"adapter,omitempty"`
	// URL is the service's URL (kind service).
	URL string `json:"url,omitempty"`
	// Mapping is the service mapping file, as given ("" : the HTTP
	// contract's defaults; kind service).
	Mapping string `json:"mapping,omitempty"`
	// Scripts are the scripts the system runs, each with its role
	// (reserve, release, setup, transition, compensate), path and SHA1.
	Scripts []SUTScript `json:"scripts,omitempty"`
	// Notes say what the run did differently for this system (e.g. a
	// load's release share not sent to a file without release:).
	Notes []string `json:"notes,omitempty"`
}

// SUTScript is one script of the system under test.
type SUTScript struct {
	Role string `json:"role"`
	Path string `json:"path"`
	SHA1 string `json:"sha1"`
}

// Line is the system in one line, its reserve script's SHA1 shortened to
// 12 digits: "adapter cluster-safe (docs/adapters/cluster-safe.yaml;
// reserve cluster-safe.lua sha1 1a2b3c4d5e6f)".
func (s *SystemUnderTest) Line() string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, p := range []string{s.Adapter, s.URL, s.Mapping} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	for _, sc := range s.Scripts {
		if sc.Role == "reserve" { // the others are in report.json
			parts = append(parts, fmt.Sprintf("%s %s sha1 %.12s", sc.Role, filepath.Base(sc.Path), sc.SHA1))
		}
	}
	out := s.Kind + " " + s.Name
	if len(parts) > 0 {
		out += " (" + strings.Join(parts, "; ") + ")"
	}
	return out
}

// LostAcksText is lost_acks as the summaries show it: "-" when it was not
// judged (LostAcksNotJudged).
func (r *Report) LostAcksText() string {
	if r.LostAcksNotJudged != "" {
		return "-"
	}
	return strconv.FormatInt(r.LostAcks, 10)
}

// notJudged is the sub-line of a figure that was not judged ("" when it was).
func notJudged(why string) string {
	if why == "" {
		return ""
	}
	return "not judged"
}
