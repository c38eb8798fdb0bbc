package lifecycle

import (
	"strings"
	"testing"

	"seckill-harness/reports"
)

// starvedReport is a 4-second run whose p99 SLO failed; starved marks
// seconds 1 and 2 starved and puts a 60 ms harness stall (1.5% of the
// window) in second 1, late is the pacer's late starts per second.
func starvedReport(starved bool, late int64) *reports.Report {
	rep := &reports.Report{DurationS: 4, Host: &reports.Host{Cores: 2}}
	for ts := int64(0); ts < 4; ts++ {
		rep.Timeseries = append(rep.Timeseries, reports.Second{TS: ts, Ops: 1000})
		w := 5.0
		sec := reports.HostSecond{TS: ts, Load1: 1, ProcsRunning: 1, HarnessRunqueueWaitMs: &w}
		if ts == 1 || ts == 2 {
			sec.LateStarts = late
			if starved {
				w2 := 180.0
				sec.Load1, sec.ProcsRunning, sec.HarnessRunqueueWaitMs, sec.Starved = 4.5, 6, &w2, true
			}
		}
		rep.Host.Seconds = append(rep.Host.Seconds, sec)
	}
	if starved {
		rep.Host.Stalls = []reports.Stall{{AtS: 1.2, DurationMs: 60}}
	}
	th := 50.0
	rep.Assertions = []reports.Assertion{
		{Name: "p99 <= 50ms", Status: reports.StatusFail, Observed: 180, Threshold: &th, Unit: "ms", Judges: "latency"},
		{Name: "lost_acks <= 0", Status: reports.StatusPass},
	}
	return rep
}

func TestFailedSLOOnAStarvedHostIsInconclusive(t *testing.T) {
	rep := starvedReport(true, 60) // 120 of 4000 ops late: 3% > 1%
	judgeInconclusive(rep)
	a := rep.Assertions[0]
	if a.Status != reports.StatusInconclusive || a.Inconclusive == nil {
		t.Fatalf("status %s, want inconclusive: %s", a.Status, a.Detail)
	}
	ev := a.Inconclusive
	if ev.Rule != InconclusiveRule || len(ev.StarvedSeconds) != 2 || ev.LateStarts != 120 || ev.Ops != 4000 || ev.MaxLoad1 != 4.5 || ev.MaxProcsRunning != 6 {
		t.Fatalf("evidence %+v", ev)
	}
	if !strings.Contains(a.Detail, "INCONCLUSIVE: the stand could not sustain the plan") {
		t.Fatalf("detail %q does not name it", a.Detail)
	}
	rep.Passed = len(rep.FailedChecks()) == 0 && len(rep.InconclusiveChecks()) == 0
	if rep.Passed || !rep.IsInconclusive() || !strings.HasPrefix(rep.Verdict(), "INCONCLUSIVE") {
		t.Fatalf("passed %v, inconclusive %v, verdict %q", rep.Passed, rep.IsInconclusive(), rep.Verdict())
	}
	oc := &Result{Report: rep}
	if !oc.Inconclusive() || len(oc.InconclusiveChecks()) != 1 {
		t.Fatal("the outcome does not carry the inconclusive verdict")
	}
}

func TestFailedSLOWithoutStarvationStaysFailed(t *testing.T) {
	for name, rep := range map[string]*reports.Report{
		"idle host, no late starts":            starvedReport(false, 0),
		"late starts but no starved second":    starvedReport(false, 60), // a slow path fills the workers: not the host
		"starved seconds but no harness stall": noStall(starvedReport(true, 10)),
		// A paused master holds every worker: 38% of starts late on a busy
		// host, but the harness itself ran on time: the path's finding.
		"late starts from a slow path on a busy host, no stall": noStall(starvedReport(true, 400)),
	} {
		judgeInconclusive(rep)
		if rep.Assertions[0].Status != reports.StatusFail || rep.Assertions[0].Inconclusive != nil {
			t.Errorf("%s: status %s, want fail", name, rep.Assertions[0].Status)
		}
		if rep.IsInconclusive() {
			t.Errorf("%s: report inconclusive", name)
		}
	}
}

func TestInvariantFailureOnAStarvedHostStillFails(t *testing.T) {
	rep := starvedReport(true, 60)
	rep.Invariants = []reports.Invariant{{ID: "I3", Name: "no_oversell", Status: reports.StatusFail}}
	rep.Assertions = append(rep.Assertions, reports.Assertion{Name: "invariants pass (all that ran)", Status: reports.StatusFail})
	judgeInconclusive(rep)
	if rep.Invariants[0].Status != reports.StatusFail || rep.Assertions[2].Status != reports.StatusFail {
		t.Fatal("an invariant (or its assertion) became inconclusive")
	}
	rep.Passed = false
	if rep.IsInconclusive() || (&Result{Report: rep}).Inconclusive() {
		t.Fatal("a run with a failed invariant is reported inconclusive")
	}
	if !strings.HasPrefix(rep.Verdict(), "FAIL") || !strings.Contains(rep.Verdict(), "inconclusive: p99 <= 50ms") {
		t.Fatalf("verdict %q", rep.Verdict())
	}
}

// noStall removes the harness stalls of rep.
func noStall(rep *reports.Report) *reports.Report {
	rep.Host.Stalls = nil
	return rep
}

func TestStallsAloneCountAsFallingBehind(t *testing.T) {
	rep := starvedReport(true, 0) // 60 ms of a 4 s window stalled: 1.5%
	judgeInconclusive(rep)
	if rep.Assertions[0].Status != reports.StatusInconclusive {
		t.Fatalf("status %s: 1.5%% of the window stalled on starved seconds", rep.Assertions[0].Status)
	}
	rep = starvedReport(true, 0)
	rep.Host.Stalls = []reports.Stall{{AtS: 1.2, DurationMs: 20}} // 0.5%
	judgeInconclusive(rep)
	if rep.Assertions[0].Status != reports.StatusFail {
		t.Fatalf("status %s: a 20 ms stall cannot excuse a 4 s window", rep.Assertions[0].Status)
	}
}

func TestInconclusiveJudgesThePhaseWindow(t *testing.T) {
	rep := starvedReport(true, 60) // seconds 1 and 2 starved
	rep.Phases = []reports.Phase{{Name: "calm", StartS: 3, EndS: 4}}
	rep.Assertions[0].Phase = "calm"
	judgeInconclusive(rep)
	if rep.Assertions[0].Status != reports.StatusFail {
		t.Fatalf("status %s: the starved seconds are outside the judged phase", rep.Assertions[0].Status)
	}
}

// Two busy loops on two cores: the stall probe wakes within its 10 ms, but
// the kernel kept the harness's threads waiting for a CPU for most of each
// second. That alone is the generator falling behind.
func TestRunqueueWaitAloneCountsAsFallingBehind(t *testing.T) {
	rep := noStall(starvedReport(true, 0))
	for i := range rep.Host.Seconds {
		w := 700.0 // ms per second, summed over the harness's threads
		rep.Host.Seconds[i].HarnessRunqueueWaitMs = &w
	}
	judgeInconclusive(rep)
	a := rep.Assertions[0]
	if a.Status != reports.StatusInconclusive || a.Inconclusive.RunqueueShare < 0.69 {
		t.Fatalf("status %s (%+v): the harness waited for a CPU 70%% of the window", a.Status, a.Inconclusive)
	}
	// A quiet run on a 2-core machine shared with the cluster waits about a
	// third of the time: a paused master's p99 failure is the path's.
	rep = noStall(starvedReport(true, 400))
	for i := range rep.Host.Seconds {
		w := 330.0
		rep.Host.Seconds[i].HarnessRunqueueWaitMs = &w
	}
	judgeInconclusive(rep)
	if rep.Assertions[0].Status != reports.StatusFail {
		t.Fatalf("status %s: 33%% of the window waiting for a CPU is a quiet run here", rep.Assertions[0].Status)
	}
	rep = noStall(starvedReport(true, 0)) // 180 ms in 2 of 4 seconds: 9%
	judgeInconclusive(rep)
	if rep.Assertions[0].Status != reports.StatusFail {
		t.Fatalf("status %s: 9%% of the window waiting for a CPU excuses nothing", rep.Assertions[0].Status)
	}
}
