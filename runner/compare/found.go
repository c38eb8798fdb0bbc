package compare

import (
	"context"
	"io"

	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

// Found is what a capacity search at an axis value found, measured at the
// capacity rate (see reports.VariantCapacity).
type Found struct {
	CapacityOpsPerS   float64 `json:"capacity_ops_per_s"`
	BrokeOpsPerS      float64 `json:"broke_ops_per_s"`
	Converged         bool    `json:"converged"`
	Confirmations     int     `json:"confirmations"`
	ConfirmationsHeld int     `json:"confirmations_held"`
	Errors            int64   `json:"errors"`
	ErrorRatio        float64 `json:"error_ratio"`
	SoldOutShare      float64 `json:"sold_out_share"`
	Speedup           float64 `json:"speedup"`
	// Placement of the buckets and the ceiling it implies.
	Placement      *Placement `json:"placement"`
	CeilingSpeedup float64    `json:"ceiling_speedup"`
	// Projection: computed, never measured.
	Projection *reports.CapacityProjection `json:"projection,omitempty"`
	Steps      int                         `json:"steps"`
	// BoundBy is what ended the search (see judgeBound): "system: hot
	// master at N cores", "stand: generator late M%" or "" when nothing
	// broke. StandBound: the stand could not pace the next rate, the
	// system's limit was not reached, CapacityOpsPerS and the projection
	// are lower bounds.
	BoundBy    string `json:"bound_by,omitempty"`
	StandBound bool   `json:"stand_bound"`

	search *SearchResult[Step]
	final  Step
}

// searchAt is the measure of compare --capacity and of capacity: a
// capacity search at each axis value.
type searchAt struct{ co CapacityOptions }

func (m searchAt) at(ctx context.Context, log io.Writer, q *lifecycle.Plan, v Value, out lifecycle.Output) (Row, error) {
	sr, pl, err := searchCapacity(ctx, log, q, m.co, v.Path, out)
	if err != nil {
		return Row{}, err
	}
	r := Row{Variant: v.Label, Path: v.Path, Buckets: q.Buckets, Settings: append([]string{}, v.Settings...),
		Found: &Found{CapacityOpsPerS: sr.Held, BrokeOpsPerS: sr.Broke, Converged: sr.Converged, Confirmations: sr.Confirmations,
			ConfirmationsHeld: sr.ConfirmationsHeld, Placement: pl, Steps: len(sr.Steps), search: sr}}
	r.BoundBy, r.StandBound = boundOf(sr)
	final, ok := sr.Final()
	if !ok {
		return r, nil
	}
	s := final.Step
	r.final = s
	r.P99Ms, r.Errors, r.ErrorRatio, r.SoldOutShare, r.MasterCPU, r.ReportDir = s.P99Ms, s.errors, s.ErrorRatio, s.SoldOutShare, s.MasterCPU, s.ReportDir
	r.MasterCPUErr, r.CPUSpread = s.MasterCPUErr, spreadOf(s.MasterCPU)
	r.Projection = project(s, pl)
	if r.Projection != nil && r.StandBound {
		r.Projection.LowerBound = true
	}
	return r, nil
}

// project computes, from one measured step, the capacity with every master
// on its own core: server CPU per op = the masters' CPU over the load /
// the operations; one master with a core of its own serves 1 / that; the
// placement's ceiling multiplies it. nil when the CPU was not read.
func project(s Step, pl *Placement) *reports.CapacityProjection {
	var server float64
	for _, m := range s.MasterCPU {
		server += m.CPUSecs
	}
	if server <= 0 || s.ops <= 0 || pl == nil || pl.Ceiling <= 0 {
		return nil
	}
	pr := &reports.CapacityProjection{ServerCPUPerOpUs: 1e6 * server / float64(s.ops), ClientCPUPerOpUs: 1e6 * s.ClientCPUSecs / float64(s.ops)}
	pr.PerMasterOpsPerS = 1e6 / pr.ServerCPUPerOpUs
	pr.OpsPerS = pr.PerMasterOpsPerS * pl.Ceiling
	pr.ClientCores = pr.OpsPerS * pr.ClientCPUPerOpUs / 1e6
	return pr
}

// relate sets the speed-ups of capacity rows against the first row of
// their path.
func relate(rows []Row) {
	var base *Row
	for i := range rows {
		r := &rows[i]
		if r.Found == nil {
			continue
		}
		if base == nil || base.Path != r.Path {
			base = r
		}
		if base.CapacityOpsPerS > 0 {
			r.Speedup = r.CapacityOpsPerS / base.CapacityOpsPerS
		}
		if base.Placement != nil && r.Placement != nil && base.Placement.Ceiling > 0 {
			r.CeilingSpeedup = r.Placement.Ceiling / base.Placement.Ceiling
		}
		if base.Projection != nil && r.Projection != nil && base.Projection.OpsPerS > 0 {
			r.Projection.Speedup = r.Projection.OpsPerS / base.Projection.OpsPerS
		}
	}
}

// summary is the report section's view of a capacity row.
func (f *Found) summary(r Row) reports.CompareVariant {
	s := f.final
	v := reports.CompareVariant{Name: r.Variant, Buckets: int(r.Buckets), Passed: f.CapacityOpsPerS > 0, Ops: s.ops,
		ThroughputOpsPerS: s.ThroughputOpsPerS, LatencyMs: s.latency, Outcomes: s.outcomes, Stock: s.stock, Path: r.Path,
		ReportFile: reportFile(r.ReportDir)}
	vc := &reports.VariantCapacity{OpsPerS: f.CapacityOpsPerS, BrokeOpsPerS: f.BrokeOpsPerS, Confirmations: f.Confirmations,
		ConfirmationsHeld: f.ConfirmationsHeld, P99Ms: r.P99Ms, ErrorRatio: f.ErrorRatio, SoldOutShare: f.SoldOutShare,
		Speedup: f.Speedup, CeilingSpeedup: f.CeilingSpeedup, Projection: f.Projection, MasterCores: map[string]float64{},
		BoundBy: f.BoundBy, StandBound: f.StandBound}
	for _, m := range r.MasterCPU {
		vc.MasterCores[m.Addr] = m.Cores
	}
	if f.Placement != nil {
		vc.BucketsPerMaster, vc.Spread, vc.Ceiling = f.Placement.PerMaster, f.Placement.Spread(), f.Placement.Ceiling
	}
	v.Capacity = vc
	return v
}
