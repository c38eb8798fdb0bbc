package lifecycle

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/runner"
	"seckill-harness/sut/pipeline"
)

// scrape reads the value of every sample of /metrics whose name (with
// labels) starts with one of names.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// A real run serves its metrics on the loopback address while the load
// goes on: two scrapes a second and a half apart see the named metrics,
// and the operation counters and the latency histogram moving.
func TestMetricsMoveDuringARealRun(t *testing.T) {
	clustertest.Need(t)
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users = 300, 6*time.Second, 5000
	p := &Plan{Name: "metrics", Cluster: ClusterSpec{Masters: 3, Replicas: 1}, Stock: 100000, Buckets: 2,
		Phases: []runner.Phase{{Name: "load", Config: cfg}}}
	addrc := make(chan string, 1)
	type result struct {
		first, second map[string]float64
	}
	got := make(chan result, 1)
	go func() {
		addr := <-addrc
		time.Sleep(2 * time.Second) // past the first rounds of the load
		first := scrape(t, addr)
		time.Sleep(1500 * time.Millisecond)
		got <- result{first, scrape(t, addr)}
	}()
	_, err := Execute(context.Background(), p, Output{MetricsAddr: "127.0.0.1:0", OnMetrics: func(a string) { addrc <- a }})
	if err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no scrape")
	}
	for _, name := range []string{`reserve_lua_rc_total{code="ACCEPTED"}`, "redis_timeout_total", "redis_outcome_unknown_total",
		"redis_pool_wait_seconds", "send_pending_count", "send_pending_oldest_age", `stock_invariant_deviation{bucket="0"}`, `seckill_phase{phase="load"}`,
		"seckill_latency_seconds_count"} {
		if _, ok := r.second[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	for _, prefix := range []string{"evicted_keys{", "cluster_state{", "redis_node_cpu_percent{"} {
		n := 0
		for k, v := range r.second {
			if strings.HasPrefix(k, prefix) {
				n++
				if prefix == "cluster_state{" && v != 1 {
					t.Errorf("%s = %g on a healthy cluster", k, v)
				}
			}
		}
		if n != 6 {
			t.Errorf("%s…: %d series, want one per node (6)", prefix, n)
		}
	}
	for _, name := range []string{`reserve_lua_rc_total{code="ACCEPTED"}`, "seckill_latency_seconds_count", `seckill_ops_total{outcome="ACCEPTED"}`} {
		if !(r.second[name] > r.first[name]) {
			t.Errorf("%s did not move: %g then %g", name, r.first[name], r.second[name])
		}
	}
	if r.second[`seckill_phase{phase="load"}`] != 1 {
		t.Errorf("phase gauge: %v", r.second[`seckill_phase{phase="load"}`])
	}
}

// With the pipeline's dispatcher crashed, send_pending fills and its
// oldest entry ages on /metrics: send_pending_oldest_age grows between two
// scrapes in the crash window, by about the time between them.
func TestSendPendingOldestAgeGrowsWhileTheDispatcherIsDown(t *testing.T) {
	clustertest.Need(t)
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Mix = 200, 6*time.Second, 5000, runner.Mix{}
	planned, err := ParseFaults([]string{"dispatcher-crash:at=1s,for=4s"}, cfg.Duration)
	if err != nil {
		t.Fatal(err)
	}
	pc := pipeline.DefaultConfig()
	p := &Plan{Name: "send-pending-age", Cluster: ClusterSpec{Masters: 3, Replicas: 0}, Stock: 100000, Buckets: 2,
		Phases: []runner.Phase{{Name: "load", Config: cfg}}, Faults: planned, Pipeline: &pc, Drain: 15 * time.Second}
	addrc := make(chan string, 1)
	type result struct {
		first, second map[string]float64
		gap           time.Duration
	}
	got := make(chan result, 1)
	go func() {
		addr := <-addrc
		time.Sleep(3 * time.Second) // two seconds into the crash
		first, t0 := scrape(t, addr), time.Now()
		time.Sleep(1500 * time.Millisecond)
		got <- result{first, scrape(t, addr), time.Since(t0)}
	}()
	if _, err := Execute(context.Background(), p, Output{MetricsAddr: "127.0.0.1:0", OnMetrics: func(a string) { addrc <- a }}); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no scrape")
	}
	a, b := r.first["send_pending_oldest_age"], r.second["send_pending_oldest_age"]
	if a < 0.5 || b-a < r.gap.Seconds()-1.2 {
		t.Fatalf("dispatcher down: send_pending_oldest_age %.2fs then %.2fs (%.1fs apart): want an entry aging with the clock",
			a, b, r.gap.Seconds())
	}
}
