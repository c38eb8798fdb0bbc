package faults

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// shift measures reserve service times per bucket of an activity spanning
// all masters, before, during and after the fault spec (injected on the
// shared proxies), and returns the fastest of n calls per bucket for each
// phase. A toxic adds its delay to every call through it, and a busy
// machine (go test runs other packages beside this one) only adds to a
// call's time: the fastest call shows the toxic's shift, where a median of
// three is shifted by two slow calls in a noisy second.
type shiftResult struct {
	before, during, after []time.Duration // per bucket
	evidence              map[string]any
}

func measureShift(t *testing.T, spec string, n int) shiftResult {
	t.Helper()
	a := newActivitySpanning(t, 100000)
	rdb := proxiedClient(t)
	store := lua.NewStore(rdb, lua.Embedded(), testSecret)
	env := newEnv(t, a, rdb)
	ctx := ctxT(t, 60*time.Second)
	seq := 0
	phase := func() []time.Duration {
		out := make([]time.Duration, a.Buckets)
		for b := uint32(0); b < a.Buckets; b++ {
			var ds []time.Duration
			for i := 0; i < n; i++ {
				seq++
				u := userForBucket(a, fmt.Sprintf("s%d-", seq), b)
				call, _ := store.NewReserveCall(a, u, fmt.Sprintf("sr%d", seq), time.Minute)
				t0 := time.Now()
				res, err := store.Reserve(ctx, call)
				ds = append(ds, time.Since(t0))
				if err != nil || res.Code != lua.Accepted {
					t.Fatalf("%s: reserve on bucket %d: %+v %v", spec, b, res, err)
				}
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			out[b] = ds[0]
		}
		return out
	}
	phase() // warm every master's connection and script cache
	var r shiftResult
	r.before = phase()
	p, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Fault.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	r.during = phase()
	if err := p.Fault.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := p.Fault.Heal(ctx, env); err != nil { // idempotent
		t.Fatal(err)
	}
	r.after = phase()
	r.evidence = p.Fault.Evidence()
	if _, err := json.Marshal(r.evidence); err != nil {
		t.Fatalf("evidence is not JSON: %v", err)
	}
	for _, addr := range testCluster.Addrs() {
		if names := testProxies.ToxicNames(addr); len(names) != 0 {
			t.Fatalf("toxics left on %s after heal: %v", addr, names)
		}
	}
	t.Logf("%s: fastest reserve per bucket (bucket 0 on the hot master; armed on %v): before %v, during %v, after %v",
		spec, r.evidence["nodes"], r.before, r.during, r.after)
	return r
}

func TestLatencyHotMasterOnly(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	r := measureShift(t, "latency:latency=100", 7)
	// Every call through the toxic waits the configured latency; the shift
	// from the fastest call before is allowed a little slack.
	if r.during[0] < 100*time.Millisecond || r.during[0]-r.before[0] < 90*time.Millisecond {
		t.Fatalf("hot bucket: fastest %v during (before %v): want >= the configured 100ms", r.during[0], r.before[0])
	}
	for b := 1; b < len(r.during); b++ {
		if d := r.during[b] - r.before[b]; d > 20*time.Millisecond {
			t.Fatalf("bucket %d on another master shifted by %v: want none", b, d)
		}
	}
	if r.after[0] > r.before[0]+20*time.Millisecond {
		t.Fatalf("hot bucket still slow after heal: %v (before %v)", r.after[0], r.before[0])
	}
	if r.evidence["latency_ms"] != int64(100) || r.evidence["removed_at"] == nil {
		t.Fatalf("evidence: %v", r.evidence)
	}
}

func TestLatencyAllMastersUpstream(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	r := measureShift(t, "latency:latency=30,stream=upstream,target=all-masters", 3)
	for b := range r.during {
		if r.during[b] < 30*time.Millisecond || r.during[b]-r.before[b] < 27*time.Millisecond {
			t.Fatalf("bucket %d: fastest %v during (before %v): want >= 30ms on every master", b, r.during[b], r.before[b])
		}
	}
	if n := len(r.evidence["nodes"].([]string)); n != 3 {
		t.Fatalf("armed on %d nodes, want 3", n)
	}
}

func TestBandwidthAndSlicerAct(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	// A reserve reply is ~60 bytes: at 1 KB/s the toxic sleeps ~60ms per
	// reply; sliced into 1-byte pieces 2ms apart it takes ~120ms.
	for spec, want := range map[string]time.Duration{
		"bandwidth:rate=1": 30 * time.Millisecond,
		"slicer:average_size=1,size_variation=0,delay=2000": 50 * time.Millisecond,
	} {
		r := measureShift(t, spec, 3)
		if d := r.during[0] - r.before[0]; d < want {
			t.Fatalf("%s: hot bucket shifted by %v, want >= %v", spec, d, want)
		}
		for b := 1; b < len(r.during); b++ {
			if d := r.during[b] - r.before[b]; d > 20*time.Millisecond {
				t.Fatalf("%s: bucket %d on another master shifted by %v", spec, b, d)
			}
		}
	}
}
