package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
)

// replTestEnv starts a 1 master × 1 replica cluster whose replication runs
// through proxies; the hot slot is slot 0 (the only master owns them all).
func replTestEnv(t *testing.T) (*compose.LocalCluster, *Env, string, string) {
	t.Helper()
	// Its own cluster: one master, replication through proxies.
	c := startOwnCluster(t, compose.Options{Masters: 1, ReplicationProxies: true})
	return c, &Env{Cluster: c, HotSlots: []int{0}, Logf: t.Logf}, c.Addrs()[0], c.Addrs()[1]
}

// lagBytes is the replica's current lag behind its master (-1 if unknown).
func lagBytes(t *testing.T, c *compose.LocalCluster) int64 {
	t.Helper()
	lags, err := compose.ReadReplicationLag(context.Background(), c)
	if err != nil || len(lags) != 1 || lags[0].LagBytes == nil {
		return -1
	}
	return *lags[0].LagBytes
}

// writeBurst writes n values of size bytes to the master and returns when
// all are acknowledged.
func writeBurst(t *testing.T, c *compose.LocalCluster, master, prefix string, n, size int) {
	t.Helper()
	adm, err := c.Admin(master)
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("x", size)
	pipe := adm.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Set(context.Background(), fmt.Sprintf("%s:%d", prefix, i), val, 0)
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatalf("writing %s: %v", prefix, err)
	}
}

// catchUp waits until the replica's lag is 0 and returns how long that took.
func catchUp(t *testing.T, c *compose.LocalCluster, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	for lagBytes(t, c) != 0 {
		if time.Since(since) > within {
			t.Fatalf("replica still %d bytes behind after %v", lagBytes(t, c), within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(since)
}

// The replica falls behind by what the toxic implies: with latency=L it
// receives nothing of a burst for about L, then catches up; with rate=R a
// burst of B bytes takes about B/R to arrive. A burst without the toxic is
// on the replica almost at once (the measurement tells the two apart).
func TestReplicaLagDelaysTheStreamByWhatTheToxicImplies(t *testing.T) {
	clustertest.Need(t)
	c, env, master, _ := replTestEnv(t)
	ctx := ctxT(t, 2*time.Minute)
	const n, size = 100, 1000
	const burstBytes = n * size

	t0 := time.Now()
	writeBurst(t, c, master, "base", n, size)
	base := catchUp(t, c, t0, 10*time.Second)
	t.Logf("no toxic: a %d-byte burst on the replica after %v", burstBytes, base.Round(time.Millisecond))

	t.Run("latency", func(t *testing.T) {
		const latency = 1000 * time.Millisecond
		p := injected(t, ctx, env, "replica-lag:latency=1000")
		defer p.Fault.Heal(ctx, env)
		t0 := time.Now()
		writeBurst(t, c, master, "lat", n, size)
		if lag := lagBytes(t, c); lag < burstBytes {
			t.Fatalf("right after the burst the replica is %d bytes behind, want >= %d", lag, burstBytes)
		}
		time.Sleep(latency*6/10 - time.Since(t0))
		if lag := lagBytes(t, c); lag < burstBytes {
			t.Fatalf("%v after the burst, under latency=%v, the replica is only %d bytes behind, want >= %d (the stream is not delayed)", time.Since(t0), latency, lag, burstBytes)
		}
		took := catchUp(t, c, t0, 15*time.Second)
		if took < latency*9/10 {
			t.Fatalf("under latency=%v the burst reached the replica after %v", latency, took)
		}
		if base >= latency/2 {
			t.Fatalf("without the toxic the burst took %v: the baseline does not tell the toxic apart", base)
		}
		if err := p.Fault.Heal(ctx, env); err != nil {
			t.Fatal(err)
		}
		ev := p.Fault.Evidence()
		if got, _ := ev["max_lag_bytes"].(int64); got < burstBytes {
			t.Fatalf("evidence max_lag_bytes = %v, want >= %d: %v", ev["max_lag_bytes"], burstBytes, ev)
		}
		if _, ok := ev["caught_up_after_heal_ms"]; !ok {
			t.Fatalf("evidence lacks caught_up_after_heal_ms: %v", ev)
		}
		t.Logf("latency=%v: burst of %d bytes on the replica after %v; evidence max_lag_bytes %v, link states %v, caught up %vms after heal",
			latency, burstBytes, took.Round(time.Millisecond), ev["max_lag_bytes"], ev["link_status_seen"], ev["caught_up_after_heal_ms"])
	})

	t.Run("rate", func(t *testing.T) {
		const rateKBs = 50
		p := injected(t, ctx, env, fmt.Sprintf("replica-lag:rate=%d", rateKBs))
		defer p.Fault.Heal(ctx, env)
		t0 := time.Now()
		writeBurst(t, c, master, "rate", n, size)
		took := catchUp(t, c, t0, 30*time.Second)
		implied := time.Duration(float64(burstBytes) / (rateKBs * 1000) * float64(time.Second))
		if took < implied*7/10 {
			t.Fatalf("under rate=%d KB/s a burst of %d bytes reached the replica after %v, want about %v", rateKBs, burstBytes, took, implied)
		}
		if err := p.Fault.Heal(ctx, env); err != nil {
			t.Fatal(err)
		}
		t.Logf("rate=%d KB/s: burst of %d bytes on the replica after %v (implied %v); evidence max_lag_bytes %v",
			rateKBs, burstBytes, took.Round(time.Millisecond), implied, p.Fault.Evidence()["max_lag_bytes"])
	})
	if names := mustToxics(t, c).ToxicNames(master); len(names) != 0 {
		t.Fatalf("toxics left on the replication proxy after heal: %v", names)
	}
}

// injected parses and injects spec, and gives the toxic 200ms to settle.
func injected(t *testing.T, ctx context.Context, env *Env, spec string) *Planned {
	t.Helper()
	p, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Fault.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	return p
}

func mustToxics(t *testing.T, c *compose.LocalCluster) compose.Toxics {
	t.Helper()
	tx, ok := c.ReplicationToxics()
	if !ok {
		t.Fatal("no replication proxies")
	}
	return tx
}

// On a cluster that replicates directly the replication kinds refuse,
// naming what they need, and parameters are checked.
func TestReplicationKindsRefuseWithoutReplicationProxies(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	env := &Env{Cluster: testCluster, HotSlots: []int{0}}
	for _, text := range []string{"replica-lag:latency=100", "replica-partition"} {
		p, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Fault.Inject(ctxT(t, 10*time.Second), env)
		if err == nil || !strings.Contains(err.Error(), "ReplicationProxies") {
			t.Fatalf("%s on a directly replicating cluster: %v, want a refusal naming ReplicationProxies", text, err)
		}
		if err := p.Fault.Heal(context.Background(), env); err != nil {
			t.Fatalf("heal after a refused inject: %v", err)
		}
	}
	for _, bad := range []string{"replica-lag:latency=0", "replica-lag:rate=-1", "replica-lag:stream=upstream", "replica-partition:latency=5"} {
		if _, err := Parse(bad); err == nil {
			t.Fatalf("Parse(%q) accepted", bad)
		}
	}
}

// The loss window of replica-lag: writes acknowledged at a steady rate
// while the stream is delayed by L, then the master SIGKILLed and its
// replica promoted with TAKEOVER at once. What the replica had not
// received yet — about the writes of the last L — is lost, so a longer
// delay loses more.
func TestReplicaLagLossGrowsWithTheDelay(t *testing.T) {
	clustertest.Need(t)
	c, env, _, _ := replTestEnv(t)
	ctx := ctxT(t, 3*time.Minute)
	const rate = 200 // writes per second
	var lost []int
	for round, latency := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond} {
		nodes, err := c.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var master, replica string
		for _, n := range nodes {
			if n.Role == "master" {
				master = n.Addr
			} else {
				replica = n.Addr
			}
		}
		madm, _ := c.Admin(master)
		radm, _ := c.Admin(replica)
		p := injected(t, ctx, env, fmt.Sprintf("replica-lag:latency=%d", latency.Milliseconds()))
		// Write for 2×latency (at least 1 s) so the stream is in steady lag.
		n := max(int(rate*2*latency.Seconds()), rate)
		tick := time.NewTicker(time.Second / rate)
		for i := 0; i < n; i++ {
			<-tick.C
			if err := madm.Set(ctx, fmt.Sprintf("r%d:%d", round, i), "v", 0).Err(); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		tick.Stop()
		if err := c.Kill(master); err != nil {
			t.Fatal(err)
		}
		if err := radm.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
			t.Fatalf("TAKEOVER on %s: %v", replica, err)
		}
		if !waitReplField(radm, "role", "master", 15*time.Second) {
			t.Fatal("replica not promoted 15s after TAKEOVER")
		}
		missing := 0
		for i := 0; i < n; i++ {
			if v, _ := radm.Exists(ctx, fmt.Sprintf("r%d:%d", round, i)).Result(); v == 0 {
				missing++
			}
		}
		implied := int(rate * latency.Seconds())
		t.Logf("latency=%v, %d acknowledged writes at %d/s, master killed, replica promoted: %d lost (rate × latency = %d)", latency, n, rate, missing, implied)
		lost = append(lost, missing)
		if err := p.Fault.Heal(ctx, env); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, master); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitHealthy(ctxT(t, 30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if missing == 0 || missing > n {
			t.Fatalf("latency=%v: %d of %d acknowledged writes lost; want some lost (about %d)", latency, missing, n, implied)
		}
	}
	if lost[1] <= lost[0] {
		t.Fatalf("lost %d writes with the short delay and %d with the long one; want more lost with the longer delay", lost[0], lost[1])
	}
}
