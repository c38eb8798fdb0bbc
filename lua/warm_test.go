package lua

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"seckill-harness/internal/clustertest"
)

// freshScripts are the embedded scripts with a comment that makes their
// SHA1s new to every node: no test before this one cached them.
func freshScripts(t *testing.T) *Scripts {
	t.Helper()
	e := Embedded()
	tag := fmt.Sprintf("\n-- %s %d\n", t.Name(), time.Now().UnixNano())
	return &Scripts{Reserve: newScript(ReserveFile, e.Reserve.Source+tag),
		Transition: newScript(TransitionFile, e.Transition.Source+tag),
		Compensate: newScript(CompensateFile, e.Compensate.Source+tag), Origin: "test"}
}

// A cold client fails CheckWarm (no connection, no script), naming each
// master and what it lacks; after DialConns every master has the wanted
// connections open in the client's own pool and every script cached.
func TestDialConnsLeavesEveryMasterWarm(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	scripts := freshScripts(t)
	const conns = 12
	rdb := NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), PoolSize: conns + 4})
	defer rdb.Close()

	err := CheckWarm(ctx, rdb, scripts, conns)
	if err == nil || !strings.Contains(err.Error(), "0 of 3 scripts cached") || !strings.Contains(err.Error(), fmt.Sprintf("want %d", conns)) {
		t.Fatalf("cold client: CheckWarm = %v, want it to name missing connections and scripts", err)
	}

	ws, err := DialConns(ctx, rdb, scripts, conns)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 {
		t.Fatalf("warmth of %d masters, want 3: %+v", len(ws), ws)
	}
	for _, w := range ws {
		if w.Conns < conns || len(w.Scripts) != 3 {
			t.Errorf("master %s: %d conns, %d scripts; want >= %d and 3", w.Addr, w.Conns, len(w.Scripts), conns)
		}
	}
	if err := CheckWarm(ctx, rdb, scripts, conns); err != nil {
		t.Fatalf("after DialConns: %v", err)
	}
	// The first reserve on each master runs EVALSHA without a NOSCRIPT fallback.
	store := NewStore(rdb, scripts, testSecret)
	a := newActivity(t, 10, 3)
	for b := uint32(0); b < a.Buckets; b++ {
		for u := 0; ; u++ {
			user := fmt.Sprintf("u%d", u)
			if a.BucketOf(user) != b {
				continue
			}
			call, err := store.NewReserveCall(a, user, "r"+user, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			res, err := store.Reserve(ctx, call)
			if err != nil || res.EvalFallback {
				t.Fatalf("bucket %d: err=%v fallback=%v (the scripts were not cached)", b, err, res.EvalFallback)
			}
			break
		}
	}
}

// The conns asked for are capped at the pool size: a warm-up never asks
// the pool for more than it may hold.
func TestDialConnsCapsAtThePoolSize(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	rdb := NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), PoolSize: 3})
	defer rdb.Close()
	ws, err := DialConns(ctx, rdb, nil, 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Conns != 3 {
			t.Errorf("master %s: %d conns, want the pool size 3", w.Addr, w.Conns)
		}
	}
	if err := CheckWarm(ctx, rdb, nil, 50); err != nil {
		t.Fatal(err)
	}
	if _, err := DialConns(ctx, rdb, nil, 0); err == nil {
		t.Fatal("DialConns with 0 connections: no error")
	}
}

// The test cluster (3 masters, 1 replica each) settles; WaitSettled looks
// at every node.
func TestWaitSettledOnARealCluster(t *testing.T) {
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := WaitSettled(ctx, testCluster, 0)
	if err != nil || !st.OK {
		t.Fatalf("WaitSettled: %+v, %v", st, err)
	}
	if st.Nodes != len(testCluster.Addrs()) {
		t.Fatalf("looked at %d nodes, want %d", st.Nodes, len(testCluster.Addrs()))
	}
}

// Each unsettled state of INFO replication+persistence (as Redis 7 prints
// it) is named; a settled master and replica give nothing.
func TestUnsettledReasons(t *testing.T) {
	master := "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=7004,state=online,offset=1234,lag=0\r\nmaster_repl_offset:1234\r\n# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_bgsave_in_progress:0\r\naof_rewrite_in_progress:0\r\nmodule_fork_in_progress:0\r\n"
	replica := "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_link_status:up\r\nmaster_sync_in_progress:0\r\n# Persistence\r\nloading:0\r\nrdb_bgsave_in_progress:0\r\naof_rewrite_in_progress:0\r\n"
	if r := unsettledReasons(parseInfo(master)); len(r) != 0 {
		t.Fatalf("settled master: %v", r)
	}
	if r := unsettledReasons(parseInfo(replica)); len(r) != 0 {
		t.Fatalf("settled replica: %v", r)
	}
	cases := []struct{ info, want string }{
		{strings.Replace(master, "rdb_bgsave_in_progress:0", "rdb_bgsave_in_progress:1", 1), "rdb_bgsave_in_progress=1"},
		{strings.Replace(master, "aof_rewrite_in_progress:0", "aof_rewrite_in_progress:1", 1), "aof_rewrite_in_progress=1"},
		{strings.Replace(master, "state=online", "state=wait_bgsave", 1), "state=wait_bgsave"},
		{strings.Replace(master, "lag=0", "lag=3", 1), "lag=3"},
		{strings.Replace(replica, "master_link_status:up", "master_link_status:down", 1), "master_link_status=down"},
		{strings.Replace(replica, "master_sync_in_progress:0", "master_sync_in_progress:1", 1), "master_sync_in_progress=1"},
		{strings.Replace(replica, "loading:0", "loading:1", 1), "loading=1"},
	}
	for _, c := range cases {
		r := unsettledReasons(parseInfo(c.info))
		if len(r) != 1 || !strings.Contains(r[0], c.want) {
			t.Errorf("want %q, got %v", c.want, r)
		}
	}
}
