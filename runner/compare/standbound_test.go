package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"seckill-harness/internal/clustertest"
	"strings"
	"testing"
	"time"

	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
)

// A capacity search whose generator is deliberately weak, on a real
// cluster: the harness gets one P shared with a goroutine that never
// sleeps, and two busy shell loops oversubscribe the machine. Its steps
// break their SLO because the generator cannot pace them, so the search
// must end stand-bound ("the system's limit was not reached"), never
// quote a system capacity; the MEASURED table and compare.json say so.
func TestCapacitySearchOnAWeakGeneratorIsStandBound(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 1500, time.Second, 4000, 32
	p := &lifecycle.Plan{Name: "weak-generator", Cluster: lifecycle.ClusterSpec{Masters: 2, Replicas: 0}, Stock: 100, Buckets: 1,
		Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	st, err := lifecycle.OpenStand(ctx, nil, p.Cluster, p.MaxConcurrency(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p.Stand = st

	// The weak generator: one P, shared with a goroutine that spins.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	for i := 0; i < 2; i++ {
		busy := exec.Command("sh", "-c", "while :; do :; done")
		if err := busy.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = busy.Process.Kill(); _ = busy.Wait() }()
	}

	co := CapacityOptions{Start: 1500, Factor: 2, MaxSteps: 2, StepDuration: 1500 * time.Millisecond, SloP99: 5 * time.Millisecond,
		MaxErrorRatio: 0.01, Precision: 0.05, Confirm: 0, PathMix: PathSoldOut}
	dir := t.TempDir()
	var log bytes.Buffer
	if _, err := CompareCapacity(ctx, &log, p, BucketAxis([]uint32{1}), co, lifecycle.Output{Dir: dir}); err != nil {
		t.Fatalf("err %v\n%s", err, log.String())
	}
	out := log.String()
	t.Logf("\n%s", out)
	for _, want := range []string{"STAND-BOUND (stand: generator late", "bound by", "not reached (stand-bound)", "the system's limit was not reached"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "broke (system") {
		t.Errorf("a step of the weak generator was called the system's")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []Row `json:"capacity_rows"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(doc.Rows))
	}
	r := doc.Rows[0]
	if !r.StandBound || !strings.HasPrefix(r.BoundBy, "stand: generator late") || r.BrokeOpsPerS != 0 {
		t.Fatalf("compare.json row: stand_bound %v, bound_by %q, broke at %.0f; want stand-bound and no system break", r.StandBound, r.BoundBy, r.BrokeOpsPerS)
	}
	if r.Projection != nil && !r.Projection.LowerBound {
		t.Errorf("projection of a stand-bound search not marked a lower bound")
	}
}
