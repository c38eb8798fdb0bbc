package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/scenarios"
	"seckill-harness/sut"
)

// The compare defaults include the 32-bucket split a pre-sale test must
// try, and every built-in scenario with stock to split can be compared at
// them (each bucket needs a unit).
func TestCompareDefaultsIncludeThirtyTwoBuckets(t *testing.T) {
	counts, err := ParseBuckets(DefaultBuckets)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(counts, 1) || !slices.Contains(counts, 32) {
		t.Fatalf("compare defaults %v: want the single slot (1) and 32 buckets", counts)
	}
	if _, err := ParseBuckets("1,,32"); err == nil {
		t.Fatal("ParseBuckets accepted an empty count")
	}
	s, err := scenarios.Builtin("sold-out-90")
	if err != nil {
		t.Fatal(err)
	}
	if s.Activity.Stock < int64(slices.Max(counts)) {
		t.Fatalf("sold-out-90 has stock %d: too little for %d buckets", s.Activity.Stock, slices.Max(counts))
	}
}

// The masters' CPU over a load is each master's INFO cpu delta over the
// wall time between the two readings, in address order; a node missing
// from either reading is left out; the spread names the hottest master
// against the others.
func TestCPUSpreadNamesTheHottestMasterAgainstTheOthers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	before := cpuSnapshot{at: t0, secs: map[string]float64{"127.0.0.1:7002": 1, "127.0.0.1:7001": 10, "127.0.0.1:7000": 3, "127.0.0.1:7004": 5}}
	after := cpuSnapshot{at: t0.Add(10 * time.Second), secs: map[string]float64{"127.0.0.1:7002": 3, "127.0.0.1:7001": 18.5, "127.0.0.1:7000": 3.5, "127.0.0.1:7003": 9}}
	ms := masterCPUBetween(before, after)
	if len(ms) != 3 || ms[1].Addr != "127.0.0.1:7001" || math.Abs(ms[1].Cores-0.85) > 1e-9 || math.Abs(ms[1].CPUSecs-8.5) > 1e-9 ||
		math.Abs(ms[2].Cores-0.20) > 1e-9 || math.Abs(ms[0].Cores-0.05) > 1e-9 {
		t.Fatalf("masters' CPU %+v: want the three masters read at both ends, in address order, delta over the wall time", ms)
	}
	sp := spreadOf(ms)
	if sp == nil || sp.HotMaster != "127.0.0.1:7001" || math.Abs(sp.HotCPUPct-85) > 1e-9 || math.Abs(sp.OthersMaxCPUPct-20) > 1e-9 {
		t.Fatalf("spread %+v: want 7001 at 85%% against at most 20%%", sp)
	}
	if spreadOf(nil) != nil || spreadCols[0].cell(Row{}) != "-" || spreadCols[1].cell(Row{}) != "-" {
		t.Fatal("no masters: no spread")
	}
}

// compare on a real cluster: the table and compare.json carry every
// master's CPU and the spread; one bucket loads one master.
func TestCompareShowsTheMastersCPU(t *testing.T) {
	clustertest.Need(t)
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 600, 2*time.Second, 4000, 16
	p := &lifecycle.Plan{Name: "compare-cpu", Cluster: lifecycle.ClusterSpec{Masters: 2, Replicas: 0}, Stock: 4000, Buckets: 1,
		Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	dir := t.TempDir()
	var log bytes.Buffer
	if _, err := Compare(context.Background(), &log, p, BucketAxis([]uint32{1, 8}), lifecycle.Output{Dir: dir}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "hot master cpu") || !strings.Contains(log.String(), "other masters cpu (max)") {
		t.Fatalf("table lacks the CPU columns:\n%s", log.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Rows []Row }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Rows {
		if len(r.MasterCPU) != 2 || r.CPUSpread == nil || r.CPUSpread.HotCPUPct <= 0 {
			t.Fatalf("%d buckets: master CPU %+v, spread %+v\n%s", r.Buckets, r.MasterCPU, r.CPUSpread, log.String())
		}
	}
	// Every reserve of the one-bucket run lands on one master: it works
	// while the other only answers the sampler.
	if one := doc.Rows[0].CPUSpread; one.HotCPUPct <= one.OthersMaxCPUPct {
		t.Fatalf("1 bucket: hot master %.1f%%, other %.1f%%: the loaded master is not the hottest\n%s", one.HotCPUPct, one.OthersMaxCPUPct, log.String())
	}
}

// The compare axes change one thing of the plan per variant: the pool
// size per node, or the local sold-out flag off then on; bad pool sizes
// are refused naming the flag.
func TestCompareAxes(t *testing.T) {
	sizes, err := ParsePoolSizes("4, 16,64")
	if err != nil || !slices.Equal(sizes, []int{4, 16, 64}) {
		t.Fatalf("ParsePoolSizes: %v %v", sizes, err)
	}
	for _, bad := range []string{"", "4,,64", "0", "-4", "x"} {
		if _, err := ParsePoolSizes(bad); err == nil || !strings.Contains(err.Error(), "--pool-sizes") {
			t.Errorf("ParsePoolSizes(%q): %v", bad, err)
		}
	}
	ax := PoolSizeAxis(sizes)
	if ax.Name != "pool_size" || len(ax.Values) != 3 {
		t.Fatalf("pool axis: %+v", ax)
	}
	for i, v := range ax.Values {
		p := &lifecycle.Plan{Buckets: 1}
		v.Apply(p)
		if p.Cluster.PoolSize != sizes[i] || p.Buckets != 1 || v.Dir != fmt.Sprintf("pool-%d", sizes[i]) {
			t.Errorf("variant %s: pool %d, dir %s", v.Label, p.Cluster.PoolSize, v.Dir)
		}
	}
	lso := LocalSoldOutAxis(time.Second)
	if lso.Name != "local_soldout" || len(lso.Values) != 2 {
		t.Fatalf("local sold-out axis: %+v", lso)
	}
	p := &lifecycle.Plan{LocalSoldOut: sut.LocalSoldOutConfig{TTL: 5 * time.Second}}
	lso.Values[0].Apply(p)
	if p.LocalSoldOut.TTL != 0 {
		t.Errorf("the first variant keeps the flag: %+v", p.LocalSoldOut)
	}
	lso.Values[1].Apply(p)
	if p.LocalSoldOut.TTL != time.Second {
		t.Errorf("the second variant's flag: %+v", p.LocalSoldOut)
	}
	b := BucketAxis([]uint32{1, 16})
	q := &lifecycle.Plan{Buckets: 2}
	b.Values[1].Apply(q)
	if b.Name != "buckets" || q.Buckets != 16 || b.Values[1].Dir != "buckets-16" {
		t.Errorf("bucket axis: %+v, buckets %d", b, q.Buckets)
	}
}

// --mitigations names the built-in variants in the order given; --variant
// NAME:key=value adds settings to a variant (accumulating per name, after
// the mitigations); a compare needs two variants and each name once.
func TestParseVariants(t *testing.T) {
	got, err := ParseVariants("wait,none", []string{"wait-2s:wait.replicas=1", "wait-2s:wait.timeout=2s", "as-is:"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range got {
		names = append(names, v.Name)
	}
	if !slices.Equal(names, []string{"wait", "none", "wait-2s", "as-is"}) {
		t.Fatalf("variants %v", names)
	}
	if !slices.Equal(got[0].Sets, []string{"wait.replicas=1"}) || len(got[1].Sets) != 0 ||
		!slices.Equal(got[2].Sets, []string{"wait.replicas=1", "wait.timeout=2s"}) || len(got[3].Sets) != 0 {
		t.Fatalf("settings %+v", got)
	}
	all, err := ParseVariants(DefaultMitigations, nil)
	if err != nil || len(all) != len(Mitigations) {
		t.Fatalf("defaults: %+v, %v", all, err)
	}
	for _, bad := range []struct {
		mitigations string
		variants    []string
	}{
		{"none,bogus", nil}, {"none,none", nil}, {"none", nil}, {"", []string{"a:x=1"}},
		{"none", []string{"noname"}}, {"none", []string{"bad name:x=1"}}, {"none", []string{"v:not-a-setting"}},
	} {
		if _, err := ParseVariants(bad.mitigations, bad.variants); err == nil {
			t.Errorf("ParseVariants(%q, %q) accepted", bad.mitigations, bad.variants)
		}
	}
}

// The refused window spans the first to the last NOREPLICAS answer; other
// errors do not count; the table says "no WAIT" for a variant without it.
func TestVariantRowRefusals(t *testing.T) {
	h := &history.History{Ops: []history.Op{
		{Outcome: history.OutcomeError, ErrClass: history.ErrNoReplicas, End: 2500 * time.Millisecond},
		{Outcome: history.OutcomeError, ErrClass: history.ErrConnect, End: 9 * time.Second},
		{Outcome: history.OutcomeError, ErrClass: history.ErrNoReplicas, End: 4 * time.Second},
		{Outcome: history.Outcome(0), End: 5 * time.Second},
	}}
	n, from, to := refusals(h, history.ErrNoReplicas)
	if n != 2 || from != 2.5 || to != 4 {
		t.Fatalf("refusals %d from %.2f to %.2f, want 2 from 2.50 to 4.00", n, from, to)
	}
	if n, from, to := refusals(&history.History{}, history.ErrNoReplicas); n != 0 || from != -1 || to != -1 {
		t.Fatalf("no refusal: %d %.2f %.2f", n, from, to)
	}
	cells := variantView.table.cells(Row{Variant: "min-replicas", Run: &Run{NoReplicas: 2, RefusedFromS: 2.5, RefusedToS: 4, Passed: true}})
	if cells[3] != "no WAIT" || cells[5] != "2.50s–4.00s (1.50s)" {
		t.Fatalf("cells %q", cells)
	}
}
