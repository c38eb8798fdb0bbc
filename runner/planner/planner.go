// Package planner turns a scenario into a lifecycle.Plan: the one way a
// plan is made from input. run (its flags become a scenario first,
// scenarios.FromFlags), a scenario file or built-in, compare's variants,
// capacity and explore's draws all go through Build, so every plan passes
// the same validation (scenarios.Scenario.ValidateFor with the runnable
// reserve paths: finite numbers, the limits of scenarios/limits.go, the
// fault timeline's rules) before anything starts.
package planner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"seckill-harness/runner"
	"seckill-harness/runner/badpaths"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/sut"
	"seckill-harness/scenarios"
)

// Paths lists the selectable reserve paths: the reference first, then
// every runnable known-bad path (negative controls).
func Paths() []string {
	out := []string{scenarios.DefaultPath}
	for _, n := range badpaths.Names() {
		if _, ok := badpaths.Lookup(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// CheckPath refuses a reserve path name that is not one of Paths ("" is the reference).
func CheckPath(name string) error {
	if name == "" || name == scenarios.DefaultPath {
		return nil
	}
	if _, ok := badpaths.Lookup(name); !ok {
		return fmt.Errorf("path %q: unknown; valid paths: %s", name, strings.Join(Paths(), ", "))
	}
	return nil
}

// Validate checks s (a suite with its members) as Build would, paths included.
func Validate(s *scenarios.Scenario) error {
	if err := s.ValidateFor(Paths()); err != nil {
		if s.Source == scenarios.FlagSource {
			return fmt.Errorf("the run's flags are not valid:\n%w", err)
		}
		return fmt.Errorf("scenario %s is not valid:\n%w", s.Source, err)
	}
	return nil
}

// Resolve finds a built-in or file (scenarios.ResolveContext) and applies
// seed (nil: the scenario's) and the --set values. It does not validate:
// Build and Validate do, after every override.
func Resolve(ctx context.Context, nameOrFile string, sets []string, seed *int64) (*scenarios.Scenario, error) {
	s, err := scenarios.ResolveContext(ctx, nameOrFile)
	if err != nil {
		return nil, err
	}
	if seed != nil {
		sets = append([]string{fmt.Sprintf("seed=%d", *seed)}, sets...)
	}
	for _, kv := range sets {
		if err := s.Set(kv); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Inputs are what a command adds to a scenario. The Overrides change the
// scenario itself and are validated with it; the rest says where and how
// the plan runs.
type Inputs struct {
	// Cluster is where to run. Its Masters, Replicas, NodeTimeout,
	// AppendOnly, PoolSize and PoolTimeout replace the scenario's
	// topology when Given reports their flag (masters, replicas,
	// node-timeout, appendonly, pool-size, pool-timeout) as given.
	Cluster lifecycle.ClusterSpec
	Given   func(flag string) bool // nil: none given
	Overrides

	LuaDir       string // --lua-dir ("": the embedded scripts)
	Generator    runner.Generator
	ActivityID   string // --activity: a shared activity (generators)
	ActivityWait time.Duration
	PostgresURL  string
	PostgresKeep bool
}

// Overrides are run flags that change the scenario before it is validated.
type Overrides struct {
	Faults       []string      // --fault: added to the scenario's timeline
	Path         string        // --path ("": the scenario's)
	LocalSoldOut time.Duration // --local-soldout (0: the scenario's)
	// WaitReplicas and WaitTimeout (--wait-replicas, --wait-timeout) replace
	// the scenario's wait: fields when not nil.
	WaitReplicas *int
	WaitTimeout  *time.Duration
}

// Build applies in's overrides to s (a scenario, not a suite), validates
// it and returns its plan. s is changed in place (its Resolved() is what
// report.json's resolved_scenario states). Every error is a usage error
// naming the field (and the file:line, --set or flag that gave it).
func Build(s *scenarios.Scenario, in Inputs) (*lifecycle.Plan, error) {
	if s.IsSuite() {
		return nil, fmt.Errorf("%s is a suite (%s): pick one of its members", s.Name, strings.Join(s.Suite, ", "))
	}
	if err := in.apply(s); err != nil {
		return nil, err
	}
	if err := Validate(s); err != nil {
		return nil, err
	}
	planned, err := s.Plan()
	if err != nil {
		return nil, err
	}
	p := &lifecycle.Plan{Name: s.Name, Cluster: clusterOf(s.Topology, in.Cluster), Stock: s.Activity.Stock,
		Buckets: uint32(s.Activity.Buckets), Window: s.Activity.Window, Faults: planned, Evaluate: s.Evaluate,
		Waived: s.Waived, Resolved: s.Resolved(), ExpectFail: s.Assertions.ExpectFail, Wait: s.Wait, TolerateEvents: s.TolerateEvents,
		Pipeline: s.Pipeline, Drain: s.Drain, LocalSoldOut: sut.LocalSoldOutConfig{TTL: s.LocalSoldOut},
		LuaDir: in.LuaDir, Generator: in.Generator, ActivityWait: in.ActivityWait,
		PostgresURL: in.PostgresURL, PostgresKeep: in.PostgresKeep}
	if r := s.Assertions.MaxDroppedRatio; r != nil {
		p.Bounds.MaxDroppedRatio = *r
	}
	for _, ph := range s.Phases {
		p.Phases = append(p.Phases, runner.Phase{Name: ph.Name, Config: ph.Config})
	}
	for _, f := range s.Faults {
		p.FaultNames = append(p.FaultNames, f.Name)
	}
	if s.Path != scenarios.DefaultPath {
		p.PathName = s.Path
		p.Path, _ = badpaths.Lookup(s.Path) // Validate checked the name
	}
	if in.ActivityID != "" {
		p.ActivityID, p.SharedActivity = in.ActivityID, true
	}
	return p, nil
}

// apply puts the overrides and the given cluster flags on s.
func (in Inputs) apply(s *scenarios.Scenario) error {
	given := in.Given
	if given == nil {
		given = func(string) bool { return false }
	}
	t, c := &s.Topology, in.Cluster
	for flag, set := range map[string]func() any{
		"masters": func() any { t.Masters = c.Masters; return c.Masters }, "replicas": func() any { t.Replicas = c.Replicas; return c.Replicas },
		"node-timeout": func() any { t.NodeTimeout = c.NodeTimeout; return c.NodeTimeout }, "appendonly": func() any { t.AppendOnly = c.AppendOnly; return c.AppendOnly },
		"pool-size": func() any { t.PoolSize = c.PoolSize; return c.PoolSize }, "pool-timeout": func() any { t.PoolTimeout = c.PoolTimeout; return c.PoolTimeout },
	} {
		if given(flag) {
			s.MarkFlag("topology."+strings.ReplaceAll(flag, "-", "_"), fmt.Sprintf("--%s %v", flag, set()))
		}
	}
	if in.Path != "" {
		s.Path = in.Path
		s.MarkFlag("path", "--path "+in.Path)
	}
	if in.LocalSoldOut != 0 {
		s.LocalSoldOut = in.LocalSoldOut
		s.MarkFlag("local_soldout", "--local-soldout "+in.LocalSoldOut.String())
	}
	in.applyWait(s)
	return s.AddFaultFlags(in.Faults)
}

// applyWait puts --wait-replicas and --wait-timeout over the scenario's wait:.
func (in Inputs) applyWait(s *scenarios.Scenario) {
	if in.WaitReplicas != nil {
		s.Wait.Replicas = *in.WaitReplicas
		s.MarkFlag("wait", fmt.Sprintf("--wait-replicas %d", *in.WaitReplicas))
		if s.Wait.Timeout == 0 {
			s.Wait.Timeout = sut.DefaultWaitTimeout
		}
	}
	if in.WaitTimeout != nil {
		s.Wait.Timeout = *in.WaitTimeout
		s.MarkFlag("wait", "--wait-timeout "+in.WaitTimeout.String())
	} else if s.Wait.Replicas == 0 {
		s.Wait.Timeout = 0
	}
}

// clusterOf is the cluster spec of topology t on the cluster c names.
func clusterOf(t scenarios.Topology, c lifecycle.ClusterSpec) lifecycle.ClusterSpec {
	c.Masters, c.Replicas, c.AppendOnly = t.Masters, t.Replicas, t.AppendOnly
	c.PoolSize, c.PoolTimeout = t.PoolSize, t.PoolTimeout
	if t.NodeTimeout > 0 {
		c.NodeTimeout = t.NodeTimeout
	}
	c.ExtraConfig = t.RedisConfig()
	return c
}

// Load resolves nameOrFile with seed and sets (Resolve) and builds its plan (Build).
func Load(ctx context.Context, nameOrFile string, sets []string, seed *int64, in Inputs) (*lifecycle.Plan, error) {
	s, err := Resolve(ctx, nameOrFile, sets, seed)
	if err != nil {
		return nil, err
	}
	return Build(s, in)
}

// Variants builds compare's variants: per spec, nameOrFile with sets and
// then the variant's own settings, each validated as a plan of its own.
func Variants(ctx context.Context, nameOrFile string, sets []string, seed *int64, in Inputs, specs []lifecycle.VariantSpec) ([]lifecycle.Variant, error) {
	var out []lifecycle.Variant
	for _, v := range specs {
		p, err := Load(ctx, nameOrFile, append(append([]string(nil), sets...), v.Sets...), seed, in)
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		out = append(out, lifecycle.Variant{VariantSpec: v, Plan: p})
	}
	return out, nil
}
