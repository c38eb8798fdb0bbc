package cmdline

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
)

// parsed is a command named use with flags registered by reg and args parsed.
func parsed(t *testing.T, use string, reg func(*cobra.Command), args ...string) *cobra.Command {
	t.Helper()
	cmd := &cobra.Command{Use: use}
	reg(cmd)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	cmd.SetContext(context.Background())
	return cmd
}

// The ad-hoc load of run's flags reaches the scenario: the sale
// (--users, --stock, --buckets), --mode, --concurrency and --name, none of
// them at its default; untouched flags keep theirs (stock 1000, 2 buckets).
func TestRunFlagsAdhocScenario(t *testing.T) {
	var o *Run
	cmd := parsed(t, "run", func(c *cobra.Command) { o = RunFlags(c.Flags()) },
		"--users", "500", "--stock", "77", "--buckets", "3", "--mode", "closed", "--concurrency", "8", "--name", "x1", "--duration", "2s", "--progress", "off")
	s, err := o.Scenario(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := s.Activity
	if a.Users != 500 || a.Stock != 77 || a.Buckets != 3 || s.Name != "x1" {
		t.Fatalf("activity %+v name %q: want 500 users, stock 77, 3 buckets, x1", a, s.Name)
	}
	if len(s.Phases) != 1 || s.Phases[0].Config.Mode != runner.ModeClosed || s.Phases[0].Config.Concurrency != 8 || s.Phases[0].Config.Duration != 2*time.Second {
		t.Fatalf("phases %+v: want one closed phase of 8 workers for 2s", s.Phases)
	}
	cmd = parsed(t, "run", func(c *cobra.Command) { o = RunFlags(c.Flags()) }, "--progress", "off")
	if s, err = o.Scenario(cmd, nil); err != nil || s.Activity.Stock != 1000 || s.Activity.Buckets != 2 || s.Activity.Users != 20000 {
		t.Fatalf("defaults: %+v (%v), want stock 1000 over 2 buckets, 20000 users", s.Activity, err)
	}
	cmd = parsed(t, "run", func(c *cobra.Command) { o = RunFlags(c.Flags()) }, "--progress", "loud")
	if _, err = o.Scenario(cmd, nil); err == nil {
		t.Fatal("--progress loud accepted")
	}
}

// Sale.Flags carries the sale and the flags given; SaleFlags takes the
// defaults from the Sale it fills.
func TestSaleFlags(t *testing.T) {
	sale := Sale{Users: 20000, Stock: 1, Buckets: 1}
	cmd := parsed(t, "race", func(c *cobra.Command) { SaleFlags(c.Flags(), &sale, "u", "b") }, "--stock", "5")
	f := sale.Flags(cmd, lifecycle.ClusterSpec{Masters: 3})
	if f.Stock != 5 || f.Buckets != 1 || sale.Users != 20000 || f.Given["stock"] != "5" || len(f.Given) != 1 {
		t.Fatalf("flags %+v, sale %+v: want stock 5 (given), 1 bucket, 20000 users", f, sale)
	}
}

// Wait.Over sets only the flags given on the command line; a Wait never
// registered leaves the overrides alone.
func TestWaitOver(t *testing.T) {
	var w Wait
	if ov := w.Over(planner.Overrides{}); ov.WaitReplicas != nil || ov.WaitTimeout != nil {
		t.Fatalf("unregistered: %+v", ov)
	}
	parsed(t, "compare", func(c *cobra.Command) { WaitFlags(c.Flags(), &w) }, "--wait-replicas", "2")
	ov := w.Over(planner.Overrides{})
	if ov.WaitReplicas == nil || *ov.WaitReplicas != 2 || ov.WaitTimeout != nil {
		t.Fatalf("--wait-replicas 2: %+v, want replicas 2 and the scenario's timeout", ov)
	}
}

// ResultsFlags registers --baseline for ResultsBaseline only, and the
// read help for ResultsRead.
func TestResultsFlagsUse(t *testing.T) {
	for use, baseline := range map[ResultsUse]bool{ResultsAppend: false, ResultsBaseline: true, ResultsRead: false} {
		var r Results
		cmd := parsed(t, "x", func(c *cobra.Command) { ResultsFlags(c.Flags(), &r, use) })
		if got := cmd.Flags().Lookup("baseline") != nil; got != baseline {
			t.Errorf("use %d: --baseline registered %v, want %v", use, got, baseline)
		}
		if h := cmd.Flags().Lookup("results-history").Usage; (use == ResultsRead) != (h[:4] == "read") {
			t.Errorf("use %d: --results-history help %q", use, h)
		}
	}
}
