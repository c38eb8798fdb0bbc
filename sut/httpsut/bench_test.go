package httpsut

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seckill-harness/history"
	"seckill-harness/internal/benchkit"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/serve"
)

// benchServeEnv, set to the cluster's addresses (comma-separated), makes
// the test binary the reference service and nothing else (TestMain): it
// prints its address on stdout and serves until SIGTERM. The benchmark
// runs the service so, in a process of its own, for the client's CPU time
// (getrusage of this process) to be the client's alone.
const benchServeEnv = "HTTPSUT_BENCH_SERVE"

// benchTrialEnv lengthens (or shortens) each trial of the benchmark (a Go
// duration; default benchTrial).
const benchTrialEnv = "SECKILL_HTTP_BENCH_TRIAL"

const (
	benchTrial   = 3 * time.Second
	benchWorkers = 64     // the engine's default concurrency; vegeta's workers
	benchFrom    = 1000.0 // as BenchmarkOpenLoopHeadroom
	benchLimit   = 64_000.0
)

// benchServe is the child's life: the reference service (plain TCP to the
// cluster, the defaults but no local sold-out flag) until SIGTERM.
func benchServe(addrs string) int {
	s, err := serve.New(serve.Config{Listen: "127.0.0.1:0", RedisAddrs: strings.Split(addrs, ","),
		Secret: []byte(testSecret), SoldOutTTL: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serve.Run(ctx, s, func(a string) { fmt.Println(a) }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startBenchService starts the test binary as the reference service
// (benchServe) and returns its URL and PID; it is stopped by PID when the
// benchmark ends (and dies with this process: Pdeathsig).
func startBenchService(b *testing.B) (string, int) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServeEnv+"="+strings.Join(testCluster.Addrs(), ","))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting the service: %v", err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		addr <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case a := <-addr:
		if a == "" {
			b.Fatal("the service exited before listening (its stderr above)")
		}
		return "http://" + a, cmd.Process.Pid
	case <-time.After(30 * time.Second):
		b.Fatal("the service did not listen within 30 s")
	}
	return "", 0
}

// trial is one load at one rate, by one tool. Latencies in ms: fromIntended
// from each request's place in the schedule, fromSend from its actual send.
// success is vegeta's success ratio (2xx/3xx answers; the harness's -1:
// its answers are judged by code, okShare), okShare the ACCEPTED answers'.
type trial struct {
	rate, achieved, late, success, okShare float64
	p50, p99, sendP50, sendP99             float64
	cpuPerReq, svcPerReq                   float64
	requests                               int
}

func (t trial) String() string {
	succ := "   -  "
	if t.success >= 0 {
		succ = fmt.Sprintf("%5.1f%%", 100*t.success)
	}
	return fmt.Sprintf("%6.0f/s: sent %6.0f/s, late %5.1f%%, p50 %6.2f p99 %7.2f ms (from the send: p50 %6.2f p99 %7.2f), success %s, ACCEPTED %5.1f%%, client %4.0f µs/req, service %4.0f µs/req",
		t.rate, t.achieved, 100*t.late, t.p50, t.p99, t.sendP50, t.sendP99, succ, 100*t.okShare, t.cpuPerReq, t.svcPerReq)
}

// pct is the q-quantile of d (sorted here) in ms.
func pct(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return float64(d[int(q*float64(len(d)-1))]) / 1e6
}

// httpBench is the stand: the service child, the harness's system, and a
// second system of the same mapping whose client (same keep-alive
// settings, its own pool) and request bodies vegeta uses.
type httpBench struct {
	b         *testing.B
	sys, vsys *System
	st        *lua.Store
	svcPID    int
	dur       time.Duration
}

// activity is a fresh activity with stock far above the demand (the
// accept path), written through the harness's system (state: reference).
func (h *httpBench) activity() *lua.Activity {
	a := lua.NewActivity(fmt.Sprintf("hbench%d-%d", time.Now().UnixMilli()%1_000_000, actSeq.Add(1)), "sku1", 1_000_000_000, 3, time.Hour)
	if err := h.sys.Setup(context.Background(), a); err != nil {
		h.b.Fatal(err)
	}
	return a
}

// measure runs load and returns the client's and the service's CPU time.
func (h *httpBench) measure(load func()) (client, svc time.Duration) {
	runtime.GC()
	c0 := benchkit.CPUTime()
	s0, ok0 := benchkit.ProcCPUTime(h.svcPID)
	load()
	client = benchkit.CPUTime() - c0
	s1, ok1 := benchkit.ProcCPUTime(h.svcPID)
	if !ok0 || !ok1 {
		h.b.Fatalf("the service (PID %d) is gone", h.svcPID)
	}
	return client, s1 - s0
}

// harness is one open-loop run of the engine through the HTTP path, late
// share as the engine's headroom measures it (runner.Observed.LateShare).
func (h *httpBench) harness(rate float64) trial {
	a := h.activity()
	defer func() { _, _ = h.sys.Teardown(context.Background(), a) }()
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.SampleEvery, cfg.Mix = rate, h.dur, 1_000_000, 0, runner.Mix{}
	cfg.Concurrency = benchWorkers
	var res *runner.Result
	cpu, svc := h.measure(func() {
		var err error
		if res, err = runner.Run(context.Background(), cfg, sut.Sale{Activity: a, IDs: h.st}, h.sys); err != nil {
			h.b.Fatal(err)
		}
	})
	var lat, send []time.Duration
	ok := 0
	for i := range res.History.Ops {
		o := &res.History.Ops[i]
		lat, send = append(lat, o.End-o.Intended), append(send, o.End-o.Start)
		if o.Outcome == history.Outcome(lua.Accepted) {
			ok++
		}
	}
	n := len(lat)
	return trial{rate: rate, achieved: float64(n) / res.Elapsed.Seconds(), late: res.Observed.LateShare(), success: -1, okShare: float64(ok) / float64(max(n, 1)),
		p50: pct(lat, 0.5), p99: pct(lat, 0.99), sendP50: pct(send, 0.5), sendP99: pct(send, 0.99),
		cpuPerReq: us(cpu, n), svcPerReq: us(svc, n), requests: n}
}

func us(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(max(n, 1)) }

// vegeta is vegeta's own Attacker at the same rate (constant pacer), with
// benchWorkers workers at most, on the same client settings, sending the
// same request bodies (fresh user and request per request). Its latency
// is vegeta's (from the send); lateness and the latency from the schedule
// are computed here from each result's Seq (vegeta's constant pacer
// schedules hit n at (n+1)/rate).
func (h *httpBench) vegeta(rate float64) trial {
	a := h.activity()
	defer func() { _, _ = h.sys.Teardown(context.Background(), a) }()
	var seq atomic.Uint32
	targeter := func(t *vegeta.Target) error {
		n := seq.Add(1)
		x, err := h.vsys.target(h.vsys.m.Submit, values(a, history.UserID(n), history.RequestID(n), ""))
		*t = x
		return err
	}
	client := *h.vsys.client
	client.Timeout = h.vsys.m.timeout
	atk := vegeta.NewAttacker(vegeta.Client(&client), vegeta.Workers(benchWorkers), vegeta.MaxWorkers(benchWorkers))
	pacer := vegeta.ConstantPacer{Freq: int(rate), Per: time.Second}
	interval := time.Second / time.Duration(pacer.Freq)
	var m vegeta.Metrics
	var lat []time.Duration
	late, ok := 0, 0
	cpu, svc := h.measure(func() {
		t0 := time.Now()
		for r := range atk.Attack(targeter, pacer, h.dur, "") {
			m.Add(r)
			due := t0.Add(time.Duration(r.Seq+1) * interval)
			if r.Timestamp.Sub(due) > time.Millisecond {
				late++
			}
			lat = append(lat, r.Timestamp.Add(r.Latency).Sub(due))
			if bytes.Contains(r.Body, []byte(`"ACCEPTED"`)) {
				ok++
			}
		}
	})
	m.Close()
	n := int(m.Requests)
	return trial{rate: rate, achieved: m.Rate, late: float64(late) / float64(max(n, 1)), success: m.Success, okShare: float64(ok) / float64(max(n, 1)),
		p50: pct(lat, 0.5), p99: pct(lat, 0.99), sendP50: float64(m.Latencies.P50) / 1e6, sendP99: float64(m.Latencies.P99) / 1e6,
		cpuPerReq: us(cpu, n), svcPerReq: us(svc, n), requests: n}
}

// BenchmarkHTTPPathVsVegeta: the harness's HTTP path (engine + System, one
// keep-alive client) against vegeta's own Attacker (lib, in this process),
// both sending the same request bodies to the reference service (the test
// binary re-run as `serve`, in a process of its own, plain TCP to the test
// cluster) on 127.0.0.1, paired trials at each rate (alternating which
// tool goes first).
//
//   - harness headroom H: the highest rate the engine paces through the
//     HTTP path with <= 1% of starts more than 1 ms late (dropped ones count
//     as late), searched as BenchmarkOpenLoopHeadroom searches
//     (benchkit.Headroom: doubling from 1,000/s, 4 bisection steps);
//     its p50/p99 from the intended start and its client CPU per request;
//   - vegeta at the same rates: its achieved rate, p50/p99 as it measures
//     them (from the send) and from the schedule, success ratio, client
//     CPU per request, and its late starts by the same 1 ms rule;
//   - vegeta's rate at the same latency V: the highest rate tried (beyond
//     the harness's trials, vegeta alone doubles on while it holds) at which
//     vegeta sent >= 99% of the rate asked, with >= 99% success, and its
//     own p99 (from the send) at or under the harness's p99 at H (from the
//     intended start): the latency budget the harness meets at its headroom.
//
// Reports H/V (target >= 0.9). SECKILL_HTTP_BENCH_TRIAL sets each trial's
// length (default 3s; the whole ~1.5 minutes).
func BenchmarkHTTPPathVsVegeta(b *testing.B) {
	load := benchkit.LoadAvg()
	dur := benchTrial
	if v := os.Getenv(benchTrialEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 500*time.Millisecond {
			b.Fatalf("%s=%q: want a duration of at least 500ms, e.g. 10s", benchTrialEnv, v)
		}
		dur = d
	}
	url, pid := startBenchService(b)
	m := mappingWith(b, "state: reference\ntimeout: 2s\n")
	st := lua.NewStore(testRDB, lua.Embedded(), []byte(testSecret))
	sys, err := New(url, m, benchWorkers, st)
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Close()
	vsys, err := New(url, m, benchWorkers, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer vsys.Close()
	h := &httpBench{b: b, sys: sys, vsys: vsys, st: st, svcPID: pid, dur: time.Second}
	h.harness(benchFrom) // warm-up: connections, the service's pools, the scripts
	h.vegeta(benchFrom)
	h.dur = dur

	var hs, vs []trial
	H := benchkit.Headroom(benchFrom, benchLimit, 4, func(rate float64) bool {
		if len(hs)%2 == 0 {
			hs, vs = append(hs, h.harness(rate)), append(vs, h.vegeta(rate))
		} else {
			vs, hs = append(vs, h.vegeta(rate)), append(hs, h.harness(rate))
		}
		return hs[len(hs)-1].late <= benchkit.MaxLate
	})
	atH := slices.IndexFunc(hs, func(t trial) bool { return t.rate == H })
	if atH < 0 { // no rate met: no latency to hold vegeta to; the lowest rate tried described
		reportHTTPBench(b, load, dur, 0, 0, len(hs)-1, hs, vs)
		return
	}
	budget := hs[atH].p99
	holds := func(t trial) bool { return t.achieved >= 0.99*t.rate && t.success >= 0.99 && t.sendP99 <= budget }
	V, top := 0.0, 0.0
	for _, t := range vs {
		top = max(top, t.rate)
		if holds(t) {
			V = max(V, t.rate)
		}
	}
	for r := 2 * top; V == top && r <= benchLimit; r *= 2 {
		t := h.vegeta(r)
		vs = append(vs, t)
		if !holds(t) {
			break
		}
		V, top = r, r
	}
	reportHTTPBench(b, load, dur, H, V, atH, hs, vs)
}

// reportHTTPBench prints every trial, the definitions and the summary
// line, and reports the figures of the harness's headroom H and vegeta's
// rate at the same latency V, each tool described by its trial at hs[at].
func reportHTTPBench(b *testing.B, load string, dur time.Duration, H, V float64, at int, hs, vs []trial) {
	ht, vt := hs[at], vs[at]
	fmt.Printf("HTTP path vs vegeta: load average %s at the start; trials of %s, %d workers each, the reference service in a process of its own (CPU per request: client = this process's getrusage, service = the child's /proc stat); latency in ms from the intended start (vegeta: from its schedule, hit n at (n+1)/rate) and, in brackets, from the actual send (vegeta's own figures)\n",
		load, dur, benchWorkers)
	for i := range hs {
		fmt.Printf("  harness %s\n  vegeta  %s\n", hs[i], vs[i])
	}
	for _, t := range vs[len(hs):] {
		fmt.Printf("  vegeta  %s (vegeta alone, beyond the harness's trials)\n", t)
	}
	ratio := 0.0
	switch {
	case H == 0:
		fmt.Printf("the harness paced no rate tried (down to %.0f/s) with <= 1%% of starts late: no headroom, no latency to hold vegeta to; the ratio is undefined (reported as 0)\n", benchFrom/16)
	case V == 0:
		fmt.Printf("vegeta held no rate tried within the harness's p99: the ratio is undefined (reported as 0)\n")
	default:
		ratio = H / V
	}
	fmt.Printf("harness headroom: %.0f req/s with <= 1%% of starts > 1 ms late; at %.0f/s: p50 %.2f p99 %.2f ms (from the intended start), client %.0f µs/req\n"+
		"vegeta at the same latency: %.0f req/s = the highest rate tried at which vegeta sent >= 99%% of the rate asked, >= 99%% successes, and its own p99 (from the send) <= %.2f ms (the harness's p99 at %.0f/s); vegeta at %.0f/s: p50 %.2f p99 %.2f ms from the send (%.2f / %.2f from its schedule), %.1f%% late by the 1 ms rule, success %.1f%%, client %.0f µs/req\n",
		H, ht.rate, ht.p50, ht.p99, ht.cpuPerReq, V, ht.p99, ht.rate, vt.rate, vt.sendP50, vt.sendP99, vt.p50, vt.p99, 100*vt.late, 100*vt.success, vt.cpuPerReq)
	fmt.Printf("| HTTP path, load %s | harness %.0f req/s, p99 %.2f ms, %.0f µs/req | vegeta %.0f req/s at p99 <= %.2f ms, %.0f µs/req at %.0f/s | ratio %.2f (target >= 0.9) | client CPU harness/vegeta %.2f |\n",
		load, H, ht.p99, ht.cpuPerReq, V, ht.p99, vt.cpuPerReq, vt.rate, ratio, ht.cpuPerReq/vt.cpuPerReq)
	b.ReportMetric(H, "harness-req/s")
	b.ReportMetric(ht.p50, "harness-p50-ms")
	b.ReportMetric(ht.p99, "harness-p99-ms")
	b.ReportMetric(ht.cpuPerReq, "harness-cpu-µs/req")
	b.ReportMetric(V, "vegeta-req/s")
	b.ReportMetric(vt.sendP50, "vegeta-p50-ms")
	b.ReportMetric(vt.sendP99, "vegeta-p99-ms")
	b.ReportMetric(vt.success, "vegeta-success")
	b.ReportMetric(vt.cpuPerReq, "vegeta-cpu-µs/req")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(0.9, "target-ratio")
}
