package compare

import (
	"path/filepath"

	"seckill-harness/checks"
	"seckill-harness/history"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
)

// Row is one axis value's result, whatever the axis and whatever was
// measured: the value, the figures every measure has, and either one
// fixed load's figures (Run) or a capacity search's (Found). compare.json
// holds the rows; the tables show the columns their axis is about.
type Row struct {
	Variant  string   `json:"variant"`
	Path     string   `json:"path,omitempty"`
	Buckets  uint32   `json:"buckets"`
	Settings []string `json:"settings"`
	// P99Ms is the load's p99 (a search: at the capacity rate).
	P99Ms float64 `json:"p99_ms"`
	// MasterCPU is each master's CPU over the load (INFO cpu deltas of
	// used_cpu_sys + used_cpu_user, read when the load starts and ends;
	// a search: at the capacity rate); CPUSpread its hottest master
	// against the others.
	MasterCPU    []MasterCPU `json:"master_cpu,omitempty"`
	MasterCPUErr string      `json:"master_cpu_error,omitempty"`
	CPUSpread    *CPUSpread  `json:"master_cpu_spread,omitempty"`
	ReportDir    string      `json:"report_dir"`
	*Run
	*Found
}

// Run is what one fixed load at an axis value gave.
type Run struct {
	Passed            bool      `json:"passed"`
	Ops               int64     `json:"ops"`
	Accepted          int64     `json:"accepted"`
	ThroughputOpsPerS float64   `json:"throughput_ops_per_s"`
	AcceptedPerS      float64   `json:"accepted_per_s"`
	P50Ms             float64   `json:"p50_ms"`
	P999Ms            float64   `json:"p999_ms"`
	SoldOutAtS        []float64 `json:"sold_out_at_s"` // per bucket; -1 never
	FirstSoldOutS     float64   `json:"first_sold_out_s"`
	LastSoldOutS      float64   `json:"last_sold_out_s"`
	UnsoldAtFirst     int64     `json:"unsold_when_first_sold_out"`
	SoldOutWhileLeft  int       `json:"sold_out_answers_while_stock_left"`
	FinalUnsold       int64     `json:"final_unsold"`
	FailedChecks      []string  `json:"failed_checks,omitempty"`
	// Pool: the pool per node, the waits for a connection, their summed
	// and mean time, and the pool timeouts.
	PoolSize     int     `json:"pool_size,omitempty"`
	PoolWaits    int64   `json:"pool_waits"`
	PoolWaitMs   float64 `json:"pool_wait_ms"`
	PoolMeanWait float64 `json:"pool_mean_wait_ms"`
	PoolTimeouts int64   `json:"pool_timeouts"`
	// LocalSoldOut: what the flag saved and what it cost, measured from
	// the history (report.json's local_soldout; without the flag the same
	// measures of the history).
	LocalSoldOut *reports.LocalSoldOut `json:"local_soldout,omitempty"`
	// Lost acknowledged reservations; LostConfirmed those WAIT had
	// confirmed and WaitP99Ms WAIT's p99 (null when the run sent no WAIT).
	LostAcks      int64    `json:"lost_acks"`
	LostConfirmed *int64   `json:"lost_wait_confirmed"`
	WaitP99Ms     *float64 `json:"wait_p99_ms"`
	// NoReplicas counts the NOREPLICAS refusals; RefusedFromS/ToS are the
	// first and the last of them (seconds into the load), -1 when none.
	NoReplicas   int64   `json:"noreplicas_refusals"`
	RefusedFromS float64 `json:"refused_from_s"`
	RefusedToS   float64 `json:"refused_to_s"`

	report *reports.Report
}

// runRow reads one finished run at value v.
func runRow(v Value, q *lifecycle.Plan, res *lifecycle.Result, dir string, cpu *loadCPU) Row {
	rep := res.Report
	r := Row{Variant: v.Label, Buckets: q.Buckets, Settings: append([]string{}, v.Settings...), P99Ms: rep.LatencyMs.P99, ReportDir: dir,
		Run: &Run{Passed: rep.Passed, Ops: rep.Totals.Ops, Accepted: rep.Totals.Outcomes[reports.OutcomeAccepted],
			ThroughputOpsPerS: rep.ThroughputOpsPerS, P50Ms: rep.LatencyMs.P50, P999Ms: rep.LatencyMs.P999,
			FinalUnsold: rep.Stock.Available, FailedChecks: rep.FailedChecks(), LostAcks: rep.LostAcks, report: rep}}
	r.setCPU(cpu)
	if rep.DurationS > 0 {
		r.AcceptedPerS = float64(r.Accepted) / rep.DurationS
	}
	r.sellOut(runner.AnalyzeSellOut(res.Result.History, res.Activity))
	if pl := rep.Pool; pl != nil {
		r.PoolSize, r.PoolWaits, r.PoolWaitMs, r.PoolTimeouts = pl.Size, pl.Waits, pl.WaitMs, pl.Timeouts
		if pl.Waits > 0 {
			r.PoolMeanWait = pl.WaitMs / float64(pl.Waits)
		}
	}
	r.LocalSoldOut = rep.LocalSoldOut
	if r.LocalSoldOut == nil {
		r.LocalSoldOut = checks.AnalyzeLocalSoldOut(res.Result.History.All(), int(res.Activity.Buckets), 0)
	}
	if w := rep.Wait; w != nil {
		r.LostConfirmed, r.WaitP99Ms = &w.LostConfirmed, &w.LatencyMs.P99
	}
	r.NoReplicas, r.RefusedFromS, r.RefusedToS = refusals(res.Result.History, history.ErrNoReplicas)
	return r
}

// setCPU records the masters' CPU over the load (or why it is missing).
func (r *Row) setCPU(cpu *loadCPU) {
	if m, err := cpu.masters(); err != nil {
		r.MasterCPUErr = err.Error()
	} else {
		r.MasterCPU = m
	}
	r.CPUSpread = spreadOf(r.MasterCPU)
}

// sellOut records when each bucket sold out and what was left elsewhere.
func (r *Run) sellOut(so runner.SellOut) {
	r.FirstSoldOutS, r.LastSoldOutS = -1, -1
	r.UnsoldAtFirst, r.SoldOutWhileLeft = so.UnsoldAtFirstTotal, so.SoldOutAnswersWhileStockLeft
	all := true
	for _, t := range so.SoldOutAt {
		if t < 0 {
			r.SoldOutAtS = append(r.SoldOutAtS, -1)
			all = false
			continue
		}
		r.SoldOutAtS = append(r.SoldOutAtS, t.Seconds())
		r.LastSoldOutS = max(r.LastSoldOutS, t.Seconds())
	}
	if !all {
		r.LastSoldOutS = -1
	}
	if so.FirstSoldOut >= 0 {
		r.FirstSoldOutS = so.FirstSoldOut.Seconds()
	}
}

// refusals counts the operations that ended refused with class c and the
// first and last time (seconds into the load) one was answered; -1, -1
// when none was.
func refusals(h *history.History, c history.ErrClass) (n int64, fromS, toS float64) {
	fromS, toS = -1, -1
	for _, o := range h.All() {
		if o.Outcome != history.OutcomeError || o.ErrClass != c {
			continue
		}
		n++
		at := o.End.Seconds()
		if fromS < 0 || at < fromS {
			fromS = at
		}
		toS = max(toS, at)
	}
	return n, fromS, toS
}

// passed is the row's verdict: the run passed, or the search found a rate
// that held.
func (r Row) passed() bool {
	if r.Run != nil {
		return r.Run.Passed
	}
	return r.Found != nil && r.CapacityOpsPerS > 0
}

// summary is the report section's view of a row (report.html).
func (r Row) summary() reports.CompareVariant {
	if r.Found != nil {
		return r.Found.summary(r)
	}
	rep := r.report
	return reports.CompareVariant{Name: r.Variant, Buckets: int(r.Buckets), Passed: rep.Passed, Ops: rep.Totals.Ops,
		ThroughputOpsPerS: rep.ThroughputOpsPerS, LatencyMs: rep.LatencyMs, Outcomes: rep.Totals.Outcomes, Stock: rep.Stock,
		ReportFile: reportFile(r.ReportDir)}
}

// reportFile is the report.json of a run's directory ("" without one).
func reportFile(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, reports.ReportFile)
}
