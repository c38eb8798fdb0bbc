package lifecycle

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/reports"
	"seckill-harness/runner"
)

// buildFakeService builds sut/servicechild's test service.
func buildFakeService(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeservice")
	if out, err := exec.Command("go", "build", "-o", bin, "../../sut/servicechild/testdata/fakeservice").CombinedOutput(); err != nil {
		t.Fatalf("building fakeservice: %v\n%s", err, out)
	}
	return bin
}

func invariant(r *reports.Report, id string) reports.Invariant {
	for _, inv := range r.Invariants {
		if inv.ID == id {
			return inv
		}
	}
	return reports.Invariant{}
}

// A run with a service child, on a stand whose nodes announce their
// client proxies: the child routed by SECKILL_REDIS_ADDRS alone passes R1
// (its connections go through the proxies, also while a latency toxic
// acts on them) and is killed, paused and restarted by the service
// faults, each injected and healed; a child that connects to the nodes'
// own ports is caught by R1 and fails the run. No process of either child
// is left when Execute returns.
func TestServiceChildRun(t *testing.T) {
	clustertest.Need(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server")
	}
	bin := buildFakeService(t)
	ctx := context.Background()
	st, err := OpenStand(ctx, nil, ClusterSpec{Spec: "local", Masters: 3, Replicas: 0, ServiceRouting: true}, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	direct := strings.Join(st.Cluster.Addrs(), ",")
	for _, tc := range []struct {
		name, cmd string
		faults    []string
		pass      bool
	}{
		{"routed", "exec " + bin, []string{"latency:latency=20,at=300ms,for=1s", "service-pause:at=1400ms,for=400ms",
			"service-kill:at=2s,for=400ms", "service-restart:at=2800ms"}, true},
		{"misrouted", "FAKE_DIRECT_ADDRS=" + direct + " exec " + bin + " -bypass", []string{"latency:latency=20,at=300ms,for=1500ms"}, false},
	} {
		cfg := runner.DefaultConfig()
		cfg.Shape.Rate, cfg.Duration, cfg.Users = 100, 3500*time.Millisecond, 2000
		p := &Plan{Name: "service-" + tc.name, Stand: st, Cluster: ClusterSpec{Masters: 3}, Stock: 100, Buckets: 1, Service: ServicePlan{Cmd: tc.cmd},
			Phases: []runner.Phase{{Name: "load", Config: cfg}}}
		if err := p.AddFaults(tc.faults); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		oc, err := Execute(ctx, p, Output{Dir: dir})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r1 := invariant(oc.Report, "R1")
		t.Logf("%s: R1 %s: %s", tc.name, r1.Status, r1.Detail)
		if want := map[bool]reports.Status{true: reports.StatusPass, false: reports.StatusFail}[tc.pass]; r1.Status != want {
			t.Fatalf("%s: R1 %s (%s), want %s", tc.name, r1.Status, r1.Detail, want)
		}
		if !tc.pass && (oc.Report.Passed || !strings.Contains(r1.Detail, "bypassing the proxies") || !strings.Contains(r1.Detail, "while latency acted on the proxies")) {
			t.Fatalf("%s: passed=%v, R1 %q: want the run failed, naming the bypass and the latency fault it escaped", tc.name, oc.Report.Passed, r1.Detail)
		}
		if len(oc.NotInjected) > 0 {
			t.Fatalf("%s: faults not injected: %v", tc.name, oc.NotInjected)
		}
		var groups []int
		for _, f := range oc.Report.Faults {
			for _, k := range []string{"process_group", "process_group_after"} {
				if g, ok := f.Evidence[k].(int); ok {
					groups = append(groups, g)
				}
			}
			t.Logf("%s: fault %s evidence %v", tc.name, f.Kind, f.Evidence)
		}
		if tc.pass && len(groups) < 4 {
			t.Fatalf("%s: the service faults' evidence names %d process groups, want the ones they acted on and the restarts' (%v)", tc.name, len(groups), oc.Report.Faults)
		}
		for _, g := range groups {
			if syscall.Kill(-g, 0) == nil {
				t.Fatalf("%s: process group %d of the service still runs after the run", tc.name, g)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "service-stderr.log")); tc.pass && !strings.Contains(string(b), "SIGTERM") {
			t.Fatalf("%s: service-stderr.log in the run's directory lacks the child's SIGTERM line: %q", tc.name, b)
		}
	}
}

// Ctrl-C in the middle of the load (the run's context cancelled): Execute
// returns, and the service child's process group is gone.
func TestServiceChildStoppedOnInterrupt(t *testing.T) {
	clustertest.Need(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server")
	}
	bin := buildFakeService(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users = 50, time.Minute, 2000
	p := &Plan{Name: "service-interrupted", Cluster: ClusterSpec{Masters: 3, Replicas: 0}, Stock: 100, Buckets: 1,
		Service: ServicePlan{Cmd: "echo $$ > " + pidFile + "; exec " + bin}, Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
				time.Sleep(2 * time.Second)
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	oc, err := Execute(ctx, p, Output{Dir: t.TempDir()})
	cancel()
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatalf("the child never started (Execute: %v)", err)
	}
	if oc != nil && oc.RunErr == nil {
		t.Fatalf("the load was not interrupted: %+v", oc.Report.Interrupted)
	}
	if syscall.Kill(-pid, 0) == nil {
		t.Fatalf("process group %d of the service still runs after an interrupted run", pid)
	}
}

// A service child is given the run's sale in its environment: the
// activity's id and SKU, the plan's stock and bucket count
// (SECKILL_ACTIVITY, SECKILL_SKU, SECKILL_STOCK, SECKILL_BUCKETS), the
// figures the run is judged by.
func TestServiceChildGetsTheSale(t *testing.T) {
	clustertest.Need(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server")
	}
	bin := buildFakeService(t)
	envFile := filepath.Join(t.TempDir(), "env")
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users = 50, 500*time.Millisecond, 2000
	p := &Plan{Name: "service-sale", Cluster: ClusterSpec{Masters: 3, Replicas: 0}, Stock: 4321, Buckets: 3,
		Service: ServicePlan{Cmd: "env > " + envFile + "; exec " + bin}, Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	oc, err := Execute(context.Background(), p, Output{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "SECKILL_") {
			env[k] = v
		}
	}
	t.Logf("the child's sale: SECKILL_ACTIVITY=%s SECKILL_SKU=%s SECKILL_STOCK=%s SECKILL_BUCKETS=%s", env["SECKILL_ACTIVITY"], env["SECKILL_SKU"], env["SECKILL_STOCK"], env["SECKILL_BUCKETS"])
	a := oc.Activity
	for k, want := range map[string]string{"SECKILL_ACTIVITY": a.ID, "SECKILL_SKU": a.SKU, "SECKILL_STOCK": "4321", "SECKILL_BUCKETS": "3"} {
		if env[k] != want || want == "" {
			t.Errorf("the child's %s=%q, want %q (the run's)", k, env[k], want)
		}
	}
}
