package runner_test

import (
	"context"

	"seckill-harness/checks"
	"seckill-harness/history"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

func init() {
	runner.Verify = func(ctx context.Context, tgt runner.Target, in runner.CheckInput) (*runner.CheckReport, error) {
		rep, err := checks.Judge(ctx, tgt.Sale(), tgt.System(), checks.CheckInput{History: in.History, Samples: in.Samples, Generator: in.Generator})
		if err != nil {
			return nil, err
		}
		out := &runner.CheckReport{Fill: func(r *reports.Report, h *history.History) { rep.Fill(r, h, sut.WaitPolicy{}) }}
		for _, c := range rep.Checks {
			out.Checks = append(out.Checks, runner.Check{ID: c.ID, Name: c.Name, Status: c.Status, Detail: c.Detail, Evidence: c.Evidence})
		}
		return out, nil
	}
}
