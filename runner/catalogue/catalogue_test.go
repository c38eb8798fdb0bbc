package catalogue

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"strings"
	"testing"
	"time"

	"seckill-harness/reports"
)

// Report fixtures, shaped as lifecycle writes them.

func passed() *reports.Report {
	return &reports.Report{Passed: true, Invariants: []reports.Invariant{{ID: "I1", Name: "no oversell", Status: reports.StatusPass}}}
}

func failedK1() *reports.Report {
	return &reports.Report{Invariants: []reports.Invariant{
		{ID: "I1", Name: "no oversell", Status: reports.StatusPass},
		{ID: "K1", Name: "keys in one slot", Status: reports.StatusFail, Detail: "2 keys moved\nsecond line"},
	}}
}

// expectI6 is a run of a scenario declaring I6 expected to fail: the
// invariant's status and whether the expectation was met decide it.
func expectI6(status reports.Status, met bool) *reports.Report {
	r := &reports.Report{Passed: met, Invariants: []reports.Invariant{
		{ID: "I6", Name: "acks durable", Status: status, Detail: "0 lost",
			Expected: &reports.ExpectedFailure{Min: 1, Met: met}},
	}}
	st := reports.StatusPass
	if !met {
		st = reports.StatusFail
	}
	r.Assertions = []reports.Assertion{{Name: "I6 acks durable fails as expected (acknowledged reservations lost >= 1)", Status: st, Detail: "not reproduced: I6 pass (0 lost)"}}
	return r
}

func TestClassifyAndHeld(t *testing.T) {
	limit := 20.0
	sloFail := &reports.Report{Invariants: passed().Invariants, Assertions: []reports.Assertion{{Name: "p99 <= 20ms", Status: reports.StatusFail,
		Observed: 41, Threshold: &limit, Unit: "ms", Detail: "sale is the only load phase"}}}
	// The same SLO judged inconclusive by the run (the stand was starved).
	sloStarved := &reports.Report{Invariants: passed().Invariants, Assertions: []reports.Assertion{{Name: "p99 <= 20ms",
		Status: reports.StatusInconclusive, Judges: "latency", Observed: 41, Threshold: &limit, Unit: "ms"}}}
	// An invariant failed on the starved stand too: never inconclusive.
	bothFail := &reports.Report{Invariants: failedK1().Invariants, Assertions: sloStarved.Assertions}
	if v := Classify(sloFail, nil); v.Detail != "observed 41 ms, threshold 20 ms; sale is the only load phase" {
		t.Errorf("an assertion's detail without its figures: %q", v.Detail)
	}
	cases := []struct {
		name     string
		rep      *reports.Report
		err      error
		want     Outcome
		check    string
		expected Outcome
		held     bool
	}{
		{"clean pass", passed(), nil, Pass, "", Pass, true},
		{"required invariant fails", failedK1(), nil, Fail, "K1 keys in one slot", Pass, false},
		{"expected failure reproduced", expectI6(reports.StatusFail, true), nil, ExpectedFail, "", ExpectedFail, true},
		{"expected failure did not come: unexpected pass", expectI6(reports.StatusPass, false), nil, Pass, "I6 acks durable fails as expected (acknowledged reservations lost >= 1)", ExpectedFail, false},
		{"expected failure below its minimum", expectI6(reports.StatusFail, false), nil, Fail, "I6 acks durable fails as expected (acknowledged reservations lost >= 1)", ExpectedFail, false},
		{"harness error", nil, errors.New("redis-server not found\nmore"), Error, "harness error", Pass, false},
		{"no report", nil, nil, Error, "report", Pass, false},
		{"interrupted", &reports.Report{Interrupted: &reports.Interruption{Reason: "signal"}}, nil, Error, "interrupted", Pass, false},
		{"SLO failed on a stand that kept up: fail", sloFail, nil, Fail, "p99 <= 20ms", Pass, false},
		{"SLO inconclusive on a starved stand: held", sloStarved, nil, Inconclusive, "p99 <= 20ms", Pass, true},
		{"invariant failed on a starved stand: fail", bothFail, nil, Fail, "K1 keys in one slot", Pass, false},
	}
	for _, c := range cases {
		v := Classify(c.rep, c.err)
		if v.Outcome != c.want || v.Check != c.check {
			t.Errorf("%s: got %s %q, want %s %q", c.name, v.Outcome, v.Check, c.want, c.check)
		}
		if strings.Contains(v.Detail, "\n") {
			t.Errorf("%s: detail %q is more than its first line", c.name, v.Detail)
		}
		if got := Held(v.Outcome, c.expected); got != c.held {
			t.Errorf("%s: held(%s, expected %s) = %v, want %v", c.name, v.Outcome, c.expected, got, c.held)
		}
	}
}

// fixture is a catalogue of three scenarios, a data-loss demo expecting
// I6, and two suites, the smaller inside the larger (nightly-ci in nightly).
var fixture = []Entry{
	{Name: "smoke"}, {Name: "kill"}, {Name: "migrate"}, {Name: "partition"},
	{Name: "data-loss", ExpectFail: []string{"I6"}},
	{Name: "nightly", Members: []string{"kill", "migrate", "partition"}},
	{Name: "nightly-ci", Members: []string{"kill", "migrate"}},
}

// scripted is a Runner giving each scenario the report (or error) in
// reps; a suite reports each member in turn, like runScenario. It counts
// the runs of each built-in.
type scripted struct {
	reps  map[string]*reports.Report
	errs  map[string]error
	calls map[string]int
}

func (s *scripted) run(ctx context.Context, name, dir string, done func(Run)) error {
	s.calls[name]++
	for _, e := range fixture {
		if e.Name != name || !e.IsSuite() {
			continue
		}
		for _, m := range e.Members {
			if s.errs[m] != nil {
				return s.errs[m] // a suite stops nothing, but this member never reported
			}
			done(Run{Name: m, Dir: dir + "/" + m, Wall: time.Second, Report: s.reps[m]})
		}
		return nil
	}
	if s.errs[name] != nil {
		return s.errs[name]
	}
	done(Run{Name: name, Dir: dir, Wall: 2 * time.Second, Report: s.reps[name]})
	return nil
}

func TestPlanRunsEachScenarioOnceAndComposesTheSubsetSuite(t *testing.T) {
	s, err := Plan(fixture, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Runs, ","); got != "nightly,data-loss,smoke" {
		t.Fatalf("runs %s, want nightly,data-loss,smoke (members only through their suite, nightly-ci not again)", got)
	}
	if s.Composed["nightly-ci"] != "nightly" || s.Via["migrate"] != "nightly" {
		t.Fatalf("composed %v via %v", s.Composed, s.Via)
	}
	h := s.Header(1, false)
	for _, want := range []string{"nightly-ci not run again", "members' rows from nightly", "run on their own: data-loss, smoke"} {
		if !strings.Contains(h, want) {
			t.Errorf("header %q lacks %q", h, want)
		}
	}
	// A selected suite brings its members; without nightly, nightly-ci runs.
	s, err = Plan(fixture, []string{"nightly-ci", "smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Runs, ","); got != "nightly-ci,smoke" || len(s.Entries) != 4 {
		t.Fatalf("runs %s entries %d, want nightly-ci,smoke and 4 rows", got, len(s.Entries))
	}
	if _, err := Plan(fixture, []string{"nope"}); err == nil || !strings.Contains(err.Error(), "smoke") {
		t.Fatalf("unknown name: %v, want an error listing the built-ins", err)
	}
}

func TestExecuteRowsOfSuiteMembersUnexpectedPassAndError(t *testing.T) {
	s, err := Plan(fixture, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &scripted{calls: map[string]int{}, errs: map[string]error{"smoke": errors.New("cluster did not start")},
		reps: map[string]*reports.Report{"kill": passed(), "migrate": failedK1(), "partition": passed(),
			"data-loss": expectI6(reports.StatusPass, false)}}
	reps, err := Execute(context.Background(), s, Options{Repeat: 1, Dir: "out", Runner: r.run})
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range r.calls {
		if n != 1 {
			t.Errorf("%s ran %d times in one repetition", name, n)
		}
	}
	if r.calls["kill"] != 0 || r.calls["nightly-ci"] != 0 {
		t.Errorf("calls %v: a member or a covered suite ran on its own", r.calls)
	}
	got := map[string]Result{}
	for _, x := range reps[0] {
		got[x.Name] = x
	}
	want := map[string]struct {
		out   Outcome
		held  bool
		check string
	}{
		"smoke": {Error, false, "not run"}, "kill": {Pass, true, ""}, "partition": {Pass, true, ""},
		"migrate":    {Fail, false, "K1 keys in one slot"},
		"data-loss":  {Pass, false, "I6 acks durable fails as expected (acknowledged reservations lost >= 1)"},
		"nightly":    {Fail, false, "migrate: K1 keys in one slot"},
		"nightly-ci": {Fail, false, "migrate: K1 keys in one slot"},
	}
	for name, w := range want {
		g := got[name]
		if g.Outcome != w.out || g.Held != w.held || g.Check != w.check {
			t.Errorf("%s: got %s held=%v %q, want %s held=%v %q", name, g.Outcome, g.Held, g.Check, w.out, w.held, w.check)
		}
	}
	if got["migrate"].Via != "nightly" || got["nightly-ci"].WallS != 2 {
		t.Errorf("migrate via %q, nightly-ci wall %.0fs (want nightly, the sum of its members' 1 s)", got["migrate"].Via, got["nightly-ci"].WallS)
	}
	rows := Aggregate(reps)
	allHeld, anyError := Gate(rows)
	if allHeld || !anyError {
		t.Fatalf("gate: held %v error %v, want false true", allHeld, anyError)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, s.Header(1, false), rows); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	for _, line := range []string{"data-loss", "migrate", "smoke"} {
		if !strings.Contains(table, line) {
			t.Errorf("table lacks %s:\n%s", line, table)
		}
	}
	if !strings.Contains(table, "cluster did not start") || !strings.Contains(table, "NOT HELD") || strings.Count(table, "\n") != len(rows)+3 {
		t.Errorf("table (header, columns, %d rows, verdict):\n%s", len(rows), table)
	}
	assertJUnitFailures(t, reps, 5) // smoke, migrate, data-loss, nightly, nightly-ci
}

func assertJUnitFailures(t *testing.T, reps [][]Result, want int) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, time.Now(), map[string]string{"repeat": "1"}, reps); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Failures != want || doc.Tests != len(reps)*len(reps[0]) {
		t.Fatalf("junit: %d tests %d failures, want %d and %d:\n%s", doc.Tests, doc.Failures, len(reps)*len(reps[0]), want, b.String())
	}
}

func TestRepeatCountsTheRunsThatHeld(t *testing.T) {
	s, err := Plan(fixture, []string{"smoke", "data-loss"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	flaky := func(ctx context.Context, name, dir string, done func(Run)) error {
		rep := passed()
		if name == "data-loss" {
			rep = expectI6(reports.StatusFail, true)
		} else if n++; n == 2 {
			rep = failedK1()
		}
		done(Run{Name: name, Dir: dir, Wall: time.Second, Report: rep})
		return nil
	}
	reps, err := Execute(context.Background(), s, Options{Repeat: 3, Dir: "out", Runner: flaky})
	if err != nil {
		t.Fatal(err)
	}
	rows := Aggregate(reps)
	var b bytes.Buffer
	_ = WriteTable(&b, "h", rows)
	fields := map[string]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			fields[f[0]] = strings.Join(f, " ")
		}
	}
	for name, want := range map[string]string{"data-loss": "data-loss - expected-fail expected-fail 3/3 1.0s",
		"smoke": "smoke - pass:2,fail:1 pass 2/3 1.0s K1 keys in one slot: 2 keys moved"} {
		if fields[name] != want {
			t.Errorf("row %q, want %q:\n%s", fields[name], want, b.String())
		}
	}
	assertJUnitFailures(t, reps, 1)
}

func TestExecuteStopsAtCancel(t *testing.T) {
	s, _ := Plan(fixture, []string{"smoke", "data-loss"})
	ctx, cancel := context.WithCancel(context.Background())
	first := func(ctx context.Context, name, dir string, done func(Run)) error {
		cancel()
		return ctx.Err()
	}
	reps, err := Execute(ctx, s, Options{Repeat: 3, Dir: "out", Runner: first})
	if !errors.Is(err, context.Canceled) || len(reps) != 1 {
		t.Fatalf("err %v after %d repetitions, want canceled after 1", err, len(reps))
	}
	for _, r := range reps[0] {
		if r.Outcome != Error || r.Held {
			t.Errorf("%s: %s held=%v, want an error row", r.Name, r.Outcome, r.Held)
		}
	}
}
