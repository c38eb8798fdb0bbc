package scenarios

import (
	"errors"
	"fmt"

	"seckill-harness/faults"
	"seckill-harness/runner"
)

// Plan builds the fault timeline: one faults.Planned per FaultSpec, in
// order, through faults.Plan exactly as --fault would (Planned.Spec is the
// equivalent --fault text, FaultSpec.Text). Planned has no name: name the
// report's fault windows with s.Faults[i].Name (same index) so that SLOs on
// "during <name>" / "after <name>" find their phase. Errors name the fault.
func (s *Scenario) Plan() ([]*faults.Planned, error) {
	var out []*faults.Planned
	var errs []error
	for i, f := range s.Faults {
		p, err := f.planOne()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: faults[%d] (%s): %w", s.where(fmt.Sprintf("faults[%d]", i)), i, f.Name, err))
			continue
		}
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Resolved is the fully resolved scenario for report.json: every default
// filled in, rate_scale applied (and recorded), durations as Go duration
// strings, rates in ops/s. Phase entries carry their planned start offset.
// "pipeline" (with its drain) is there only when the pipeline is on.
func (s *Scenario) Resolved() map[string]any {
	m := map[string]any{
		"name":   s.Name,
		"source": s.Source,
	}
	if s.Description != "" {
		m["description"] = s.Description
	}
	if s.Proves != "" {
		m["proves"] = s.Proves
	}
	if s.IsSuite() {
		m["suite"] = append([]string(nil), s.Suite...)
		if len(s.parsed.sets) > 0 {
			m["set"] = append([]string(nil), s.parsed.sets...)
		}
		return m
	}
	m["seed"] = s.Seed
	m["rate_scale"] = s.RateScale
	m["path"] = s.Path
	if s.Adapter != "" {
		m["adapter"] = s.Adapter
	}
	s.resolvedService(m)
	if s.LocalSoldOut > 0 {
		m["local_soldout"] = s.LocalSoldOut.String()
	}
	if len(s.TolerateEvents) > 0 {
		m["tolerate_events"] = append([]string(nil), s.TolerateEvents...)
	}
	if len(s.parsed.regressionText) > 0 {
		rm := map[string]any{}
		for k, t := range s.parsed.regressionText {
			rm[k] = t
		}
		m["regressions"] = rm
	}
	m["wait"] = map[string]any{"replicas": s.Wait.Replicas, "timeout": s.Wait.Timeout.String()}
	m["duration"] = s.Duration().String()
	m["topology"] = map[string]any{
		"masters": s.Topology.Masters, "replicas": s.Topology.Replicas,
		"node_timeout": s.Topology.NodeTimeout.String(), "appendonly": s.Topology.AppendOnly,
		"pool_size": s.Topology.PoolSize, "pool_timeout": s.Topology.PoolTimeout.String(),
		"min_replicas_to_write": s.Topology.MinReplicasToWrite, "min_replicas_max_lag": s.Topology.MinReplicasMaxLag.String(),
		"appendfsync": s.Topology.AppendFsync,
	}
	m["activity"] = map[string]any{
		"stock": s.Activity.Stock, "buckets": s.Activity.Buckets, "users": s.Activity.Users,
		"scale_users": s.Activity.ScaleUsers, "reservation_ttl": s.Activity.ReservationTTL.String(),
		"window": s.Activity.Window.String(),
	}
	var phases []any
	spans := s.PhaseSpans()
	for i, p := range s.Phases {
		phases = append(phases, phaseMap(p, spans[i].Start.String()))
	}
	m["phases"] = phases
	fl := []any{}
	for _, f := range s.Faults {
		fm := map[string]any{"name": f.Name, "kind": f.Kind, "at": f.At.String(), "for": f.For.String(), "fault": f.Text()}
		if f.Target != "" {
			fm["target"] = f.Target
		}
		params := map[string]any{}
		for k, v := range f.Params {
			params[k] = v
		}
		fm["params"] = params
		fl = append(fl, fm)
	}
	m["faults"] = fl
	if s.Pipeline != nil {
		m["pipeline"] = s.pipelineMap()
	}
	m["assertions"] = s.assertionsMap()
	return m
}

func phaseMap(p Phase, start string) map[string]any {
	c := p.Config
	pm := map[string]any{
		"name": p.Name, "start": start, "duration": c.Duration.String(), "mode": string(c.Mode),
		"concurrency": c.Concurrency, "max_ops": c.MaxOps, "timeout": c.CallTimeout.String(),
		"retries": c.RetrySends, "retry_backoff": c.RetryBackoff.String(),
		"mix": c.Mix.Map(),
	}
	if c.Mode == runner.ModeOpen {
		pm["max_in_flight"] = c.MaxInFlight
		sh := map[string]any{"kind": c.Shape.Kind, "rate": c.Shape.Rate}
		switch c.Shape.Kind {
		case "linear":
			sh["slope"] = c.Shape.Slope
		case "sine":
			sh["amplitude"], sh["period"] = c.Shape.Amplitude, c.Shape.Period.String()
		case "spike":
			sh["peak"], sh["spike_at"], sh["ramp_up"] = c.Shape.Peak, c.Shape.SpikeAt.String(), c.Shape.RampUp.String()
			sh["hold"], sh["ramp_down"] = c.Shape.Hold.String(), c.Shape.RampDown.String()
		}
		pm["shape"] = sh
	}
	return pm
}

func (s *Scenario) assertionsMap() map[string]any {
	a := s.Assertions
	m := map[string]any{}
	if a.Invariants == nil {
		m["invariants"] = "all"
	} else {
		m["invariants"] = append([]string(nil), a.Invariants...)
	}
	var slos []any
	for _, slo := range a.SLO {
		sm := map[string]any{"of": slo.Of}
		if slo.Phase != "" {
			sm["phase"] = slo.Phase
		}
		for _, b := range slo.bounds() {
			if b.limit != 0 {
				sm[b.key] = b.limit.String()
			}
		}
		if slo.MinThroughput != 0 {
			sm["min_throughput"] = slo.MinThroughput
		}
		slos = append(slos, sm)
	}
	if slos != nil {
		m["slo"] = slos
	}
	if a.MaxLostAcks != nil {
		m["max_lost_acks"] = *a.MaxLostAcks
	}
	if len(a.ExpectFail) > 0 {
		em := map[string]any{}
		for id, n := range a.ExpectFail {
			em[id] = map[string]any{"min": n}
		}
		m["expect_fail"] = em
	}
	if a.MaxDroppedRatio != nil {
		m["max_dropped_ratio"] = *a.MaxDroppedRatio
	}
	if a.MaxUnknownRatio != nil {
		m["max_unknown_ratio"] = *a.MaxUnknownRatio
	}
	if a.MinThroughput != nil {
		m["min_throughput"] = *a.MinThroughput
	}
	if len(a.Outcomes) > 0 {
		om := map[string]any{}
		for _, b := range a.Outcomes {
			bm := map[string]any{}
			if b.Exactly != nil {
				bm["exactly"] = *b.Exactly
			}
			if b.Min != nil {
				bm["min"] = *b.Min
			}
			if b.Max != nil {
				bm["max"] = *b.Max
			}
			om[b.Outcome] = bm
		}
		m["outcomes"] = om
	}
	return m
}

// resolvedService puts the service under test on m: service: {url,
// mapping}, service_cmd and service_ready, when set.
func (s *Scenario) resolvedService(m map[string]any) {
	if s.ServiceCmd != "" {
		m["service_cmd"] = s.ServiceCmd
	}
	if s.ServiceReady != "" {
		m["service_ready"] = s.ServiceReady
	}
	if s.Service.URL != "" {
		svc := map[string]any{"url": s.Service.URL}
		if s.Service.Mapping != "" {
			svc["mapping"] = s.Service.Mapping
		}
		m["service"] = svc
	}
}
