package lua

import (
	"context"
	"seckill-harness/internal/clustertest"
	"testing"
	"time"
)

func reserveWaiting(t *testing.T, a *Activity, user, req string, replicas int, timeout time.Duration) ReserveResult {
	t.Helper()
	call, err := testStore.NewReserveCall(a, user, req, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res, err := testStore.Reserve(WithWait(context.Background(), &WaitRequest{Replicas: replicas, Timeout: timeout}), call)
	if err != nil {
		t.Fatalf("reserve %s/%s: %v", user, req, err)
	}
	return res
}

// WAIT follows a fresh ACCEPTED only: the replica confirms it; a replay
// (its write was an earlier call's) and a refusal get none. Asking for more
// replicas than the master has times out: WAIT really ran, for its timeout.
func TestWaitFollowsAFreshAccepted(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 2, 1)
	res := reserveWaiting(t, a, "u1", "r1", 1, 2*time.Second)
	wantCode(t, res, Accepted)
	if !res.Wait.Sent || res.Wait.Err != nil || res.Wait.Acked < 1 || !res.Wait.Confirmed {
		t.Fatalf("wait %+v, want sent and confirmed by the replica", res.Wait)
	}
	if res.Attempts < 1 || res.Attempts > 2 {
		t.Fatalf("attempts %d: the pinned connection's script must be counted once (twice with the EVAL fallback)", res.Attempts)
	}
	replay := reserveWaiting(t, a, "u1", "r1", 1, 2*time.Second)
	if replay.Code != Accepted || !replay.Replay || replay.Wait.Sent {
		t.Fatalf("replay %+v: want ACCEPTED replay=1 and no WAIT", replay)
	}
	if other := reserveWaiting(t, a, "u1", "r2", 1, 2*time.Second); other.Code != UserAlreadyReserved || other.Wait.Sent {
		t.Fatalf("second request of u1 %+v: want USER_ALREADY_RESERVED and no WAIT", other)
	}
	t0 := time.Now()
	two := reserveWaiting(t, a, "u2", "r3", 2, 300*time.Millisecond)
	wantCode(t, two, Accepted)
	if !two.Wait.Sent || two.Wait.Err != nil || two.Wait.Acked != 1 || two.Wait.Confirmed || two.Wait.Latency < 250*time.Millisecond || time.Since(t0) < two.Wait.Latency {
		t.Fatalf("wait for 2 of 1 replica: %+v, want 1 acknowledged after the 300ms timeout, inside the call", two.Wait)
	}
}

// With the replica stopped, the WAIT after a reservation is not confirmed:
// it waits its timeout and answers 0 (the call still answers ACCEPTED).
func TestWaitUnconfirmedWhileTheReplicaIsStopped(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	a := newActivity(t, 5, 1)
	master, err := testRDB.MasterForKey(ctx, a.Scope(0).StockKey())
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := testCluster.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var masterID, replica string
	for _, n := range nodes {
		if n.Addr == master.Options().Addr {
			masterID = n.ID
		}
	}
	for _, n := range nodes {
		if n.Role == "replica" && n.MasterID == masterID {
			replica = n.Addr
		}
	}
	if replica == "" {
		t.Fatalf("no replica of %s in %+v", master.Options().Addr, nodes)
	}
	if err := testCluster.Pause(replica); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := testCluster.Resume(replica); err != nil {
			t.Error(err)
		}
	}()
	res := reserveWaiting(t, a, "u1", "r1", 1, 300*time.Millisecond)
	wantCode(t, res, Accepted)
	if !res.Wait.Sent || res.Wait.Acked != 0 || res.Wait.Confirmed || res.Wait.Latency < 250*time.Millisecond {
		t.Fatalf("wait with the replica stopped: %+v, want sent, 0 acknowledged after the timeout", res.Wait)
	}
}
