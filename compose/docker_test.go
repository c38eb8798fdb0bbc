package compose

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// TestDockerAvailableDoesNotHang: without a Docker engine (as on the
// harness's own CI machines) the check answers within its 5 s bound with
// an error wrapping ErrNoDocker; with one it answers nil.
func TestDockerAvailableDoesNotHang(t *testing.T) {
	t0 := time.Now()
	err := DockerAvailable(context.Background())
	if d := time.Since(t0); d > 8*time.Second {
		t.Errorf("DockerAvailable took %v", d)
	}
	if err != nil && !errors.Is(err, ErrNoDocker) {
		t.Errorf("DockerAvailable: %v, want nil or ErrNoDocker", err)
	}
	t.Logf("DockerAvailable: %v (after %v)", err, time.Since(t0).Round(time.Millisecond))
	if err != nil {
		t0 = time.Now()
		_, serr := StartDocker(context.Background(), DockerOptions{})
		if !errors.Is(serr, ErrNoDocker) || time.Since(t0) > 8*time.Second {
			t.Errorf("StartDocker without an engine: %v after %v, want ErrNoDocker at once", serr, time.Since(t0))
		}
	}
}

// TestDockerCluster starts a 3x1 cluster of containers (the locally built
// Redis image, host network, no reaper) on an engine with no bridge
// network, and exercises the Cluster interface on it: kill, restart,
// pause, graceful failover, a latency toxic through the proxies. It must
// leave every container, network and volume as it found them.
func TestDockerCluster(t *testing.T) {
	redisImage, _ := localImages(t)
	leavesDockerAsFound(t)
	own := removesItsContainers(t)
	ctx := ctxT(t, 5*time.Minute)
	t0 := time.Now()
	c, err := StartDocker(ctx, DockerOptions{Image: redisImage, Logf: tlogf(t)})
	if err != nil {
		t.Fatalf("StartDocker: %v", err)
	}
	for _, a := range c.Addrs() {
		own(c.ContainerID(a))
	}
	t.Logf("provider start (6 containers, cluster formed, healthy): %v", time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if c.Provider() != ProviderDocker || !c.Owned() || !HasProcessControl(c) {
		t.Errorf("provider %s owned %v control %v", c.Provider(), c.Owned(), HasProcessControl(c))
	}
	if len(c.Addrs()) != 6 {
		t.Fatalf("Addrs %v", c.Addrs())
	}
	m, err := c.MasterOfSlot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := c.ReplicasOf(ctx, m.ID)
	if err != nil || len(reps) != 1 {
		t.Fatalf("replicas of %s: %v %v", m.Addr, reps, err)
	}
	// Kill the master: the replica takes over; Restart brings the old one
	// back as a replica.
	if err := c.Kill(m.Addr); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.NodeByAddr(m.Addr); !n.Down {
		t.Errorf("killed node not Down: %+v", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		nm, err := c.MasterOfSlot(ctx, 0)
		if err == nil && nm.ID == reps[0].ID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failover after docker kill: %v %v", nm, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.Restart(ctx, m.Addr); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.NodeByAddr(m.Addr); n.Role != "replica" || n.Down {
		t.Errorf("restarted node: %+v", n)
	}
	// Pause / Resume.
	if err := c.Pause(reps[0].Addr); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin(reps[0].Addr); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Admin of a paused node: %v", err)
	}
	if err := c.Resume(reps[0].Addr); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if tail := c.NodeLogTail(m.Addr, 5); tail == "" {
		t.Error("no container log")
	}

	// Graceful failover: CLUSTER FAILOVER on the replica of slot 0's master.
	m, err = c.MasterOfSlot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	reps, err = c.ReplicasOf(ctx, m.ID)
	if err != nil || len(reps) != 1 {
		t.Fatalf("replicas of %s: %v %v", m.Addr, reps, err)
	}
	adm, err := c.Admin(reps[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s: %v", reps[0].Addr, err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		nm, err := c.MasterOfSlot(ctx, 0)
		if err == nil && nm.ID == reps[0].ID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("graceful failover did not move slot 0 to %s: %v %v", reps[0].Addr, nm, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}

	// A toxic through the embedded proxies in front of the containers.
	p, err := NewProxies(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m, err = c.MasterOfSlot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := p.Dialer()(ctx, "tcp", m.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ping := func() time.Duration {
		t0 := time.Now()
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 7)
		if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "+PONG\r\n" {
			t.Fatalf("PING through the proxy: %q %v", buf, err)
		}
		return time.Since(t0)
	}
	base := ping()
	if err := p.AddToxic(m.Addr, Toxic{Name: "lat", Type: "latency", Stream: "downstream",
		Attributes: map[string]any{"latency": 200}}); err != nil {
		t.Fatal(err)
	}
	with := ping()
	if err := p.RemoveToxic(m.Addr, "lat"); err != nil {
		t.Fatal(err)
	}
	t.Logf("PING through the proxy of %s: %v, with a 200ms latency toxic %v", m.Addr, base, with)
	if with < 200*time.Millisecond {
		t.Errorf("latency toxic not acting: PING took %v", with)
	}
}
