package runner

import (
	"seckill-harness/history"
	"seckill-harness/reports"
	"seckill-harness/sut"
)

// ReportMeta is what a report needs besides the run and its checks.
type ReportMeta struct {
	Scenario    string
	Versions    reports.Versions
	Topology    reports.Topology
	Phases      []reports.PhaseSpan
	Faults      []reports.Fault
	Assertions  []reports.Assertion
	HistoryFile string
	HGRMFile    string
	// Wait is the run's WAIT option: with it (or when operations sent
	// WAIT) the report gets its "wait" section.
	Wait sut.WaitPolicy
}

// BuildReport turns a run and meta into report.json's shape
// (docs/REPORT.md, "report.json"), without its checks: the report
// is not passed until checks.CheckReport.Fill adds them. It also returns
// the recorder whose histograms the report's percentiles come from (for
// latency.hgrm).
func BuildReport(res *Result, meta ReportMeta) (*reports.Report, *reports.Recorder) {
	cfg := res.Config
	a := res.Config
	rec := reports.NewRecorder(res.Began, meta.Phases)
	rec.SetLateStartThreshold(cfg.LateThreshold)
	var wire int64
	for _, o := range res.History.All() {
		s := reports.Sample{Intended: o.Intended, Start: o.Start, End: o.End, Outcome: o.TallyName(), Dropped: o.Outcome == history.OutcomeDropped}
		if o.Outcome == history.OutcomeError {
			s.ErrorClass = o.ErrClass.String()
		}
		rec.Add(s)
		wire += int64(o.Attempts)
	}
	for _, d := range res.Drops.Slots {
		rec.AddDropped(d.At, d.Count)
	}
	rep := &reports.Report{
		Scenario:    meta.Scenario,
		Seed:        cfg.Seed,
		StartedAt:   res.Began,
		DurationS:   res.Elapsed.Seconds(),
		Versions:    meta.Versions,
		Topology:    meta.Topology,
		Faults:      meta.Faults,
		Assertions:  meta.Assertions,
		HistoryFile: meta.HistoryFile,
		HGRMFile:    meta.HGRMFile,
		Load: reports.Load{
			Mode: string(a.Mode), Shape: a.Shape.Kind, TargetRate: a.Shape.Rate, Users: int64(a.Users),
			Concurrency: a.Concurrency, DurationS: a.Duration.Seconds(), TimeoutMs: float64(a.CallTimeout.Microseconds()) / 1000,
			ShapeParams: shapeParams(a),
		},
	}
	if cfg.Mode == ModeClosed {
		rep.Load.Shape, rep.Load.TargetRate = "closed", 0
	}
	if len(res.Phases) > 1 {
		var total float64
		for _, p := range res.Phases {
			total += p.Config.Duration.Seconds()
		}
		rep.Load.DurationS = total
	}
	rec.Fill(rep)
	rep.Totals.WireAttempts = wire
	rep.Totals.PacerClock = res.Observed.PacerClock

	// Not passed until the checks are added (checks.CheckReport.Fill).
	rep.Passed = false
	return rep, rec
}

func shapeParams(c Config) map[string]any {
	s := c.Shape
	m := map[string]any{"rate": s.Rate}
	switch s.Kind {
	case "linear":
		m["slope"] = s.Slope
	case "sine":
		m["amplitude"], m["period_s"] = s.Amplitude, s.Period.Seconds()
	case "spike":
		m["peak"], m["spike_at_s"], m["ramp_up_s"], m["hold_s"], m["ramp_down_s"] = s.Peak, s.SpikeAt.Seconds(), s.RampUp.Seconds(), s.Hold.Seconds(), s.RampDown.Seconds()
	}
	m["mix"] = c.Mix.Map()
	return m
}
