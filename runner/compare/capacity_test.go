package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
)

// A real, small compare --capacity: both paths, 1 and 3 buckets on two
// masters, two short steps each (a ramp step and its confirmation, more
// when the shared machine stalls a step). It checks what the table is made
// of: the placement agrees with the slot hash computed here, the masters'
// CPU was read, the path measured is the one asked for, every step kept
// its report, and the projection is there.
func TestCompareCapacityOnARealCluster(t *testing.T) {
	clustertest.Need(t)
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 300, time.Second, 2000, 16
	p := &lifecycle.Plan{Name: "capacity-test", Cluster: lifecycle.ClusterSpec{Masters: 2, Replicas: 0}, Stock: 100, Buckets: 1,
		Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	co := CapacityOptions{Start: 300, Factor: 2, MaxSteps: 1, StepDuration: 700 * time.Millisecond, SloP99: 2 * time.Second,
		MaxErrorRatio: 0.01, Precision: 0.05, Confirm: 1, PathMix: PathBoth}
	dir := t.TempDir()
	var log bytes.Buffer
	passed, err := CompareCapacity(context.Background(), &log, p, BucketAxis([]uint32{1, 3}), co, lifecycle.Output{Dir: dir})
	if err != nil {
		t.Fatalf("err %v\n%s", err, log.String())
	}
	// Whether 300 ops/s holds depends on how busy the machine is (the
	// search's own logic is proven on a synthetic SLO in search_test.go):
	// a variant where nothing held must say why, step by step.
	if !passed && !strings.Contains(log.String(), "broke: ") {
		t.Fatalf("no rate held and no step says why:\n%s", log.String())
	}
	for _, want := range []string{"MEASURED", "PROJECTION (computed, not measured", "accept", "sold-out", "buckets/master"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, log.String())
		}
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
	if len(doc.Rows) != 4 {
		t.Fatalf("%d rows, want 4 (2 paths x 2 bucket counts)", len(doc.Rows))
	}
	steps := 0
	for _, r := range doc.Rows {
		name := r.Path + "/" + string(rune('0'+r.Buckets))
		// 300 ops/s holds a 2 s p99 unless the shared machine stalls the
		// step: then the search steps down, and the figures must still add up.
		steps += r.Steps
		if r.CapacityOpsPerS > 0 && (r.CapacityOpsPerS > 300 || r.Confirmations != 1 || r.Steps < 2) {
			t.Errorf("%s: capacity %.0f, confirmations %d, steps %d", name, r.CapacityOpsPerS, r.Confirmations, r.Steps)
		}
		switch r.Path {
		case PathAccept:
			if r.SoldOutShare > 0.01 {
				t.Errorf("%s: accept path answered SOLD_OUT %.0f%% of the time", name, 100*r.SoldOutShare)
			}
		case PathSoldOut:
			if r.SoldOutShare < 0.6 { // stock is a tenth of the demand; the default mix adds replays
				t.Errorf("%s: sold-out path answered SOLD_OUT only %.0f%% of the time", name, 100*r.SoldOutShare)
			}
		}
		pl := r.Placement
		if pl == nil || len(pl.Buckets) != int(r.Buckets) || len(pl.PerMaster) != 2 {
			t.Fatalf("%s: placement %+v", name, pl)
		}
		busiest := 0
		for _, b := range pl.Buckets {
			if b.Slot != compose.KeySlot(b.Key) {
				t.Errorf("%s: bucket %d: slot %d, the key hashes to %d", name, b.Bucket, b.Slot, compose.KeySlot(b.Key))
			}
			busiest = max(busiest, pl.PerMaster[b.Master])
		}
		if want := float64(r.Buckets) / float64(busiest); pl.Ceiling != want {
			t.Errorf("%s: ceiling %.2f, want %.2f (%v)", name, pl.Ceiling, want, pl.PerMaster)
		}
		var cpu float64
		for _, m := range r.MasterCPU {
			cpu += m.CPUSecs
		}
		if len(r.MasterCPU) != 2 || cpu <= 0 {
			t.Errorf("%s: master CPU %+v", name, r.MasterCPU)
		}
		if r.CapacityOpsPerS > 0 && (r.Projection == nil || r.Projection.OpsPerS <= 0 || r.Projection.ClientCPUPerOpUs <= 0) {
			t.Errorf("%s: projection %+v", name, r.Projection)
		}
		if r.Buckets == 1 && r.CapacityOpsPerS > 0 && (r.Speedup != 1 || r.CeilingSpeedup != 1) {
			t.Errorf("%s: the first variant's speed-ups are %.2f and %.2f, want 1", name, r.Speedup, r.CeilingSpeedup)
		}
		if _, err := os.Stat(filepath.Join(r.ReportDir, "report.json")); err != nil || !strings.HasPrefix(r.ReportDir, filepath.Join(dir, r.Path)) {
			t.Errorf("%s: report dir %q: %v", name, r.ReportDir, err)
		}
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "*", "buckets-*", "step-*", "report.json"))
	if len(kept) != steps {
		t.Errorf("%d step reports kept, want one per step (%d)", len(kept), steps)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Error(err)
	}
}

func TestInfoCPUSeconds(t *testing.T) {
	got, err := infoCPUSeconds("# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\nused_cpu_sys_children:9.000000\r\n")
	if err != nil || got != 3.75 {
		t.Fatalf("got %v, %v; want 3.75 (sys + user, not the children's)", got, err)
	}
	if _, err := infoCPUSeconds("# CPU\r\nused_cpu_sys:1.0\r\n"); err == nil {
		t.Fatal("a reply without used_cpu_user accepted")
	}
}

func TestPlacementCeiling(t *testing.T) {
	for _, tc := range []struct {
		per     map[string]int
		spread  string
		ceiling float64
	}{
		{map[string]int{"a": 1, "b": 0, "c": 0}, "1/0/0", 1},
		{map[string]int{"a": 2, "b": 1, "c": 1}, "2/1/1", 2},
		{map[string]int{"a": 6, "b": 5, "c": 5}, "6/5/5", 16.0 / 6},
		{map[string]int{"a": 4, "b": 0, "c": 0}, "4/0/0", 1},
	} {
		p := &Placement{PerMaster: tc.per}
		p.settle()
		if p.Ceiling != tc.ceiling || p.Spread() != tc.spread {
			t.Errorf("%v: ceiling %.3f spread %s, want %.3f %s", tc.per, p.Ceiling, p.Spread(), tc.ceiling, tc.spread)
		}
	}
}

func TestPathMixes(t *testing.T) {
	if got, err := PathMixes("both", true); err != nil || len(got) != 2 {
		t.Fatalf("both: %v %v", got, err)
	}
	if _, err := PathMixes("both", false); err == nil || !strings.Contains(err.Error(), "--path-mix") {
		t.Fatalf("capacity accepted both: %v", err)
	}
	if _, err := PathMixes("sold_out", true); err == nil {
		t.Fatal("a misspelt path accepted")
	}
	stock, users := pathSizing(PathAccept, 100, 4, 2000, 0, 2000)
	if stock != 4000 || users != 2400 {
		t.Errorf("accept at a demand of 2000: stock %d users %d", stock, users)
	}
	stock, users = pathSizing(PathSoldOut, 100, 4, 2000, 0, 2000)
	if stock != 200 || users != 2400 {
		t.Errorf("sold-out at a demand of 2000: stock %d users %d", stock, users)
	}
	// sold-out-90: stock 2000 and 20000 users for 20000 operations; a step
	// offering 1500 keeps the tenth.
	if stock, users = pathSizing(PathScenario, 2000, 4, 20000, 20000, 1500); stock != 150 || users != 1500 {
		t.Errorf("scenario scaled: stock %d users %d", stock, users)
	}
	if stock, users = pathSizing(PathScenario, 100, 4, 2000, 0, 1500); stock != 100 || users != 2000 {
		t.Errorf("closed-loop scenario: stock %d users %d", stock, users)
	}
}
