package lifecycle

import (
	"strings"
	"testing"

	"seckill-harness/checks"
	"seckill-harness/reports"
)

// A failing check names the unplanned events and planned faults near its
// violations (dated by its evidence), and only those; a passing one gets
// nothing.
func TestAnnotateChecksNamesOverlappingEvents(t *testing.T) {
	rep := &reports.Report{DurationS: 60,
		Faults: []reports.Fault{{Kind: "failover", Name: "failover:at=10s", Target: "127.0.0.1:7001", InjectedAtS: 10, HealedAtS: 15, Healed: true}},
		UnplannedEvents: []reports.Event{
			{TimeS: 12.3, Node: "127.0.0.1:7001", What: reports.EventAutomaticFailover},
			{TimeS: 50, Node: "127.0.0.1:7002", What: reports.EventRestart},
		},
		Invariants: []reports.Invariant{
			{ID: "I6", Status: reports.StatusFail, Detail: "60 acknowledged reservations lost",
				Evidence: map[string]any{"lost_acks": []checks.LostAck{{AckedAtS: 11.0}, {AckedAtS: 12.1}}}},
			{ID: "I1", Status: reports.StatusPass, Detail: "ok"},
		},
		Assertions: []reports.Assertion{{Name: "p99 below 50 ms", Status: reports.StatusFail}},
	}
	annotateChecks(rep, nil)
	i6 := rep.Invariants[0]
	want := "60 acknowledged reservations lost; unplanned automatic-failover of 127.0.0.1:7001 at 12.3 s; planned failover:at=10s 10.0–15.0 s"
	if i6.Detail != want {
		t.Errorf("I6 detail:\n got %q\nwant %q", i6.Detail, want)
	}
	if len(i6.Events) != 2 || !i6.Events[0].Planned || i6.Events[1].What != reports.EventAutomaticFailover {
		t.Errorf("I6 events: %+v", i6.Events)
	}
	if strings.Contains(i6.Detail, "restart") {
		t.Error("a restart 38 s after the last violation is named")
	}
	if rep.Invariants[1].Events != nil || rep.Invariants[1].Detail != "ok" {
		t.Errorf("a passing check was annotated: %+v", rep.Invariants[1])
	}
	// An assertion without dates speaks of the whole load: every event.
	if a := rep.Assertions[0]; len(a.Events) != 3 || !strings.Contains(a.Detail, "restart of 127.0.0.1:7002") {
		t.Errorf("assertion: %+v", a)
	}
}

// A tolerated event stays listed but leaves the verdict line.
func TestVerdictLineNamesOnlyUntoleratedEvents(t *testing.T) {
	rep := &reports.Report{Passed: true, UnplannedEvents: []reports.Event{
		{TimeS: 12.3, Node: "127.0.0.1:7001", What: reports.EventAutomaticFailover},
		{TimeS: 13, Node: "127.0.0.1:7004", What: reports.EventFullResync, Tolerated: true},
	}}
	if got, want := rep.VerdictLine(), "PASS; unplanned automatic-failover of 127.0.0.1:7001 at 12.3 s"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	if rep.Verdict() != "PASS" {
		t.Errorf("Verdict() changed: %q", rep.Verdict())
	}
}

// TestHostStallsBecomeHarnessStallEvents: stalls closer than a second are
// one episode, an episode of 50 ms or more is an unplanned harness-stall
// event with its count and total, a shorter one is left to the host section.
func TestHostStallsBecomeHarnessStallEvents(t *testing.T) {
	st := func(at, ms float64) reports.Stall {
		return reports.Stall{AtS: at, DurationMs: ms, Evidence: reports.StallEvidence{Load1: 9, ProcsRunning: 12}}
	}
	rep := &reports.Report{Host: &reports.Host{Stalls: []reports.Stall{
		st(1.0, 20), st(1.5, 40), // one episode, 60 ms: an event
		st(4.0, 30),                           // alone, 30 ms: not an event
		st(7.0, 15), st(7.2, 15), st(7.9, 25), // 55 ms: an event
	}}}
	evs := hostStallEvents(rep)
	if len(evs) != 2 {
		t.Fatalf("got %d events, want 2: %+v", len(evs), evs)
	}
	if e := evs[0]; e.What != reports.EventHarnessStall || e.Node != "harness" || e.TimeS != 1.0 ||
		!strings.Contains(e.Evidence, "2 stalls, 60 ms in all (longest 40 ms)") {
		t.Errorf("first episode: %+v", e)
	}
	if e := evs[1]; e.TimeS != 7.0 || !strings.Contains(e.Evidence, "3 stalls, 55 ms") {
		t.Errorf("second episode: %+v", e)
	}
	if evs := hostStallEvents(&reports.Report{}); evs != nil {
		t.Errorf("no host section: %+v", evs)
	}
}

// TestPhaseAssertionNamesOnlyEventsNearItsPhase: an SLO of the baseline
// phase that ended at 5 s does not name a planned fault injected at 25 s,
// while a whole-run assertion does.
func TestPhaseAssertionNamesOnlyEventsNearItsPhase(t *testing.T) {
	rep := &reports.Report{DurationS: 40,
		Phases: []reports.Phase{{Name: "baseline", StartS: 0, EndS: 5}, {Name: "during failover", StartS: 25, EndS: 30}},
		Faults: []reports.Fault{{Kind: "failover", InjectedAtS: 25, HealedAtS: 30, Healed: true}},
		Assertions: []reports.Assertion{
			{Name: "p99 <= 50ms in baseline", Status: reports.StatusFail, Phase: "baseline"},
			{Name: "throughput >= 10 ops/s", Status: reports.StatusFail},
		}}
	annotateChecks(rep, nil)
	if evs := rep.Assertions[0].Events; len(evs) != 0 {
		t.Errorf("the baseline SLO names %+v", evs)
	}
	if evs := rep.Assertions[1].Events; len(evs) != 1 || !evs[0].Planned {
		t.Errorf("the whole-run assertion names %+v, want the planned failover", evs)
	}
}
