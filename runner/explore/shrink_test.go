package explore

import (
	"bytes"
	"context"
	"encoding/xml"
	"slices"
	"strings"
	"testing"
	"time"
)

// A schedule with three faults whose trial fails I5 only while a
// disconnect-before-reply fault is in it (and I3, a different invariant,
// when the rate falls low): the shrink keeps the disconnect alone, shortens
// what does not matter, and never keeps a variant failing only I3.
// The shrinker does not cut the rate (or a window) so far that a fault's
// window holds fewer than minOpsPerFaultWindow operations: a trial that
// "fails" with a handful of operations in the window fails by luck.
func TestShrinkLeavesEnoughOperationsInAFaultWindow(t *testing.T) {
	s := Schedule{Name: "x", Seed: 1, Path: "reference", Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second,
		Stock: 1000, Buckets: 1, Users: 1000,
		Load:   Load{Duration: 2 * time.Second, Shape: "constant", Rate: 276, Concurrency: 4, Timeout: time.Second, Retries: 3},
		Faults: []FaultDraw{{Kind: "disconnect-before-reply", At: 200 * time.Millisecond, For: 400 * time.Millisecond, Params: map[string]string{"toxic": "reset_peer"}}}}
	valid := func(v Schedule) error { _, _, err := v.Scenario(v.Name); return err }
	try := func(_ context.Context, v Schedule, _ string) ([]string, error) {
		if len(v.Faults) == 1 {
			return []string{"I5"}, nil // fails at any rate while the fault is in
		}
		return nil, nil
	}
	res := Shrink(context.Background(), s, "I5", valid, try, ShrinkOptions{Budget: time.Minute})
	m := res.Schedule
	if len(m.Faults) != 1 {
		t.Fatalf("shrunk to %+v", m.Faults)
	}
	if ops := m.Load.Rate * m.Faults[0].For.Seconds(); ops < minOpsPerFaultWindow {
		t.Fatalf("rate %g with a %s window: %.1f operations in the fault window, want >= %d", m.Load.Rate, m.Faults[0].For, ops, minOpsPerFaultWindow)
	}
	if m.Load.Rate >= s.Load.Rate {
		t.Errorf("rate %g: the shrinker still halves it while the window holds enough", m.Load.Rate)
	}
}

func TestShrinkKeepsOnlyWhatTheSameInvariantNeeds(t *testing.T) {
	s := Schedule{Name: "x", Seed: 1, Path: "reference", Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second,
		Stock: 1000, Buckets: 4, Users: 4000,
		Load: Load{Duration: 8 * time.Second, Shape: "sine", Rate: 800, Amplitude: 200, Period: 2 * time.Second, Concurrency: 64, Timeout: time.Second, Retries: 3},
		Faults: []FaultDraw{
			{Kind: "latency", At: time.Second, For: 2 * time.Second, Params: map[string]string{"latency": "50"}},
			{Kind: "disconnect-before-reply", At: 2 * time.Second, For: 4 * time.Second, Params: map[string]string{"toxic": "reset_peer"}},
			{Kind: "slicer", At: 5 * time.Second, For: 2 * time.Second},
		}}
	s.Load.Mix.Replay = 0.1
	valid := func(v Schedule) error { _, _, err := v.Scenario(v.Name); return err }
	if err := valid(s); err != nil {
		t.Fatal(err)
	}
	tries := 0
	try := func(_ context.Context, v Schedule, label string) ([]string, error) {
		tries++
		if !strings.HasPrefix(label, "shrink-") {
			t.Errorf("trial label %q", label)
		}
		var failed []string
		for _, f := range v.Faults {
			if f.Kind == "disconnect-before-reply" && f.For >= 600*time.Millisecond && v.Load.Rate >= 100 {
				failed = append(failed, "I5")
			}
		}
		if v.Load.Rate < 200 {
			failed = append(failed, "I3")
		}
		return failed, nil
	}
	res := Shrink(context.Background(), s, "I5", valid, try, ShrinkOptions{Budget: time.Minute})
	m := res.Schedule
	if !res.Exhausted || len(m.Faults) != 1 || m.Faults[0].Kind != "disconnect-before-reply" {
		t.Fatalf("shrunk to %+v (exhausted %v); want the disconnect alone", m.Faults, res.Exhausted)
	}
	if w := m.Faults[0].For; w < 600*time.Millisecond || w >= 1200*time.Millisecond {
		t.Errorf("disconnect window %s: want it halved down to [600ms, 1.2s): below 600ms I5 passes", w)
	}
	if m.Load.Rate < 100 || m.Load.Rate >= 200 {
		t.Errorf("rate %g: want it halved to [100, 200): lower fails I3 only (another invariant) or passes", m.Load.Rate)
	}
	if m.Load.Duration >= s.Load.Duration || m.Users >= s.Users || m.Load.Concurrency >= s.Load.Concurrency || m.Buckets != 1 ||
		m.Load.Shape != "constant" || m.Load.Mix.Replay != 0 {
		t.Errorf("minimal %s (%s, %s); want a shorter constant load, fewer users and workers, one bucket, no mix", m.Size(), m.Load.Shape, m.Load.Duration)
	}
	if res.Minimal != m.Size() || res.Original != s.Size() || len(res.Steps) != tries {
		t.Errorf("result sizes/steps: %+v", res)
	}
	for _, st := range res.Steps {
		if st.Kept && !slices.Contains(st.Failed, "I5") {
			t.Errorf("kept %q whose trial failed %v", st.Change, st.Failed)
		}
	}
	if err := valid(m); err != nil {
		t.Fatalf("minimal schedule is not a valid scenario: %v", err)
	}
}

func TestShrinkStopsAtItsBudget(t *testing.T) {
	s := draw(t, 4, testBounds(), localSetting(), nil, 1)[0]
	valid := func(v Schedule) error { _, _, err := v.Scenario(v.Name); return err }
	always := func(context.Context, Schedule, string) ([]string, error) { return []string{"I1"}, nil }
	res := Shrink(context.Background(), s, "I1", valid, always, ShrinkOptions{MaxTries: 2})
	if res.Exhausted || len(res.Steps) != 2 {
		t.Fatalf("MaxTries 2: %d steps, exhausted %v", len(res.Steps), res.Exhausted)
	}
}

func TestSummaryJUnitFailsTheFindings(t *testing.T) {
	sum := &Summary{Seed: 3, Path: "p", FaultsTried: map[string]int{"latency": 2}, Coverage: NewCoverage(),
		Runs:     []RunRecord{{N: 1, Verdict: VerdictPass, Faults: []string{"latency:at=1s"}}, {N: 2, Verdict: VerdictFinding, Failed: []string{"I5"}, Details: []string{"I5: 3 violations"}}},
		Findings: []Finding{{Run: 2, Invariant: "I5", Reproduces: "3/3", Command: "seckill-harness run m.yaml"}}}
	var buf bytes.Buffer
	if err := sum.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil || doc.Tests != 3 || doc.Failures != 2 {
		t.Fatalf("junit %+v (%v):\n%s", doc, err, buf.String())
	}
	if !strings.Contains(buf.String(), "seckill-harness run m.yaml") {
		t.Errorf("junit lacks the re-run command:\n%s", buf.String())
	}
}

// A change that fails the invariant only every other trial (flaky) is
// kept with Repeat 1 and dropped with Repeat 2: the minimal schedule stays
// where the failure reproduces.
func TestShrinkRepeatDropsFlakyChanges(t *testing.T) {
	s := draw(t, 4, testBounds(), localSetting(), nil, 1)[0]
	valid := func(v Schedule) error { _, _, err := v.Scenario(v.Name); return err }
	shrunkRate := func(repeat int) float64 {
		low := 0
		try := func(_ context.Context, v Schedule, _ string) ([]string, error) {
			if v.Load.Rate < s.Load.Rate {
				if low++; low%2 == 0 {
					return nil, nil // a lower rate reproduces every other trial
				}
			}
			return []string{"I5"}, nil
		}
		return Shrink(context.Background(), s, "I5", valid, try, ShrinkOptions{Repeat: repeat, Budget: time.Minute}).Schedule.Load.Rate
	}
	if r := shrunkRate(1); r >= s.Load.Rate {
		t.Fatalf("Repeat 1 kept the rate at %g: want the flaky halving kept", r)
	}
	if r := shrunkRate(2); r != s.Load.Rate {
		t.Fatalf("Repeat 2 lowered the rate %g -> %g on a change that reproduces half the time", s.Load.Rate, r)
	}
}
