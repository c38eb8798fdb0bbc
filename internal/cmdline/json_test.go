package cmdline

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

// An outcome whose only failure is an inconclusive SLO exits 3; with a
// failed invariant besides it, 1.
func TestExitOfInconclusive(t *testing.T) {
	th := 1.0
	slo := reports.Assertion{Name: "p99 <= 1ms", Status: reports.StatusInconclusive, Observed: 9, Threshold: &th, Judges: "latency",
		Inconclusive: &reports.Inconclusive{Rule: lifecycle.InconclusiveRule}}
	only := &lifecycle.Result{Report: &reports.Report{Assertions: []reports.Assertion{slo}}}
	err := lifecycle.Judge(only)
	if !errors.Is(err, exitcode.ErrInconclusive) {
		t.Fatalf("only inconclusive: %v, want ErrInconclusive", err)
	}
	var out bytes.Buffer
	(&Summary{}).Write(&out, err)
	var v RunJSON
	if e := json.Unmarshal(out.Bytes(), &v); e != nil || v.ExitCode != 3 || v.Verdict != "INCONCLUSIVE" || v.ExitMeaning != exitcode.Meaning(exitcode.Inconclusive) {
		t.Fatalf("run --json: %+v (%v)", v, e)
	}
	// A fault that missed the system under test is the other inconclusive
	// run: its exit meaning says so, not that the stand starved.
	missed := reports.Assertion{Name: "fault failover reached the system under test", Status: reports.StatusInconclusive,
		Detail: "failover acted on 127.0.0.1:7001, which served none of the system's Redis traffic"}
	err = lifecycle.Judge(&lifecycle.Result{Report: &reports.Report{Assertions: []reports.Assertion{missed}}})
	out.Reset()
	(&Summary{}).Write(&out, err)
	if e := json.Unmarshal(out.Bytes(), &v); e != nil || v.ExitCode != 3 || !strings.Contains(v.ExitMeaning, "a fault missed the system under test") {
		t.Fatalf("run --json of a missed fault: %+v (%v), want exit 3 meaning a fault missed the system under test", v, e)
	}
	failed := &lifecycle.Result{Report: &reports.Report{
		Invariants: []reports.Invariant{{ID: "I6", Name: "no_lost_ack", Status: reports.StatusFail}},
		Assertions: []reports.Assertion{slo}}}
	if err := lifecycle.Judge(failed); !errors.Is(err, exitcode.ErrChecksFailed) {
		t.Fatalf("invariant failed on a starved host: %v, want ErrChecksFailed (exit 1)", err)
	}
	if errors.Is(exitcode.ErrInconclusive, exitcode.ErrChecksFailed) {
		t.Fatal("ErrInconclusive maps to exit 1")
	}
}
