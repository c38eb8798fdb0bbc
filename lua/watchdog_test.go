package lua

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
)

// scriptsWithReserve is the embedded scripts with reserve.lua replaced by src
// (as a team's --lua-dir would give it).
func scriptsWithReserve(t *testing.T, src string) *Scripts {
	t.Helper()
	dir := t.TempDir()
	emb := Embedded()
	writeFile(t, filepath.Join(dir, ReserveFile), src)
	writeFile(t, filepath.Join(dir, TransitionFile), emb.Transition.Source)
	writeFile(t, filepath.Join(dir, CompensateFile), emb.Compensate.Source)
	s, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A reserve script that never returns (read-only, so SCRIPT KILL can stop
// it) is killed by the watchdog once a call runs past the limit; the kill
// names the node, and the cluster answers again.
func TestWatchdogKillsALoopingScript(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 1)
	looping := NewStore(testRDB, scriptsWithReserve(t, "local n = 0\nwhile true do n = n + 1 end\n"), testSecret)
	w := NewWatchdog(testCluster, 300*time.Millisecond)
	looping.SetWatchdog(w)

	call, err := looping.NewReserveCall(a, "u1", "r1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := testRDB.MasterForKey(context.Background(), call.Keys()[0])
	if err != nil {
		t.Fatal(err)
	}
	node := owner.Options().Addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err = looping.Reserve(ctx, call)
	cancel()
	if err == nil {
		t.Fatal("the looping script returned")
	}

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.EnsureNotBusy(ctx); err != nil {
		t.Fatalf("a master is still busy: %v", err)
	}
	// The background sweep's kill lands when the node starts answering
	// (busy-reply-threshold), about when the call's read times out: give
	// its record a moment.
	kills := w.Kills()
	for deadline := time.Now().Add(3 * time.Second); len(kills) == 0 && time.Now().Before(deadline); kills = w.Kills() {
		time.Sleep(50 * time.Millisecond)
	}
	if len(kills) == 0 {
		t.Fatal("no SCRIPT KILL recorded")
	}
	if k := kills[0]; k.Node != node || !strings.Contains(k.Reason, "ran longer than 300ms") || k.At.IsZero() {
		t.Fatalf("kill %+v, want node %s and the reason", k, node)
	}
	// The cluster answers again: the reference script sells on that master.
	pingCtx, pingCancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer pingCancel()
	if err := owner.Ping(pingCtx).Err(); err != nil {
		t.Fatalf("%s after the kill: %v", node, err)
	}
	if res := reserve(t, a, "u2", "r2"); res.Code != Accepted {
		t.Fatalf("reserve after the kill: %+v", res)
	}
}

// A script that wrote before looping cannot be stopped by SCRIPT KILL
// (UNKILLABLE): other calls are answered BUSY, and EnsureNotBusy names the
// node and says what stops it. Its own one-master cluster: only SHUTDOWN
// NOSAVE ends the script, and the test sends it.
func TestWatchdogReportsAnUnkillableScript(t *testing.T) {
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	c, err := compose.Start(ctx, compose.Options{Masters: 1, ReplicasPerMaster: compose.NoReplicas,
		ExtraConfig: []string{"busy-reply-threshold 300"}})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rdb := NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 8})
	defer rdb.Close()
	node := c.Addrs()[0]
	defer func() {
		// The only way out; the node's process ends.
		if admin, err := c.Admin(node); err == nil {
			_ = admin.ShutdownNoSave(context.Background()).Err()
		}
	}()

	a := NewActivity("unkillable", "sku1", 10, 1, time.Hour)
	if err := Setup(context.Background(), rdb, a); err != nil {
		t.Fatal(err)
	}
	writing := NewStore(rdb, scriptsWithReserve(t, "redis.call('SET', KEYS[2], '0')\nwhile true do end\n"), testSecret)
	w := NewWatchdog(c, 200*time.Millisecond)
	writing.SetWatchdog(w)
	call, err := writing.NewReserveCall(a, "u1", "r1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	callCtx, callCancel := context.WithTimeout(context.Background(), time.Second)
	_, _ = writing.Reserve(callCtx, call)
	callCancel()

	// Another call is answered BUSY (past busy-reply-threshold).
	call2, _ := writing.NewReserveCall(a, "u2", "r2", time.Minute)
	busyCtx, busyCancel := context.WithTimeout(context.Background(), 3*time.Second)
	_, err = writing.Reserve(busyCtx, call2)
	busyCancel()
	if !IsBusy(err) {
		t.Fatalf("a call while the script runs: %v, want BUSY", err)
	}

	ensureCtx, ensureCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ensureCancel()
	err = w.EnsureNotBusy(ensureCtx)
	if err == nil {
		t.Fatal("EnsureNotBusy passed with a script running")
	}
	for _, want := range []string{node, "UNKILLABLE", "SHUTDOWN NOSAVE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if k := w.Kills(); len(k) != 0 {
		t.Errorf("kills recorded for an unkillable script: %+v", k)
	}
}
