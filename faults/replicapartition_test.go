package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"seckill-harness/internal/clustertest"
)

// waitReplField polls INFO replication through cl until field is want.
func waitReplField(cl *redis.Client, field, want string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for replInfoField(cl, field) != want {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// replInfoField reads one field of INFO replication through cl.
func replInfoField(cl *redis.Client, field string) string {
	info, err := cl.Info(context.Background(), "replication").Result()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// replica-partition cuts the stream (the master keeps acknowledging
// writes, the replica does not get them); heal reconnects and the replica
// catches up. Then the loss: writes acknowledged by the master during a
// replica-partition, the master SIGKILLed and the replica promoted with
// CLUSTER FAILOVER TAKEOVER: the new master has none of them.
func TestReplicaPartitionCutsTheStreamAndLosesAcknowledgedWritesOnFailover(t *testing.T) {
	clustertest.Need(t)
	c, env, master, replica := replTestEnv(t)
	ctx := ctxT(t, 2*time.Minute)
	madm, _ := c.Admin(master)
	radm, _ := c.Admin(replica)
	const n, size = 100, 100

	// Heal reconnects.
	p, err := Parse("replica-partition")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Fault.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	if !waitReplField(radm, "master_link_status", "down", 10*time.Second) {
		p.Fault.Heal(ctx, env)
		t.Fatal("replica link still up 10s after replica-partition")
	}
	writeBurst(t, c, master, "cut", n, size)
	mdb, _ := madm.DBSize(ctx).Result()
	rdb, _ := radm.DBSize(ctx).Result()
	if mdb-rdb != n {
		p.Fault.Heal(ctx, env)
		t.Fatalf("during replica-partition: master has %d keys, replica %d; want the replica %d short", mdb, rdb, n)
	}
	time.Sleep(300 * time.Millisecond)
	if err := p.Fault.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	if rdb, _ = radm.DBSize(ctx).Result(); rdb != mdb || replInfoField(radm, "master_link_status") != "up" {
		t.Fatalf("after heal: replica has %d keys (master %d), link %s", rdb, mdb, replInfoField(radm, "master_link_status"))
	}
	ev := p.Fault.Evidence()
	t.Logf("partition and heal: replica %d keys short while cut; evidence max_lag_bytes %v, link states %v, caught up %vms after heal",
		n, ev["max_lag_bytes"], ev["link_status_seen"], ev["caught_up_after_heal_ms"])
	if got, _ := ev["max_lag_bytes"].(int64); got < n*size {
		t.Fatalf("evidence max_lag_bytes %v < %d bytes written while cut: %v", ev["max_lag_bytes"], n*size, ev)
	}

	// The loss.
	p, _ = Parse("replica-partition")
	if err := p.Fault.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	defer p.Fault.Heal(context.Background(), env)
	if !waitReplField(radm, "master_link_status", "down", 10*time.Second) {
		t.Fatal("replica link still up 10s after replica-partition")
	}
	acked := 0
	for i := 0; i < n; i++ {
		if err := madm.Set(ctx, fmt.Sprintf("acked:%d", i), "v", 0).Err(); err != nil {
			t.Fatalf("write %d during replica-partition: %v", i, err)
		}
		acked++
	}
	if err := c.Kill(master); err != nil {
		t.Fatal(err)
	}
	if err := radm.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER TAKEOVER on %s: %v", replica, err)
	}
	if !waitReplField(radm, "role", "master", 15*time.Second) {
		t.Fatal("replica not promoted 15s after TAKEOVER")
	}
	present := 0
	for i := 0; i < n; i++ {
		if v, _ := radm.Exists(ctx, fmt.Sprintf("acked:%d", i)).Result(); v == 1 {
			present++
		}
	}
	lost := acked - present
	t.Logf("loss: %d writes acknowledged by %s during replica-partition, %s SIGKILLed, %s promoted (TAKEOVER): %d present, %d lost",
		acked, master, master, replica, present, lost)
	if lost != acked {
		t.Fatalf("%d of %d acknowledged writes lost; want all lost (the replica never received them)", lost, acked)
	}
	if err := p.Fault.Heal(ctx, env); err != nil {
		t.Fatalf("heal after the failover: %v", err)
	}

	// The old master comes back as a replica of the promoted node, and
	// replicates through the promoted node's own replication proxy.
	if err := c.Restart(ctx, master); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	back, _ := c.Admin(master)
	announced, _ := mustToxics(t, c).ListenAddr(replica)
	if port := replInfoField(back, "master_port"); announced != "127.0.0.1:"+port {
		t.Fatalf("restarted %s replicates from port %s, want the promoted node's replication proxy %s", master, port, announced)
	}
}
