package explore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
	"seckill-harness/faults"
	"seckill-harness/scenarios"
)

// localSetting is a local 3×1 cluster the harness started, with proxies.
func localSetting() Setting {
	return Setting{Provider: compose.ProviderLocal, Owned: true, ProcessControl: true, Masters: 3, Replicas: 1,
		Proxies: true, ReplicationProxies: true}
}

func testBounds() Bounds {
	b := DefaultBounds()
	b.MinDuration, b.MaxDuration = 2*time.Second, 3*time.Second
	return b
}

func draw(t *testing.T, seed int64, b Bounds, s Setting, cov *Coverage, n int) []Schedule {
	t.Helper()
	g, err := NewDrawer(seed, b, s, cov)
	if err != nil {
		t.Fatal(err)
	}
	var out []Schedule
	for i := 0; i < n; i++ {
		sc, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sc)
	}
	return out
}

func TestSameSeedDrawsTheSameSchedules(t *testing.T) {
	a := draw(t, 7, testBounds(), localSetting(), nil, 15)
	b := draw(t, 7, testBounds(), localSetting(), nil, 15)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 7 drew different schedules twice")
	}
	for i := range a {
		ya, _ := a[i].YAML("")
		yb, _ := b[i].YAML("")
		if string(ya) != string(yb) {
			t.Fatalf("schedule %d renders differently:\n%s\n%s", i, ya, yb)
		}
	}
	c := draw(t, 8, testBounds(), localSetting(), nil, 15)
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 7 and 8 drew the same schedules")
	}
}

// Every drawn schedule is a scenario the normal parser and validator
// accept from its YAML, within the bounds, of kinds the setting can run.
func TestDrawnSchedulesAreValidScenariosWithinBounds(t *testing.T) {
	b := testBounds()
	set := localSetting()
	kinds, err := Drawable(set, b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	overlapping, backToBack := 0, 0
	for i, s := range draw(t, 3, b, set, nil, 60) {
		data, err := s.YAML("test")
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, s.Name+".yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := scenarios.Load(file)
		if err == nil {
			err = sc.Validate()
		}
		if err != nil {
			t.Fatalf("schedule %d is not a valid scenario: %v\n%s", i, err, data)
		}
		if d := s.Load.Duration; d < b.MinDuration || d > b.MaxDuration || sc.Duration() != d {
			t.Errorf("schedule %d: load %s outside [%s, %s] (scenario says %s)", i, d, b.MinDuration, b.MaxDuration, sc.Duration())
		}
		if r := s.Load.Rate; r < b.MinRate || r > b.MaxRate {
			t.Errorf("schedule %d: rate %g outside [%g, %g]", i, r, b.MinRate, b.MaxRate)
		}
		if n := len(s.Faults); n < 1 || n > b.MaxFaults || len(sc.Faults) != n {
			t.Errorf("schedule %d: %d faults (scenario %d)", i, n, len(sc.Faults))
		}
		for j, f := range s.Faults {
			if !slices.Contains(kinds, f.Kind) {
				t.Errorf("schedule %d: kind %s is not drawable", i, f.Kind)
			}
			if f.For <= 0 || f.End() > s.Load.Duration {
				t.Errorf("schedule %d: %s ends after the load (%s)", i, f.Text(), s.Load.Duration)
			}
			if faults.Destructive(f.Kind, f.Params) {
				t.Errorf("schedule %d: destructive %s drawn without AllowDestructive", i, f.Text())
			}
			if j > 0 {
				if f.At < s.Faults[j-1].End() {
					overlapping++
				} else {
					backToBack++
				}
			}
		}
	}
	if overlapping == 0 || backToBack == 0 {
		t.Errorf("faults placed %d times overlapping and %d times back to back: want both", overlapping, backToBack)
	}
}

// The setting and the flags bound the kinds: no destructive kind without
// AllowDestructive, no network kind without proxies, nothing needing a
// replica on a cluster without one, no pipeline kind (explore runs none).
func TestDrawableFollowsTheKindsRules(t *testing.T) {
	b := testBounds()
	set := localSetting()
	safe, err := Drawable(set, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range safe {
		if faults.Destructive(k, map[string]string{}) {
			t.Errorf("destructive %s drawable without --allow-destructive", k)
		}
	}
	for _, want := range []string{"latency", "disconnect-before-reply", "partition", "replica-lag"} {
		if !slices.Contains(safe, want) {
			t.Errorf("%s not drawable on a local 3x1 cluster with proxies: %v", want, safe)
		}
	}
	set.AllowDestructive = true
	all, err := Drawable(set, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"failover", "slot-migration", "slot-down"} {
		if !slices.Contains(all, want) {
			t.Errorf("%s not drawable with --allow-destructive: %v", want, all)
		}
	}
	for _, k := range all {
		if s, _ := faults.Lookup(k); s.Rules.NeedsPipeline != "" {
			t.Errorf("pipeline kind %s drawable in a run without a pipeline", k)
		}
	}
	bare := Setting{Provider: compose.ProviderLocal, Owned: true, ProcessControl: true, AllowDestructive: true, Masters: 1, Replicas: 0}
	few, err := Drawable(bare, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range few {
		switch k {
		case "latency", "partition", "disconnect-before-reply", "failover", "replica-lag", "slot-migration", "slot-down":
			t.Errorf("%s drawable on one master without replicas or proxies", k)
		}
	}
	// Destructive failover modes that signal a process need process control.
	noSignals := localSetting()
	noSignals.AllowDestructive, noSignals.ProcessControl = true, false
	for _, s := range draw(t, 5, Bounds{MinDuration: 2 * time.Second, MaxDuration: 3 * time.Second, Kinds: []string{"failover"}}, noSignals, nil, 20) {
		for _, f := range s.Faults {
			if faults.NeedsProcessControl(f.Kind, f.Params) {
				t.Errorf("%s drawn without process control", f.Text())
			}
		}
	}
	if _, err := Drawable(localSetting(), Bounds{Kinds: []string{"failover"}}); err == nil || !strings.Contains(err.Error(), "--allow-destructive") {
		t.Errorf("--kinds failover without --allow-destructive: %v; want an error naming the flag", err)
	}
	if _, err := Drawable(localSetting(), Bounds{Kinds: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "unknown fault kind") {
		t.Errorf("--kinds nope: %v", err)
	}
}

// A kind explored far less than the others is drawn far more often.
func TestCoverageSteersTheDraw(t *testing.T) {
	b := testBounds()
	b.Kinds = []string{"bandwidth", "latency", "slicer", "disconnect-before-reply"}
	count := func(cov *Coverage) int {
		n := 0
		for _, s := range draw(t, 11, b, localSetting(), cov, 40) {
			if slices.Contains(s.Kinds(), "slicer") {
				n++
			}
		}
		return n
	}
	fresh := count(nil)
	cov := NewCoverage()
	cov.Kinds = map[string]int{"bandwidth": 500, "latency": 500, "disconnect-before-reply": 500}
	steered := count(cov)
	if steered <= fresh || steered < 36 {
		t.Fatalf("slicer in %d of 40 schedules with a fresh coverage, %d when every other kind has 500 runs: want nearly all", fresh, steered)
	}
}

func TestCoverageStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	c, err := LoadCoverage(path)
	if err != nil || c.Runs != 0 {
		t.Fatalf("missing state: %+v, %v; want an empty coverage", c, err)
	}
	for _, s := range draw(t, 2, testBounds(), localSetting(), nil, 5) {
		c.Add(s)
	}
	c.Seeds = append(c.Seeds, 2)
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCoverage(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Runs != 5 || !reflect.DeepEqual(back.Kinds, c.Kinds) || !reflect.DeepEqual(back.Pairs, c.Pairs) || !reflect.DeepEqual(back.Shapes, c.Shapes) {
		t.Fatalf("state did not round-trip: %+v vs %+v", back, c)
	}
	raw, _ := os.ReadFile(path)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc["kinds"] == nil || doc["pairs"] == nil || doc["shapes"] == nil {
		t.Fatalf("state file: %s (%v)", raw, err)
	}
	if err := os.WriteFile(path, []byte("{nope"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCoverage(path); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("garbage state: %v; want an error naming the fix", err)
	}
}

// With the pipeline, the pipeline kinds are drawn, and every schedule
// carries a pipeline: section the validator accepts (the fault's outage
// within the reservation TTL).
func TestPipelineSchedulesDrawThePipelineKinds(t *testing.T) {
	b := testBounds()
	if k, _ := Drawable(localSetting(), b); slices.Contains(k, "dispatcher-crash") {
		t.Fatal("dispatcher-crash drawable without the pipeline")
	}
	b.Pipeline = true
	seen := map[string]bool{}
	for i, s := range draw(t, 9, b, localSetting(), nil, 30) {
		if s.Pipeline == nil {
			t.Fatalf("schedule %d has no pipeline", i)
		}
		sc, _, err := s.Scenario(s.Name)
		if err != nil || sc.Pipeline == nil || sc.Drain != s.Pipeline.Drain {
			t.Fatalf("schedule %d: %v", i, err)
		}
		// The access service sends: a drawn service-crash has something
		// to crash (with scan_after 0 it never took effect: a wasted run).
		if got := sc.Pipeline.Dispatcher.ScanAfter; got <= 0 || got != s.Pipeline.ScanAfter {
			t.Fatalf("schedule %d: dispatcher.scan_after %s, want the drawn %s", i, got, s.Pipeline.ScanAfter)
		}
		if !strings.HasSuffix(s.LoadShape(), "/pipeline") {
			t.Errorf("load shape %s does not say pipeline", s.LoadShape())
		}
		for _, k := range s.Kinds() {
			seen[k] = true
		}
	}
	if !seen["dispatcher-crash"] || !seen["compensator-crash"] {
		t.Fatalf("30 pipeline schedules drew %v: want both pipeline kinds", seen)
	}
}
