package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// TestPartitionOnlyTargetSlotsFail: with the hot master's proxy disabled,
// reserves on bucket 0 fail while the buckets on the other masters are
// accepted; the node stays up (same PID, answers directly); after heal all
// buckets are accepted again.
func TestPartitionOnlyTargetSlotsFail(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	a := newActivitySpanning(t, 1000)
	rdb := proxiedClient(t)
	store := lua.NewStore(rdb, lua.Embedded(), testSecret)
	env := newEnv(t, a, rdb)
	ctx := ctxT(t, 30*time.Second)
	seq := 0
	round := func() []error {
		errs := make([]error, a.Buckets)
		for b := uint32(0); b < a.Buckets; b++ {
			seq++
			u := userForBucket(a, fmt.Sprintf("p%d-", seq), b)
			call, _ := store.NewReserveCall(a, u, fmt.Sprintf("pr%d", seq), time.Minute)
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			res, err := store.Reserve(cctx, call)
			cancel()
			if err == nil && res.Code != lua.Accepted {
				err = fmt.Errorf("code %s", res.Code)
			}
			errs[b] = err
		}
		return errs
	}
	for b, err := range round() {
		if err != nil {
			t.Fatalf("before the partition, bucket %d: %v", b, err)
		}
	}
	p, err := Parse("partition")
	if err != nil {
		t.Fatal(err)
	}
	injected := time.Now()
	if err := p.Fault.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for r := 0; r < 3; r++ {
		errs := round()
		if errs[0] == nil {
			t.Fatalf("round %d: the partitioned master's bucket was accepted", r)
		}
		failed++
		for b := 1; b < len(errs); b++ {
			if errs[b] != nil {
				t.Fatalf("round %d: bucket %d on a reachable master failed: %v", r, b, errs[b])
			}
		}
		t.Logf("round %d: bucket 0 → %v", r, errs[0])
	}
	ev := p.Fault.Evidence()
	node := ev["nodes"].([]string)[0]
	adm, err := testCluster.Admin(node)
	if err != nil || adm.Ping(ctx).Err() != nil {
		t.Fatalf("partitioned node %s is not alive: %v", node, err)
	}
	if err := p.Fault.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	var errs []error
	for {
		errs = round()
		ok := true
		for _, e := range errs {
			ok = ok && e == nil
		}
		if ok {
			break
		}
		if time.Since(healed) > 5*time.Second {
			t.Fatalf("5s after heal still failing: %v", errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	recovered := time.Since(healed)
	if err := p.Fault.Heal(ctx, env); err != nil { // idempotent
		t.Fatal(err)
	}
	ev = p.Fault.Evidence()
	if _, err := json.Marshal(ev); err != nil {
		t.Fatalf("evidence is not JSON: %v", err)
	}
	pidIn := ev["pid_at_inject"].(map[string]int)[node]
	pidOut := ev["pid_at_heal"].(map[string]int)[node]
	if pidIn == 0 || pidIn != pidOut {
		t.Fatalf("evidence PIDs %d → %d: the node should have stayed up", pidIn, pidOut)
	}
	if ev["disabled_at"] == nil || ev["enabled_at"] == nil || ev["client_state_reloaded"] != true {
		t.Fatalf("evidence: %v", ev)
	}
	t.Logf("partition of %s (pid %d) for %v: %d/%d rounds failed only on its bucket; all buckets accepted %v after heal; connections cut %v",
		node, pidIn, healed.Sub(injected).Round(time.Millisecond), failed, failed, recovered.Round(time.Millisecond), ev["connections_cut"])
}
