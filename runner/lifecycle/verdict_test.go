package lifecycle

import (
	"strings"
	"testing"

	"seckill-harness/reports"
)

// good is the facts of a run that did what it set out to do.
func good() runFacts {
	return runFacts{ops: 1000, scheduled: 1000, planned: 1, judged: 8, required: 9}
}

func statusOf(t *testing.T, as []reports.Assertion, prefix string) reports.Status {
	t.Helper()
	for _, a := range as {
		if strings.HasPrefix(a.Name, prefix) {
			return a.Status
		}
	}
	t.Fatalf("no assertion %q in %+v", prefix, as)
	return ""
}

func TestEvidenceRulesPassAGoodRun(t *testing.T) {
	for _, a := range judgeEvidence(good(), Bounds{}) {
		if a.Status != reports.StatusPass {
			t.Errorf("%s: %s (%s)", a.Name, a.Status, a.Detail)
		}
	}
}

// Each rule catches the run it exists for.
func TestEvidenceRulesCatchRunsThatProveNothing(t *testing.T) {
	cases := []struct {
		name, rule string
		breakIt    func(*runFacts)
	}{
		{"interrupted", "the load ran to its end", func(f *runFacts) { f.interrupted = "interrupt signal received" }},
		{"no operation", "operations completed", func(f *runFacts) { f.ops = 0 }},
		{"script error", "errors caused by the path under test", func(f *runFacts) {
			f.pathErrors = map[string]int64{"OTHER": 980}
			f.errorTexts = map[string][]string{"OTHER": {"ERR Error compiling script"}}
		}},
		{"fault never injected", "every planned fault injected", func(f *runFacts) { f.notInjected = []string{"failover: no replica"} }},
		{"drops over the bound", "dropped ratio", func(f *runFacts) { f.dropped, f.scheduled = 200, 1200 }},
		{"every invariant skipped", "required invariants judged", func(f *runFacts) { f.judged, f.skipped = 0, []string{"I1: no stock"} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := good()
			c.breakIt(&f)
			if st := statusOf(t, judgeEvidence(f, Bounds{}), c.rule); st != reports.StatusFail {
				t.Fatalf("%s: %s, want fail", c.rule, st)
			}
		})
	}
}

func TestEvidenceBoundsAreRespected(t *testing.T) {
	f := good()
	f.pathErrors = map[string]int64{"OTHER": 3}
	if st := statusOf(t, judgeEvidence(f, Bounds{MaxPathErrors: 5}), "errors caused"); st != reports.StatusPass {
		t.Fatalf("3 errors under a bound of 5: %s", st)
	}
	f = good()
	f.ops = 10
	if st := statusOf(t, judgeEvidence(f, Bounds{MinOps: 100}), "operations completed"); st != reports.StatusFail {
		t.Fatalf("10 ops with min 100: %s", st)
	}
	f = good()
	f.planned = 0
	for _, a := range judgeEvidence(f, Bounds{}) {
		if strings.HasPrefix(a.Name, "every planned fault") {
			t.Fatal("a run without faults judges fault injection")
		}
	}
}

// A failure wholly explained by a waived one is waived with it, saying so;
// by a required one (or by nothing), it stays a failure.
func TestWaiveConsequences(t *testing.T) {
	run := func(causeWaived bool, consequenceOf string) reports.Invariant {
		invs := []reports.Invariant{
			{ID: "I3", Name: "no_oversell", Status: reports.StatusFail, Detail: "oversold", ConsequenceOf: consequenceOf},
			{ID: "I6", Name: "no_lost_acks", Status: reports.StatusFail, Waived: causeWaived},
		}
		return waiveConsequences(invs)[0]
	}
	if i3 := run(true, "I6"); !i3.Waived || !strings.Contains(i3.Detail, "a consequence of I6 no_lost_acks") {
		t.Errorf("cause waived: %+v", i3)
	}
	if i3 := run(false, "I6"); i3.Waived {
		t.Errorf("cause required: %+v", i3)
	}
	if i3 := run(true, ""); i3.Waived {
		t.Errorf("no cause: %+v", i3)
	}
}
