package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"seckill-harness/faults"
	"seckill-harness/internal/clustertest"
	"seckill-harness/reports"
	"seckill-harness/runner"
)

// neverInjects is a throwaway fault kind whose injection always fails, as
// a real fault's does when the cluster will not take it at run time.
type neverInjects struct{}

func (neverInjects) Kind() string   { return "test-never-injects" }
func (neverInjects) Target() string { return "nothing" }
func (neverInjects) Inject(context.Context, *faults.Env) error {
	return errors.New("refused by the node")
}
func (neverInjects) Heal(context.Context, *faults.Env) error { return nil }
func (neverInjects) Evidence() map[string]any                { return map[string]any{} }

func init() {
	faults.Register(faults.Spec{Kind: "test-never-injects", Help: "test only: Inject always fails",
		Rules: faults.Rules{Destructive: faults.NotDestructive(), Overlap: faults.Stacks},
		Build: func(faults.Values) (faults.Fault, error) { return neverInjects{}, nil }})
}

// A run whose planned fault did not take effect tested nothing: it fails
// (exit 1) with the fault named, and selftest sees it in NotInjected.
func TestFaultThatDoesNotInjectFailsTheRun(t *testing.T) {
	clustertest.Need(t)
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users = 200, 2*time.Second, 2000
	p := &Plan{Name: "never-injects", Cluster: ClusterSpec{Masters: 3, Replicas: 0}, Stock: 100, Buckets: 1,
		Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	if err := p.AddFaults([]string{"test-never-injects:at=500ms"}); err != nil {
		t.Fatal(err)
	}
	oc, err := Execute(context.Background(), p, Output{})
	if err != nil {
		t.Fatal(err)
	}
	if oc.Report.Passed || len(oc.NotInjected) != 1 || !strings.Contains(oc.NotInjected[0], "refused by the node") {
		t.Fatalf("passed=%v notInjected=%v", oc.Report.Passed, oc.NotInjected)
	}
	var found bool
	for _, a := range oc.Report.Assertions {
		if a.Name == "every planned fault injected" {
			found = a.Status == reports.StatusFail
		}
	}
	if !found {
		t.Fatalf("no failed 'every planned fault injected' assertion: %+v", oc.Report.Assertions)
	}
}

// oneMasterStand is a stand of one master without replicas with a
// client pool of pool connections, and the context of a test that may
// run for timeout; both end with the test.
func oneMasterStand(t *testing.T, pool int, timeout time.Duration) (context.Context, *Stand) {
	t.Helper()
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	st, err := OpenStand(ctx, discardLogger, ClusterSpec{Masters: 1, Replicas: 0}, pool, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return ctx, st
}
