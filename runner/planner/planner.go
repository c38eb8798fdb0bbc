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

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/scenarios"
	"seckill-harness/sut"
	"seckill-harness/sut/badpaths"
	"seckill-harness/sut/httpsut"
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
	Generator    history.Generator
	ActivityID   string // --activity: a shared activity (generators)
	ActivityWait time.Duration
	PostgresURL  string
	PostgresKeep bool

	// What a caller that runs many plans, or brings a system of its own,
	// already holds and hands to the plan as it is. None of these is a
	// scenario field: they are not in the resolved scenario.

	// Stand, when set, is a cluster (with its proxies and PostgreSQL) the
	// caller opened and keeps: the plan runs on it (lifecycle.Plan.Stand)
	// and Cluster is not opened. The scenario's topology must describe it:
	// the faults are validated against that topology.
	Stand *lifecycle.Stand
	// RunActivityID names the run's own activity (set up by the run, never
	// shared: lifecycle.Plan.Activity.ID without Activity.Shared), so that
	// runs one after another on one Stand never meet; "": run<unix-ms>.
	// Refused with ActivityID (a shared activity).
	RunActivityID string
	// Secret keys the reservation ids (lifecycle.Plan.Secret); nil: one
	// derived from the scenario's seed.
	Secret []byte
	// System, when set, builds the run's system under test on the run's
	// store (lifecycle.Plan.Path) in place of the reference: a known-bad
	// path of the self-test, a test's own system, a team's reserve script.
	// SystemName (required with it) names it in the report
	// (lifecycle.Plan.PathName). Refused when the scenario's path (or
	// --path) names a system other than the reference: one plan runs one
	// system under test.
	System     func(*lua.Store) sut.System
	SystemName string
}

// Overrides are run flags that change the scenario before it is validated.
type Overrides struct {
	Faults []string // --fault: added to the scenario's timeline
	Path   string   // --path ("": the scenario's)
	// Adapter is --adapter: a contract adapter file (relative to the
	// working directory) that puts a team's reserve script under test in
	// place of the scenario's adapter: or the reference ("": the scenario's).
	Adapter string
	// StrictPreflight is --strict-preflight: every finding of the adapter
	// file's pre-flight refuses the load (the file's preflight: strict).
	StrictPreflight bool
	// ServiceCmd and ServiceReady (--service-cmd, --service-ready) replace
	// the scenario's service_cmd: and service_ready: when not "".
	ServiceCmd, ServiceReady string
	// Service and ServiceMapping are --service URL and --service-mapping
	// FILE: a running access service under test over HTTP in place of the
	// scenario's service: or the reference ("": the scenario's).
	Service, ServiceMapping string
	LocalSoldOut            time.Duration // --local-soldout (0: the scenario's)
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
	if err := childService(s); err != nil {
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
		Buckets: uint32(s.Activity.Buckets), Window: s.Activity.Window, Faults: planned,
		Judging: lifecycle.Judging{Evaluate: s.Evaluate, Waived: s.Waived, ExpectFail: s.Assertions.ExpectFail,
			TolerateEvents: s.TolerateEvents, Regressions: s.Regressions},
		Resolved: s.Resolved(), Wait: s.Wait,
		Pipeline: s.Pipeline, Drain: s.Drain, LocalSoldOut: sut.LocalSoldOutConfig{TTL: s.LocalSoldOut},
		Lua: lifecycle.LuaPlan{Dir: in.LuaDir}, Generator: in.Generator, Activity: lifecycle.ActivityPlan{Wait: in.ActivityWait},
		Postgres: lifecycle.PostgresPlan{URL: in.PostgresURL, Keep: in.PostgresKeep},
		Service:  lifecycle.ServicePlan{Cmd: s.ServiceCmd, Ready: s.ServiceReady}}
	if r := s.Assertions.MaxDroppedRatio; r != nil {
		p.Judging.Bounds.MaxDroppedRatio = *r
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
		p.Activity.ID, p.Activity.Shared = in.ActivityID, true
	}
	if err := in.adapter(s, p); err != nil {
		return nil, err
	}
	if s.ServiceCmd != "" {
		p.Service.Listen = childListen(s)
	}
	if err := in.service(s, p); err != nil {
		return nil, err
	}
	if err := in.hand(p); err != nil {
		return nil, err
	}
	return p, nil
}

// hand puts on p what the caller holds (Stand, RunActivityID, Secret,
// System), refusing a combination that would run something other than
// the plan states.
func (in Inputs) hand(p *lifecycle.Plan) error {
	if in.RunActivityID != "" && p.Activity.Shared {
		return fmt.Errorf("planner: a run's own activity %q and a shared activity %q: give one", in.RunActivityID, p.Activity.ID)
	}
	if in.System != nil {
		if p.PathName != "" {
			return fmt.Errorf("planner: the scenario's path %q and the system %q: one plan runs one system under test", p.PathName, in.SystemName)
		}
		if in.SystemName == "" {
			return fmt.Errorf("planner: a system under test without a name: give SystemName (the report names the system it ran)")
		}
		p.Path, p.PathName = in.System, in.SystemName
	} else if in.SystemName != "" {
		return fmt.Errorf("planner: SystemName %q without a System: nothing to name", in.SystemName)
	}
	if in.RunActivityID != "" {
		p.Activity.ID = in.RunActivityID
	}
	p.Stand, p.Secret = in.Stand, in.Secret
	return nil
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
	if in.Adapter != "" {
		s.Adapter = in.Adapter
		s.MarkFlag("adapter", "--adapter "+in.Adapter)
	}
	if in.Service != "" {
		s.Service = scenarios.Service{URL: in.Service, Mapping: in.ServiceMapping}
		s.MarkFlag("service", "--service "+in.Service)
		s.MarkFlag("service.url", "--service "+in.Service)
		if in.ServiceMapping != "" {
			s.MarkFlag("service.mapping", "--service-mapping "+in.ServiceMapping)
		}
	} else if in.ServiceMapping != "" && in.ServiceCmd == "" && s.ServiceCmd == "" {
		return fmt.Errorf("--service-mapping %s without --service: give the service's URL (or --service-cmd to start it)", in.ServiceMapping)
	} else if in.ServiceMapping != "" {
		s.Service.Mapping = in.ServiceMapping // the child's URL comes with it (childService)
		s.MarkFlag("service.mapping", "--service-mapping "+in.ServiceMapping)
	}
	if in.LocalSoldOut != 0 {
		s.LocalSoldOut = in.LocalSoldOut
		s.MarkFlag("local_soldout", "--local-soldout "+in.LocalSoldOut.String())
	}
	if in.ServiceCmd != "" {
		s.ServiceCmd = in.ServiceCmd
		s.MarkFlag("service_cmd", "--service-cmd "+in.ServiceCmd)
	}
	if in.ServiceReady != "" {
		s.ServiceReady = in.ServiceReady
		s.MarkFlag("service_ready", "--service-ready "+in.ServiceReady)
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

// BuildSuite builds what one scenario argument runs: for a scenario its
// one plan (Build; the Suite has no Name), for a suite every member's plan
// (each Build with in, after the suite itself is validated), so that no
// run starts before every plan of the suite is known to be valid.
func BuildSuite(s *scenarios.Scenario, in Inputs) (lifecycle.Suite, error) {
	if !s.IsSuite() {
		p, err := Build(s, in)
		if err != nil {
			return lifecycle.Suite{}, err
		}
		return lifecycle.Suite{Plans: []*lifecycle.Plan{p}}, nil
	}
	if err := Validate(s); err != nil {
		return lifecycle.Suite{}, err
	}
	members, err := s.Members()
	if err != nil {
		return lifecycle.Suite{}, err
	}
	su := lifecycle.Suite{Name: s.Name}
	for _, m := range members {
		if why := memberNotFor(m, in); why != "" {
			su.Skipped = append(su.Skipped, lifecycle.SkippedMember{Name: m.Name, Reason: why})
			continue
		}
		p, err := Build(m, in)
		if err != nil {
			return lifecycle.Suite{}, fmt.Errorf("suite %s, member %s: %w", s.Name, m.Name, err)
		}
		su.Plans = append(su.Plans, p)
	}
	if len(su.Plans) == 0 {
		return lifecycle.Suite{}, fmt.Errorf("suite %s: no member can run on this system under test (%s): run the suite without it", s.Name, su.Skipped[0].Reason)
	}
	return su, nil
}

// memberNotFor is why suite member m cannot run on the system under test
// in names ("" when it can): a member with a pipeline on an adapter file
// (scenarios.AdapterCannotRun), or on a service whose mapping does not say
// state: reference (scenarios.ServiceCannotRun). Such a member is skipped,
// not failed: the suite judges the system on the members it can run, and
// says which it skipped and why. A mapping that does not load is left to
// Build, which names its error.
func memberNotFor(m *scenarios.Scenario, in Inputs) string {
	why := ""
	switch {
	case in.Adapter != "" || m.Adapter != "":
		why = scenarios.AdapterCannotRun(m)
	case in.Service != "" || in.ServiceCmd != "" || m.Service.URL != "" || m.ServiceCmd != "":
		mapping := m.Service.Mapping
		if in.ServiceMapping != "" {
			mapping = in.ServiceMapping
		}
		if mp, err := httpsut.LoadMapping(mapping); err == nil {
			why = scenarios.ServiceCannotRun(m, mp)
		}
	}
	if why != "" {
		return "it runs the pipeline, and " + why
	}
	return ""
}

// TopologyOf is the topology the cluster flags c give a scenario made
// from flags (the inverse of the plan's cluster spec).
func TopologyOf(c lifecycle.ClusterSpec) scenarios.Topology {
	return scenarios.Topology{Masters: c.Masters, Replicas: c.Replicas, NodeTimeout: c.NodeTimeout,
		AppendOnly: c.AppendOnly, PoolSize: c.PoolSize, PoolTimeout: c.PoolTimeout}
}

// Load resolves nameOrFile with seed and sets (Resolve) and builds its plan (Build).
func Load(ctx context.Context, nameOrFile string, sets []string, seed *int64, in Inputs) (*lifecycle.Plan, error) {
	s, err := Resolve(ctx, nameOrFile, sets, seed)
	if err != nil {
		return nil, err
	}
	return Build(s, in)
}

// LoadFlags are run's flags that describe an ad-hoc load. With a scenario
// they are refused (use --set), so a CI job never runs something other
// than it reads.
var LoadFlags = []string{"users", "stock", "buckets", "rate", "duration", "mode", "concurrency", "shape", "max-in-flight",
	"max-ops", "timeout", "retries", "reservation-ttl", "mix-replay", "mix-same-user", "mix-foreign-request", "mix-release",
	"slope", "amplitude", "period", "peak", "spike-at", "ramp-up", "hold", "ramp-down", "name"}

// ForRun is the scenario `run [nameOrFile]` runs; args are run's
// arguments (none or one). With no argument it is
// the ad-hoc load of the flags f (scenarios.FromFlags: validated by Build
// as the same load written in a file would be); --set is then refused.
// With one (nameOrFile) it is the resolved scenario with seed and sets (Resolve), and
// any of LoadFlags in f.Given is refused, naming the flags and --set as
// the fix. It does not validate (Build and Validate do).
func ForRun(ctx context.Context, args []string, f scenarios.Flags, sets []string, seed *int64) (*scenarios.Scenario, error) {
	if len(args) == 0 {
		if len(sets) > 0 {
			return nil, fmt.Errorf("--set changes a scenario: name one (seckill-harness run NAME --set …), or use the load flags")
		}
		return scenarios.FromFlags(f), nil
	}
	var given []string
	for _, name := range LoadFlags {
		if _, ok := f.Given[name]; ok {
			given = append(given, "--"+name)
		}
	}
	if len(given) > 0 {
		return nil, fmt.Errorf("%s describe an ad-hoc load and cannot be combined with scenario %q: use --set (e.g. --set phases.0.rate=500, --set activity.stock=100)", strings.Join(given, ", "), args[0])
	}
	return Resolve(ctx, args[0], sets, seed)
}
