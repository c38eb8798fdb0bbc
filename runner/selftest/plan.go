package selftest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
	"seckill-harness/scenarios"
	"seckill-harness/sut/badpaths"
)

// ReferenceName is the reference path's name in the matrix.
const ReferenceName = scenarios.DefaultPath

// reference is the reference path as a matrix path: no system of its own,
// no pipeline defect.
var reference = badpaths.Info{Name: ReferenceName}

// planName names every self-test run (its plan and its scenario).
const planName = "selftest"

// standNodeTimeout is the node timeout the scenario of a run states for
// the stand. The stand does not report its cluster-node-timeout; this is
// the clusters' default, and no load of the matrix has a fault whose
// validation depends on it.
const standNodeTimeout = 2 * time.Second

var actSeq atomic.Int64

// plan builds the plan of one run of info under load l with seed through
// the planner: the load as a scenario (scenarioOf), and what the matrix
// holds that no scenario states: the stand, a fresh activity id, the
// secret, and the path's system under test (info.System; nil: the
// reference). planner.Build validates it like any scenario.
func plan(ctx context.Context, env Env, info badpaths.Info, l badpaths.Load, seed int64) (*lifecycle.Plan, error) {
	s, err := scenarioOf(ctx, env.Stand, info, l, seed)
	if err != nil {
		return nil, err
	}
	in := planner.Inputs{Stand: env.Stand, Secret: env.Secret,
		RunActivityID: fmt.Sprintf("st%d-%d", time.Now().UnixMilli(), actSeq.Add(1))}
	if info.System != nil {
		in.System, in.SystemName = info.System, info.Name
	}
	return planner.Build(s, in)
}

// scenarioOf is load l as a scenario made in code (scenarios.FromFlags):
// one phase of l's engine config with seed, l's stock and buckets, an
// activity open for an hour, l's fault on the timeline, l's pipeline
// (with seed, and the pipeline defects of info: the scenario field
// pipeline.defects) drained for l.Drain, on the stand's topology.
func scenarioOf(ctx context.Context, st *lifecycle.Stand, info badpaths.Info, l badpaths.Load, seed int64) (*scenarios.Scenario, error) {
	defects, err := info.Defects()
	if err != nil {
		return nil, err
	}
	cfg := l.Config
	cfg.Seed = seed
	f := scenarios.Flags{Name: planName, Load: cfg, Stock: l.Stock, Buckets: int(l.Buckets), Topology: topologyOf(ctx, st), Drain: l.Drain}
	if l.Pipeline != nil {
		pc := *l.Pipeline
		pc.Seed, pc.Defects = seed, defects
		f.Pipeline = &pc
	}
	s := scenarios.FromFlags(f)
	s.Activity.Window = time.Hour
	if l.Fault != "" {
		if err := s.AddFaultFlags([]string{l.Fault}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// topologyOf is the stand's cluster as a scenario states it: the masters
// and replicas the faults are validated against.
func topologyOf(ctx context.Context, st *lifecycle.Stand) scenarios.Topology {
	t := st.Topology(ctx)
	return scenarios.Topology{Masters: t.Masters, Replicas: t.ReplicasPerMaster, NodeTimeout: standNodeTimeout}
}
