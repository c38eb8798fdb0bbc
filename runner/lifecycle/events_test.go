package lifecycle

import (
	"strings"
	"testing"

	"seckill-harness/reports"
	"seckill-harness/runner"
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
				Evidence: map[string]any{"lost_acks": []runner.LostAck{{AckedAtS: 11.0}, {AckedAtS: 12.1}}}},
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
