package planner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

const referenceAdapter = "../../docs/adapters/reference.yaml"

// expectedDifferences are the checks the built-in path judges and the
// reference run through its adapter file skips, with why: a file cannot
// declare the contract's cached request results, which I7 needs.
var expectedDifferences = map[string]string{
	"I7": "an adapter file cannot declare the cached request results (sut.Requests) I7 resolves UNKNOWN outcomes with",
}

// The reference contract run through docs/adapters/reference.yaml gives
// the same verdict, invariant by invariant, as the built-in path on smoke,
// failover-kill, disconnect-before-reply and slot-migration (shortened
// with --set; no release share in either run, since the file has no
// release: the built-in release is two scripts). A check one run judges
// and the other skips must be listed in expectedDifferences; a pass in one
// and a fail in the other is always a failure of this test.
func TestReferenceAdapterGivesTheBuiltInVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs eight loads on local clusters")
	}
	short := map[string][]string{
		"smoke": {"defaults.mix.release=0", "phases.1.duration=3s"},
		"failover-kill": {"phases.0.mix.release=0", "phases.0.duration=8s", "phases.0.rate=600",
			"faults.0.at=2s", "faults.0.for=5s"},
		"disconnect-before-reply": {"phases.0.mix.release=0", "phases.0.duration=6s", "phases.0.rate=600",
			"faults.0.at=1s", "faults.0.for=4s"},
		"slot-migration": {"phases.0.mix.release=0", "phases.0.duration=6s", "phases.0.rate=600", "faults.0.at=1s"},
	}
	for _, name := range []string{"smoke", "failover-kill", "disconnect-before-reply", "slot-migration"} {
		t.Run(name, func(t *testing.T) {
			builtIn := runPlan(t, name, short[name], "")
			viaFile := runPlan(t, name, short[name], referenceAdapter)
			if sut := viaFile.SystemUnderTest; sut == nil || sut.Kind != "adapter" || len(sut.Scripts) == 0 || !strings.HasSuffix(sut.Scripts[0].Path, "lua/reserve.lua") {
				t.Fatalf("the adapter run's system_under_test: %+v", sut)
			}
			compareVerdicts(t, builtIn, viaFile)
		})
	}
}

func runPlan(t *testing.T, name string, sets []string, adapterFile string) *reports.Report {
	t.Helper()
	p, err := Load(context.Background(), name, sets, nil, Inputs{Cluster: lifecycle.ClusterSpec{Spec: "local"},
		Overrides: Overrides{Adapter: adapterFile}})
	if err != nil {
		t.Fatal(err)
	}
	oc, err := lifecycle.Execute(context.Background(), p, lifecycle.Output{})
	if err != nil {
		t.Fatalf("%s (adapter %q): %v", name, adapterFile, err)
	}
	return oc.Report
}

func compareVerdicts(t *testing.T, builtIn, viaFile *reports.Report) {
	t.Helper()
	got := map[string]reports.Invariant{}
	for _, inv := range viaFile.Invariants {
		got[inv.ID] = inv
	}
	for _, b := range builtIn.Invariants {
		a, ok := got[b.ID]
		switch {
		case !ok:
			t.Errorf("%s: judged by the built-in path, absent from the adapter run", b.ID)
		case a.Status == b.Status:
		case expectedDifferences[b.ID] != "" && a.Status == reports.StatusSkip:
			t.Logf("%s: built-in %s, adapter skip — expected: %s", b.ID, b.Status, expectedDifferences[b.ID])
		case a.Status == reports.StatusSkip || b.Status == reports.StatusSkip:
			// One run had nothing to judge (no UNKNOWN, no re-send): a
			// vacuous skip, named, never a pass against a fail.
			t.Logf("%s: built-in %s (%s), adapter %s (%s): one run had nothing to judge", b.ID, b.Status, b.Detail, a.Status, a.Detail)
		default:
			t.Errorf("%s: built-in %s (%s), adapter %s (%s)", b.ID, b.Status, b.Detail, a.Status, a.Detail)
		}
	}
}

// --adapter's bad input is refused before anything starts, naming the
// problem and the fix: a missing file, an invalid one (its file:line),
// --adapter with --path, with --lua-dir, with a pipeline.
func TestAdapterBadInput(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("reserve:\n  script: none.lua\n  bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   Inputs
		sets []string
		want []string
	}{
		{"missing file", Inputs{Overrides: Overrides{Adapter: filepath.Join(dir, "nope.yaml")}}, nil, []string{"nope.yaml", "give the path of an adapter YAML file"}},
		{"invalid file", Inputs{Overrides: Overrides{Adapter: broken}}, nil, []string{broken + ":3", "bogus"}},
		{"with --path", Inputs{Overrides: Overrides{Adapter: referenceAdapter, Path: Paths()[len(Paths())-1]}}, nil, []string{"--adapter", "one system under test", "drop path"}},
		{"with --lua-dir", Inputs{LuaDir: dir, Overrides: Overrides{Adapter: referenceAdapter}}, nil, []string{"--lua-dir", "drop one"}},
		{"with a pipeline", Inputs{Overrides: Overrides{Adapter: referenceAdapter}}, []string{"pipeline.drain=5s"}, []string{"pipeline", "drop pipeline:"}},
		{"--strict-preflight without one", Inputs{Overrides: Overrides{StrictPreflight: true}}, nil, []string{"--strict-preflight without an adapter file", "add --adapter FILE or drop --strict-preflight"}},
	}
	for _, c := range cases {
		_, err := Load(context.Background(), "smoke", c.sets, nil, c.in)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to say %q", c.name, err, w)
			}
		}
	}
}

// A scenario file's adapter: is relative to the file (and inside its
// directory: the adapter and its script are copied beside it), and an
// invalid one is refused at the field's line.
func TestScenarioAdapterField(t *testing.T) {
	dir := t.TempDir()
	rel := "adapters/reference.yaml"
	for from, to := range map[string]string{referenceAdapter: rel, filepath.Join(filepath.Dir(referenceAdapter), "lua", "reserve.lua"): "adapters/lua/reserve.lua"} {
		b, err := os.ReadFile(from)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, to), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	body := "name: s\nadapter: " + rel + "\nactivity: {stock: 10, buckets: 1, users: 100}\nphases:\n  - {name: load, duration: 1s, rate: 10}\n"
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(context.Background(), path, nil, nil, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if p.SystemUnderTest == nil || p.SystemUnderTest.Kind != "adapter" || p.Path == nil || p.PathName != "adapter:reference" {
		t.Fatalf("plan's system: %+v %q", p.SystemUnderTest, p.PathName)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(body, rel, "missing.yaml", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(context.Background(), path, nil, nil, Inputs{})
	if err == nil || !strings.Contains(err.Error(), path+":2") || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("a missing adapter file: %v, want it named at %s:2", err, path)
	}
}

// A suite run on an adapter file skips the members it cannot run (those
// with a pipeline) with the reason, and builds the others; a suite none
// of whose members can run is refused.
func TestSuiteOnAdapterSkipsPipelineMembers(t *testing.T) {
	s, err := Resolve(context.Background(), "nightly-ci", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	su, err := BuildSuite(s, Inputs{Overrides: Overrides{Adapter: referenceAdapter}})
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, p := range su.Plans {
		ran = append(ran, p.Name)
		if p.PathName != "adapter:reference" {
			t.Errorf("member %s runs %q, want the adapter", p.Name, p.PathName)
		}
	}
	if len(su.Skipped) != 1 || su.Skipped[0].Name != "dispatcher-crash" || !strings.Contains(su.Skipped[0].Reason, "pipeline") {
		t.Fatalf("skipped %+v (ran %v), want dispatcher-crash skipped for its pipeline", su.Skipped, ran)
	}
	if strings.Join(ran, ",") != "failover-kill,slot-migration,disconnect-before-reply,partition-master" {
		t.Errorf("ran %v", ran)
	}
	// Without the adapter nothing is skipped.
	if su, err = BuildSuite(s, Inputs{}); err != nil || len(su.Skipped) != 0 || len(su.Plans) != 5 {
		t.Fatalf("reference: %d plans, skipped %+v, %v", len(su.Plans), su.Skipped, err)
	}
	dir := t.TempDir()
	only := filepath.Join(dir, "pipes.yaml")
	if err := os.WriteFile(only, []byte("name: pipes\nsuite: [full-path, dispatcher-crash]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := Resolve(context.Background(), only, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildSuite(ps, Inputs{Overrides: Overrides{Adapter: referenceAdapter}}); err == nil || !strings.Contains(err.Error(), "no member can run") {
		t.Fatalf("a suite of pipeline members on an adapter: %v, want it refused", err)
	}
}

// A suite run against a service skips the pipeline members when its
// mapping keeps no reference state (the default, state: none), naming the
// fix; with docs/services/serve.yaml (state: reference) every member runs.
func TestSuiteOnServiceSkipsPipelineMembersWithoutState(t *testing.T) {
	s, err := Resolve(context.Background(), "nightly-ci", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, over := range []Overrides{{Service: "http://127.0.0.1:1"}, {ServiceCmd: "true"}} {
		su, err := BuildSuite(s, Inputs{Overrides: over})
		if err != nil {
			t.Fatal(err)
		}
		if len(su.Skipped) != 1 || su.Skipped[0].Name != "dispatcher-crash" || !strings.Contains(su.Skipped[0].Reason, "state: reference") || len(su.Plans) != 4 {
			t.Fatalf("%+v: skipped %+v, %d plans; want dispatcher-crash skipped naming state: reference", over, su.Skipped, len(su.Plans))
		}
		over.ServiceMapping = "../../docs/services/serve.yaml"
		if su, err = BuildSuite(s, Inputs{Overrides: over}); err != nil || len(su.Skipped) != 0 || len(su.Plans) != 5 {
			t.Fatalf("%+v: %d plans, skipped %+v, %v; want all five", over, len(su.Plans), su.Skipped, err)
		}
	}
}
