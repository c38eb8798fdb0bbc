package planner

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/scenarios"
)

// raceFlags are race's defaults: stock 1 in one bucket on run's topology.
func raceFlags(given map[string]string) scenarios.Flags {
	return scenarios.Flags{Stock: 1, Buckets: 1, Given: given,
		Topology: scenarios.Topology{Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second}}
}

// TestRacePlanHoldsTheWinnersToExactlyMinStockUsers: race's plan is one
// closed-loop phase of one request per user, and its assertions pass only
// for exactly min(stock, users) ACCEPTED and the rest SOLD_OUT: one
// winner too many, or an answer that is neither, fails it.
func TestRacePlanHoldsTheWinnersToExactlyMinStockUsers(t *testing.T) {
	s, err := Race(raceFlags(nil), 200, 16)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, Inputs{})
	if err != nil {
		t.Fatalf("race's defaults: %v", err)
	}
	c := p.Phases[0].Config
	if len(p.Phases) != 1 || c.Mode != runner.ModeClosed || c.MaxOps != 200 || c.Users != 200 || c.Concurrency != 16 || c.SampleEvery != 0 {
		t.Fatalf("race phase: %+v", p.Phases)
	}
	judge := func(accepted, soldOut, other int64) bool {
		rep := &reports.Report{Totals: reports.Totals{Outcomes: map[string]int64{"ACCEPTED": accepted, "SOLD_OUT": soldOut, "ERROR": other}}}
		for _, a := range p.Judging.Evaluate(rep) {
			if strings.HasPrefix(a.Name, "outcomes.") && a.Status != reports.StatusPass {
				return false
			}
		}
		return true
	}
	if !judge(1, 199, 0) {
		t.Error("exactly one winner and 199 SOLD_OUT failed")
	}
	if judge(2, 198, 0) || judge(1, 198, 1) || judge(0, 200, 0) {
		t.Error("a wrong count of winners or answers passed")
	}
	if _, err := Race(raceFlags(nil), 0, 16); err == nil || !strings.Contains(err.Error(), "--users") {
		t.Errorf("no users: %v", err)
	}
	bad := raceFlags(map[string]string{"masters": "0"})
	bad.Topology.Masters = 0
	if s, err = Race(bad, 10, 2); err == nil {
		_, err = Build(s, Inputs{})
	}
	if err == nil || !strings.Contains(err.Error(), "--masters") {
		t.Errorf("--masters 0: %v, want it refused naming the flag", err)
	}
}

// TestForRunRefusesLoadFlagsWithAScenario: with a scenario the load flags
// are refused naming them (use --set); without one --set is refused.
func TestForRunRefusesLoadFlagsWithAScenario(t *testing.T) {
	ctx := context.Background()
	f := scenarios.Flags{Load: runner.DefaultConfig(), Stock: 10, Buckets: 1, Given: map[string]string{"rate": "5", "seed": "3"}}
	if _, err := ForRun(ctx, []string{"smoke"}, f, nil, nil); err == nil || !strings.Contains(err.Error(), "--rate") || strings.Contains(err.Error(), "--seed") {
		t.Errorf("smoke --rate 5: %v, want --rate refused (and --seed allowed)", err)
	}
	if _, err := ForRun(ctx, nil, f, []string{"seed=1"}, nil); err == nil || !strings.Contains(err.Error(), "--set") {
		t.Errorf("--set without a scenario: %v", err)
	}
	f.Given = map[string]string{"seed": "3"}
	if s, err := ForRun(ctx, []string{"smoke"}, f, nil, nil); err != nil || s.Name != "smoke" {
		t.Errorf("smoke --seed 3: %v", err)
	}
	if s, err := ForRun(ctx, nil, f, nil, nil); err != nil || s.Source != scenarios.FlagSource {
		t.Errorf("ad hoc: %v", err)
	}
}
