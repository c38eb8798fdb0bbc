package trend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/internal/chromiumtest"
	"seckill-harness/internal/exitcode"
	"seckill-harness/reports/results"
	"seckill-harness/reports/trend"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

// The trend page of a results history of ten real runs (a shortened
// smoke, one after another on one local cluster, each appending its record as
// `run --results-history` does) draws in headless Chromium: one chart per
// scenario and figure, one symbol per run in each, nothing on the console.
func TestTrendOfTenRealRunsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ten runs on local clusters and a browser")
	}
	bin := chromiumtest.Find(t)
	ctx := context.Background()
	st, err := results.Open(ctx, results.Options{Dir: t.TempDir(), Warn: func(m string) { t.Error(m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// One local cluster for the ten runs (each run sets up its own
	// activity on it, as catalogue's runs on a shared stand do): the
	// runs are real, the cluster start is paid once.
	stand, err := lifecycle.OpenStand(ctx, nil, lifecycle.ClusterSpec{Masters: 3, Replicas: 1}, 32, false)
	if err != nil {
		t.Fatal(err)
	}
	defer stand.Close()
	const runs = 10
	sets := []string{"phases.0.duration=1s", "phases.1.duration=1s"}
	for i := 0; i < runs; i++ {
		p, err := planner.Load(ctx, "smoke", sets, nil, planner.Inputs{Stand: stand, RunActivityID: fmt.Sprintf("trend-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		err = lifecycle.RunPlan(ctx, p, lifecycle.Output{Dir: t.TempDir(), Results: st})
		if exitcode.Of(err) == exitcode.HarnessError {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	results, err := trend.Analyze(mustSeries(t, results.Source(ctx, st)), trend.Filter{}, trend.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	nights := 0
	for _, r := range results {
		if r.Series.Scenario != "smoke" || len(r.Series.Points) != runs {
			t.Errorf("series %s/%s has %d nights, want %d of smoke", r.Series.Scenario, r.Series.Figure, len(r.Series.Points), runs)
		}
		nights += len(r.Series.Points)
	}
	if len(results) < 3 {
		t.Fatalf("%d series from %d runs: want at least p99, throughput and errors", len(results), runs)
	}
	page := filepath.Join(t.TempDir(), "trend.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := trend.WriteHTML(f, results, trend.DefaultOptions); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if problems := trend.JudgePage(t, bin, page, len(results), nights, nil); len(problems) > 0 {
		t.Errorf("the trend page of %d real runs did not draw: %s", runs, strings.Join(problems, "; "))
	}
	t.Logf("%d series of %d real runs drawn", len(results), runs)
}

func mustSeries(t *testing.T, src trend.Source) []trend.Series {
	t.Helper()
	all, err := src()
	if err != nil {
		t.Fatal(err)
	}
	return all
}
