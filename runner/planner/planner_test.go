package planner

import (
	"math"
	"strings"
	"testing"
	"time"

	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/scenarios"
	"seckill-harness/sut"
)

func flagScenario(cfg runner.Config, given map[string]string) *scenarios.Scenario {
	return scenarios.FromFlags(scenarios.Flags{Name: "adhoc", Load: cfg, Stock: 1000, Buckets: 2, Given: given,
		Topology: scenarios.Topology{Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second}})
}

// The ad-hoc load of run's defaults builds; every way to break it that a
// file would be refused for is refused here too, naming the flag.
func TestFlagsPassTheScenarioValidation(t *testing.T) {
	if _, err := Build(flagScenario(runner.DefaultConfig(), nil), Inputs{}); err != nil {
		t.Fatalf("run's defaults: %v", err)
	}
	for name, c := range map[string]struct {
		edit  func(*runner.Config)
		given map[string]string
		in    Inputs
		want  string
	}{
		"nan rate":  {func(c *runner.Config) { c.Shape.Rate = math.NaN() }, map[string]string{"rate": "NaN"}, Inputs{}, "--rate NaN: phases[0].rate: NaN: want a finite number"},
		"inf peak":  {func(c *runner.Config) { c.Shape.Kind, c.Shape.Peak = "spike", math.Inf(1) }, map[string]string{"peak": "+Inf"}, Inputs{}, "--peak +Inf: phases[0].peak"},
		"nan share": {func(c *runner.Config) { c.Mix.Release = math.NaN() }, nil, Inputs{}, "phases[0].mix.release: NaN: a share is between 0 and 1"},
		"too long":  {func(c *runner.Config) { c.Shape.Rate, c.Duration = 300, 100000*time.Hour }, map[string]string{"duration": "100000h"}, Inputs{}, "--duration 100000h: phases: the phases last 100000h0m0s in all: at most 24h0m0s"},
		"overlap": {func(*runner.Config) {}, nil, Inputs{Overrides: Overrides{Faults: []string{"failover:mode=kill,at=1s", "failover:at=1s"}}},
			"--fault failover:at=1s: faults[1]: failover on hot-master during [1s, 10s) overlaps faults[0]"},
		"bad path": {func(*runner.Config) {}, nil, Inputs{Overrides: Overrides{Path: "nosuch"}}, `--path nosuch: path: "nosuch": unknown reserve path`},
	} {
		cfg := runner.DefaultConfig()
		c.edit(&cfg)
		_, err := Build(flagScenario(cfg, c.given), c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", name, err, c.want)
		}
	}
}

// A scenario file gets --fault through the same rules: two exclusive
// faults on one target, one from the file and one from the flag, overlap.
func TestFaultFlagsOnAScenarioAreValidatedWithIt(t *testing.T) {
	s, err := scenarios.Parse("t.yaml", []byte("phases: [{duration: 10s, rate: 100}]\nfaults: [{kind: failover, at: 2s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(s, Inputs{Overrides: Overrides{Faults: []string{"failover:at=3s,for=2s"}}})
	if err == nil || !strings.Contains(err.Error(), "--fault failover:at=3s,for=2s: faults[1]") || !strings.Contains(err.Error(), "must not overlap") {
		t.Fatalf("%v", err)
	}
	s2, _ := scenarios.Parse("t.yaml", []byte("phases: [{duration: 10s, rate: 100}]\n"))
	p, err := Build(s2, Inputs{Overrides: Overrides{Faults: []string{"failover:at=3s,for=2s", "latency:at=3s"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Faults) != 2 || strings.Join(p.FaultNames, ",") != "failover,latency" {
		t.Fatalf("faults %d, names %v", len(p.Faults), p.FaultNames)
	}
}

// A known-bad path is valid for Build (and the validate command) but
// not for a bare Validate, which knows only the reference.
func TestPathsAreTheRunnableOnes(t *testing.T) {
	s, _ := scenarios.Parse("t.yaml", []byte("path: get-then-decr\n"))
	if err := s.Validate(); err == nil {
		t.Fatal("a bare Validate accepted a bad path")
	}
	p, err := Build(s, Inputs{})
	if err != nil || p.PathName != "get-then-decr" || p.Path == nil {
		t.Fatalf("%v %+v", err, p)
	}
}

// CheckLoad (lifecycle.Execute's backstop) holds a plan made without a
// scenario, such as a capacity step, to the same limits.
func TestCheckLoadHoldsPlansToTheLimits(t *testing.T) {
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate = 2 * scenarios.MaxRate
	err := runner.CheckLoad([]runner.Phase{{Name: "step", Config: cfg}})
	if err == nil || !strings.Contains(err.Error(), "at most 1000000 ops/s") {
		t.Fatalf("%v", err)
	}
	cfg.Shape.Rate = math.NaN()
	if err := runner.CheckLoad([]runner.Phase{{Name: "step", Config: cfg}}); err == nil || !strings.Contains(err.Error(), "finite") {
		t.Fatalf("%v", err)
	}
	cfg.Shape.Rate = 100
	if err := runner.CheckLoad([]runner.Phase{{Name: "step", Config: cfg}}); err != nil {
		t.Fatal(err)
	}
}

// What a caller holds reaches the plan as it is: the stand, a run's own
// activity (not shared), the secret and a system under test with its
// name; a combination that would run something other than the plan
// states is refused.
func TestInputsTheCallerHolds(t *testing.T) {
	st := &lifecycle.Stand{}
	system := func(st *lua.Store) sut.System { return sut.NewReference(st) }
	p, err := Build(flagScenario(runner.DefaultConfig(), nil), Inputs{Stand: st, RunActivityID: "st1-1", Secret: []byte("k"),
		System: system, SystemName: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Stand != st || p.Activity.ID != "st1-1" || p.Activity.Shared || string(p.Secret) != "k" || p.Path == nil || p.PathName != "mine" {
		t.Fatalf("plan: stand %p, activity %q shared %v, secret %q, path %v %q", p.Stand, p.Activity.ID, p.Activity.Shared, p.Secret, p.Path != nil, p.PathName)
	}
	for name, c := range map[string]struct {
		in   Inputs
		want string
	}{
		"two systems": {Inputs{Overrides: Overrides{Path: "get-then-decr"}, System: system, SystemName: "mine"},
			`the scenario's path "get-then-decr" and the system "mine": one plan runs one system under test`},
		"unnamed system":  {Inputs{System: system}, "a system under test without a name: give SystemName"},
		"two activities":  {Inputs{ActivityID: "shared", RunActivityID: "own"}, `a run's own activity "own" and a shared activity "shared": give one`},
		"name, no system": {Inputs{SystemName: "mine"}, "SystemName \"mine\" without a System"},
	} {
		if p, err := Build(flagScenario(runner.DefaultConfig(), nil), c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: plan %v, error %v; want %q", name, p != nil, err, c.want)
		}
	}
}
