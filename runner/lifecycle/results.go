package lifecycle

import (
	"context"
	"fmt"

	"seckill-harness/reports"
	"seckill-harness/reports/results"
)

// judgeBaseline judges rep against Output.Baseline (run --baseline):
// report.json's baseline and its assertions. Nothing without a baseline,
// for a load the pre-flight refused or an interrupted one (no figures to
// judge) or one generator's share of a split load (its figures are not
// the whole load's); a history that cannot be read fails the comparison's
// assertion.
func (x *execution) judgeBaseline(ctx context.Context, rep *reports.Report) {
	st := x.out.Baseline
	if st == nil || x.sut.pre.Refused() || x.load.interrupted != "" || x.plan.Generator.Split() {
		return
	}
	tonight := results.FromReport(rep, results.KindRun, x.out.Dir)
	past, err := st.Records(ctx, rep.Scenario)
	if err != nil {
		rep.Assertions = append(rep.Assertions, assertion("baseline: the results history read", false, 0, nil, err.Error()))
		return
	}
	rep.Baseline = results.Judge(tonight, past, results.DefaultThresholds().With(x.plan.Judging.Regressions), st.Where())
	rep.Assertions = append(rep.Assertions, results.Assertions(rep.Baseline)...)
	x.out.logger().Info("baseline", "history", st.Where(), "status", rep.Baseline.Status, "detail", rep.Baseline.Detail)
}

// appendRecord appends the run's record to Output.Results (not for one
// generator's share of a split load); a failure is logged (and printed to
// ErrOut) and leaves the verdict as it is.
func (x *execution) appendRecord(ctx context.Context, rep *reports.Report) {
	st := x.out.Results
	if st == nil || x.plan.Generator.Split() {
		return
	}
	r := results.FromReport(rep, results.KindRun, x.out.Dir)
	r.Suite = x.out.Suite
	if err := results.Put(ctx, st, r, x.out.ErrOut); err != nil {
		x.out.logger().Error("results history: the run's record was not appended", "err", err)
		return
	}
	fmt.Fprintf(x.out.log(), "results history: record appended to %s\n", st.Where())
}
