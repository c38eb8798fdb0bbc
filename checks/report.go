package checks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
)

// The checker judges the checks of the table (table.go) in two steps:
// CollectFacts (collect.go) reads what the checks need from the system
// under test once, then JudgeFacts judges every check as a pure function
// of those facts. This file holds the checker's types and its entry
// point, Judge; each family's judges are in their own file (core.go,
// wait.go, keys.go, localsoldout.go, pipeline.go, e2e.go).

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
	// ConsequenceOf: a failure wholly explained by another check's
	// (Verdict.ConsequenceOf); "" otherwise.
	ConsequenceOf string
	// Elapsed is how long judging the check took (report.json's
	// invariants[].elapsed_ms).
	Elapsed time.Duration
}

// CheckInput is what the checker needs besides the Redis state.
type CheckInput struct {
	History *history.History
	Samples []history.StockSample
	// FaultsInjected turns the no-undersell check (I9) into a report of the
	// stock left behind: a fault may legitimately leave stock unsold.
	FaultsInjected bool
	// LocalSoldOutTTL is the TTL of the local sold-out flag the run's
	// reserve path had (L1 judges its recovery); 0: none.
	LocalSoldOutTTL time.Duration
	// Generator is the share of the load this history holds. When the load
	// was split (N > 1) the checks that compare the activity's global
	// counters with the records reachable from this history (the table's
	// WholeLoad checks) report skip, "judged on the merge": only the union
	// of every generator's history can judge them (seckill-harness verify).
	Generator history.Generator
	// ClockSkew bounds how far apart the clocks of merged histories may be
	// (generators on several machines): I9 only counts a SOLD_OUT that
	// started more than this after the bucket's last release. 0 for one run.
	ClockSkew time.Duration
	// Pipeline is the pipeline's event log (after Stop) when the run had
	// one: the pipeline checks are then judged too, from the same reads.
	// History must then hold the pipeline's releases (WithPipelineReleases),
	// so that I4, I8 and I9 count them.
	Pipeline *PipelineEvidence
	// Orders is the pipeline's order database, when it had one: the
	// end-to-end checks are then judged too (Facts.EndToEnd). History
	// keeps the pipeline's releases apart by FlagPipelineRelease.
	Orders *pipeline.Orders
	// Evictions are the servers' evicted_keys counters over the run, read
	// by the caller (the lifecycle's servers sampler) for K2; nil: not
	// read (K2 then reports skip).
	Evictions *EvictionFacts
	// ExpiryAllowances are the buckets whose keys a fault may have moved to
	// a later absolute expiry (a slot migration), with the measured
	// allowance K1 grants them beyond the retention time; nil: none, every
	// key is held to the retention time exactly.
	ExpiryAllowances []reports.ExpiryAllowance
	// Preflight is what the system's pre-flight found before the load
	// (sut.Preflighter; A1 judges it); nil: the system has none.
	Preflight *sut.Preflight
	// Service is what the lifecycle saw of the connections of the service
	// it started as a child (R1); nil: no service child (R1 skips).
	Service *ServiceRoutingFacts
	// Masterless are the windows in which a fault left slots without a
	// master (faults.Masterless), by bucket of the activity: a service
	// under test must fail closed for them (fail_closed).
	Masterless []MasterlessWindow
}

// UnknownSummary is how the UNKNOWN outcomes were resolved (I7).
type UnknownSummary struct {
	Total, Executed, NotExecuted, Unresolved int
	ResolvedByRetry                          int // operations whose send lost a reply and whose same-id re-send answered
}

// CheckReport is the checker's whole answer.
type CheckReport struct {
	Checks   []Check     // in the table's order
	Buckets  []lua.Stock // final stock per bucket, read back from Redis
	Unknown  UnknownSummary
	LostAcks []string // acknowledged reservation ids missing from Redis
	// LostAcksNotJudged is why LostAcks was not counted ("" when it was):
	// the system does not expose its records, so none can be missing.
	LostAcksNotJudged string
	// KeySpace is the activity's keys as read back (report.json's
	// keyspace); nil when they were not read.
	KeySpace *reports.KeySpace
	// Drawing is the linearizability check's drawing of the smallest
	// partition of the history no order explains; nil when it found none.
	Drawing *LinDrawing
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

// AllRequiredSkipped reports whether every required check skipped: the
// run then judged nothing and must not pass, however green it looks.
// required lists the required ids (case-insensitive); nil means every
// check in the report. The reason names each skipped check and why, e.g.
// "every required invariant skipped: I3 (no ACCEPTED answer), …". A
// required id absent from the report counts as not judged. A report
// without checks has judged nothing.
func (r *CheckReport) AllRequiredSkipped(required []string) (bool, string) {
	return allRequiredSkipped(r.Checks, required)
}

func allRequiredSkipped(checks []Check, required []string) (bool, string) {
	var why []string
	judged := func(c Check) bool {
		if c.Status != StatusSkip {
			return true
		}
		why = append(why, fmt.Sprintf("%s (%s)", c.ID, c.Detail))
		return false
	}
	if required == nil {
		for _, c := range checks {
			if judged(c) {
				return false, ""
			}
		}
	} else {
		for _, id := range required {
			found := false
			for _, c := range checks {
				if strings.EqualFold(c.ID, id) {
					found = true
					if judged(c) {
						return false, ""
					}
				}
			}
			if !found {
				why = append(why, strings.ToUpper(id)+" (not in the report)")
			}
		}
	}
	if len(why) == 0 {
		return true, "no invariant was judged"
	}
	return true, "every required invariant skipped: " + strings.Join(why, ", ")
}

// Judge reads back, once, what sys exposes of the state of sale's activity
// (CollectFacts) and judges every check of the table that applies
// (JudgeFacts): the core checks, the pipeline checks when in.Pipeline is
// set, the end-to-end ones when in.Orders is too. A check whose facts sys
// does not expose skips, saying so. A Go error means the state could not
// be read (the checks are then unknown, not passed).
func Judge(ctx context.Context, sale sut.Sale, sys sut.System, in CheckInput) (*CheckReport, error) {
	f, err := CollectFacts(ctx, sale, sys, in)
	if err != nil {
		return nil, err
	}
	return JudgeFacts(f), nil
}

// Fill adds the checks to rep (built by runner.BuildReport from the run's
// history h): the stock read back, the UNKNOWN outcomes, the lost
// acknowledgements, the keyspace, the WAIT summary under wait, the
// invariants; then rep passes when no check and no assertion failed. A nil
// report (the state could not be judged) leaves rep not passed.
func (r *CheckReport) Fill(rep *reports.Report, h *history.History, wait sut.WaitPolicy) {
	if r == nil {
		rep.Passed = false
		return
	}
	rep.Stock = r.Stock()
	rep.Load.Stock = rep.Stock.Initial
	rep.Load.Buckets = len(r.Buckets)
	rep.Unknown = reports.Unknown{Total: int64(r.Unknown.Total), Executed: int64(r.Unknown.Executed),
		NotExecuted: int64(r.Unknown.NotExecuted), Unresolved: int64(r.Unknown.Unresolved)}
	rep.LostAcks, rep.LostAcksNotJudged = int64(len(r.LostAcks)), r.LostAcksNotJudged
	rep.KeySpace = r.KeySpace
	rep.Wait = WaitSummaryOf(h, r.LostAcks, wait)
	for _, c := range r.Checks {
		rep.Invariants = append(rep.Invariants, reports.Invariant{ID: c.ID, Name: c.Name, Status: reports.Status(c.Status), Detail: c.Detail, Evidence: c.Evidence, ConsequenceOf: c.ConsequenceOf, ElapsedMs: elapsedMs(c.Elapsed)})
	}
	if r.Drawing != nil {
		rep.LinearizabilityFile = LinearizabilityFileName
	}
	rep.Passed = len(rep.FailedChecks()) == 0
}

// elapsedMs is d in milliseconds to the microsecond.
func elapsedMs(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Stock is report.json's stock section: each bucket's stock as read back
// at the end, and their sums.
func (r *CheckReport) Stock() reports.Stock {
	var st reports.Stock
	for b, s := range r.Buckets {
		st.Buckets = append(st.Buckets, reports.BucketStock{Bucket: b, Initial: s.Initial, Available: s.Available, Reserved: s.Reserved, ReleasedTotal: s.ReleasedTotal})
		st.Initial += s.Initial
		st.Available += s.Available
		st.Reserved += s.Reserved
		st.ReleasedTotal += s.ReleasedTotal
	}
	return st
}
