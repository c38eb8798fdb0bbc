package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
	"seckill-harness/scenarios"
)

// loadFlags are the run flags that describe the load; with a scenario they
// are refused (use --set), so a CI job never runs something other than it reads.
var loadFlags = []string{"users", "stock", "buckets", "rate", "duration", "mode", "concurrency", "shape", "max-in-flight",
	"max-ops", "timeout", "retries", "reservation-ttl", "mix-replay", "mix-same-user", "mix-foreign-request", "mix-release",
	"slope", "amplitude", "period", "peak", "spike-at", "ramp-up", "hold", "ramp-down", "name"}

// runScenario runs a scenario, or each member of a suite in turn (each on
// its own fresh cluster, reports in <out>/<member>/), and returns the
// exit error of the worst one: a harness error, else a failure, else an
// inconclusive member (exit 3), else nil. Every plan (each member's) is
// built and validated before the first run starts. onMember, when not nil,
// is called after each suite member (the catalogue's rows).
func runScenario(ctx context.Context, s *scenarios.Scenario, in planner.Inputs, out lifecycle.Output, onMember memberFunc) error {
	if !s.IsSuite() {
		p, err := planner.Build(s, in)
		if err != nil {
			return err
		}
		return execute(ctx, p, out)
	}
	if err := planner.Validate(s); err != nil {
		return err
	}
	members, err := s.Members()
	if err != nil {
		return err
	}
	plans := make([]*lifecycle.Plan, len(members))
	for i, m := range members {
		if plans[i], err = planner.Build(m, in); err != nil {
			return fmt.Errorf("suite %s, member %s: %w", s.Name, m.Name, err)
		}
	}
	return runSuite(ctx, s.Name, plans, out, onMember)
}

// memberFunc is told of each suite member that ran: its name, reports
// directory, wall time and exit error.
type memberFunc func(name, dir string, wall time.Duration, err error)

// runSuite executes the plans of a suite's members in turn and prints the table.
func runSuite(ctx context.Context, name string, plans []*lifecycle.Plan, out lifecycle.Output, onMember memberFunc) error {
	type row struct {
		name, verdict string
		dur           time.Duration
	}
	var rows []row
	var worst error
	log := out.Log
	for _, p := range plans {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(log, "\n##### %s (%d of %d in %s) #####\n", p.Name, len(rows)+1, len(plans), name)
		sub := out
		sub.Dir = filepath.Join(out.Dir, p.Name)
		t0 := time.Now()
		err := execute(ctx, p, sub)
		r := row{name: p.Name, dur: time.Since(t0), verdict: "PASS"}
		switch {
		case err == nil:
		case errors.Is(err, errChecksFailed):
			r.verdict = "FAIL"
			if worst == nil || errors.Is(worst, errInconclusive) {
				worst = err
			}
		case errors.Is(err, errInconclusive):
			r.verdict = "INCONCLUSIVE"
			if worst == nil {
				worst = err
			}
		default:
			r.verdict = "ERROR: " + err.Error()
			worst = err
		}
		rows = append(rows, r)
		if onMember != nil {
			onMember(p.Name, sub.Dir, r.dur, err)
		}
	}
	fmt.Fprintf(log, "\nsuite %s:\n", name)
	w := tabwriter.NewWriter(log, 2, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(w, "  %s\t%.1fs\t%s\t%s\n", r.name, r.dur.Seconds(), r.verdict, filepath.Join(out.Dir, r.name))
	}
	w.Flush()
	if ctx.Err() != nil {
		return fmt.Errorf("suite %s interrupted: %w", name, ctx.Err())
	}
	return worst
}
