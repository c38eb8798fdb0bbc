// Package metrics serves a run's live Prometheus metrics on a loopback
// address while the run goes on (seckill-harness run --metrics-addr
// 127.0.0.1:PORT), for a Prometheus scrape and the Grafana dashboard in
// docs/grafana-dashboard.json.
//
// Metric names (a contract, like report.json's):
//
//	reserve_lua_rc_total{code}           reserve answers by the script's return code name (ACCEPTED, SOLD_OUT, …)
//	seckill_ops_total{outcome}           every sent operation by outcome (codes, UNKNOWN, ERROR)
//	seckill_latency_seconds              histogram: completion − intended send (coordinated-omission free)
//	redis_timeout_total                  operations of which some send lost its reply (a timeout or a connection cut after the write)
//	redis_outcome_unknown_total          operations whose final outcome is UNKNOWN (no reply, the script may have run)
//	redis_pool_wait_seconds              seconds the load's go-redis pool made callers wait for a connection, last interval
//	redis_pool_timeouts                  pool wait timeouts, last interval
//	redis_pool_conns{state}              the load pool's connections: total, idle
//	send_pending_count                   pipeline sends to the MQ neither acknowledged nor failed (0 without --pipeline)
//	send_pending_oldest_age              seconds the oldest due send_pending entry has waited (0: none, or no --pipeline)
//	stock_invariant_deviation{bucket}    initial − (available + reserved) of the last stock reading (0 when I1 holds)
//	evicted_keys{node}                   the node's evicted_keys
//	cluster_state{node}                  1 when the node says cluster_state:ok, else 0
//	redis_node_cpu_percent{node,role}    the node's CPU over the last interval, % of one core
//	redis_node_ops_per_second{node,role} the node's commands per second over the last interval
//	redis_node_used_memory_bytes{node}   used_memory
//	redis_replica_lag_bytes{node}        a replica's bytes behind its master
//	seckill_active_fault{fault}          1 while the fault is in force
//	seckill_phase{phase}                 1 for the load phase running now
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"seckill-harness/history"
	"seckill-harness/reports"
)

// Live is a run's metrics registry and the HTTP server that exposes it on
// /metrics. Its Observe methods are safe for concurrent use.
type Live struct {
	reg *prometheus.Registry
	srv *http.Server
	ln  net.Listener

	rc, ops               *prometheus.CounterVec
	latency               prometheus.Histogram
	timeouts, unknown     prometheus.Counter
	poolWait, poolTimeout prometheus.Gauge
	poolConns             *prometheus.GaugeVec
	sendPending           prometheus.Gauge
	sendPendingAge        prometheus.Gauge
	deviation             *prometheus.GaugeVec
	evicted, clusterState *prometheus.GaugeVec
	cpu, nodeOps          *prometheus.GaugeVec
	memory, lag           *prometheus.GaugeVec
	fault, phase          *prometheus.GaugeVec

	mu     sync.Mutex
	faults map[string]bool
	cur    string // the phase set last
}

// CheckAddr validates a --metrics-addr: host:port with a loopback host
// (the harness listens on 127.0.0.1 only).
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %q: want HOST:PORT, e.g. 127.0.0.1:9464 (%v)", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--metrics-addr %q: the harness serves metrics on a loopback address only: use 127.0.0.1:%s", addr, port)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("--metrics-addr %q: port %q is not a number", addr, port)
	}
	return nil
}

// Listen registers the metrics and serves them on addr (a loopback
// host:port; port 0 picks a free one, see Addr) until Close.
func Listen(addr string) (*Live, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w (choose a free port)", addr, err)
	}
	l := newLive()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(l.reg, promhttp.HandlerOpts{Registry: l.reg}))
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	l.ln = ln
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

func newLive() *Live {
	l := &Live{reg: prometheus.NewRegistry(), faults: map[string]bool{}}
	f := newFactory(l.reg)
	l.rc = f.counterVec("reserve_lua_rc_total", "Reserve answers by the Lua script's return code name.", "code")
	l.ops = f.counterVec("seckill_ops_total", "Sent operations by outcome (business code, UNKNOWN or ERROR).", "outcome")
	l.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "seckill_latency_seconds",
		Help:    "Operation latency from the intended send time to the answer (coordinated-omission free).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)})
	l.reg.MustRegister(l.latency)
	l.timeouts = f.counter("redis_timeout_total", "Operations of which some send lost its reply (timeout or connection cut after the write).")
	l.unknown = f.counter("redis_outcome_unknown_total", "Operations whose final outcome is UNKNOWN.")
	l.poolWait = f.gauge("redis_pool_wait_seconds", "Seconds callers waited for a connection of the load's pool during the last interval.")
	l.poolTimeout = f.gauge("redis_pool_timeouts", "Pool wait timeouts of the load's pool during the last interval.")
	l.poolConns = f.gaugeVec("redis_pool_conns", "Connections of the load's pool.", "state")
	l.sendPending = f.gauge("send_pending_count", "Pipeline sends to the MQ neither acknowledged nor failed.")
	l.sendPendingAge = f.gauge("send_pending_oldest_age", "Seconds the oldest due send_pending entry has waited (0: none).")
	l.deviation = f.gaugeVec("stock_invariant_deviation", "initial - (available + reserved) of the last stock reading of the bucket (0 when I1 holds).", "bucket")
	l.evicted = f.gaugeVec("evicted_keys", "The node's evicted_keys.", "node")
	l.clusterState = f.gaugeVec("cluster_state", "1 when the node reports cluster_state:ok, else 0.", "node")
	l.cpu = f.gaugeVec("redis_node_cpu_percent", "The node's CPU over the last interval, percent of one core.", "node", "role")
	l.nodeOps = f.gaugeVec("redis_node_ops_per_second", "The node's commands per second over the last interval.", "node", "role")
	l.memory = f.gaugeVec("redis_node_used_memory_bytes", "The node's used_memory.", "node")
	l.lag = f.gaugeVec("redis_replica_lag_bytes", "A replica's bytes behind its master.", "node")
	l.fault = f.gaugeVec("seckill_active_fault", "1 while the fault is in force.", "fault")
	l.phase = f.gaugeVec("seckill_phase", "1 for the load phase running now.", "phase")
	return l
}

// Addr is the address the server listens on (the real port when 0 was asked).
func (l *Live) Addr() string { return l.ln.Addr().String() }

// Close stops the server. Idempotent.
func (l *Live) Close() error {
	if l == nil || l.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := l.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// ObserveOp counts one finished operation (runner.WithOpObserver).
func (l *Live) ObserveOp(o *history.Op) {
	name := o.TallyName()
	l.ops.WithLabelValues(name).Inc()
	switch o.Outcome {
	case history.OutcomeUnknown:
		l.unknown.Inc()
	case history.OutcomeError, history.OutcomeDropped:
	default:
		if o.Kind.IsReserve() {
			l.rc.WithLabelValues(name).Inc()
		}
	}
	if o.HadUnknown() {
		l.timeouts.Inc()
	}
	l.latency.Observe(max(0, (o.End - o.Intended).Seconds()))
}

// ObserveStock sets a bucket's I1 deviation (runner.WithStockObserver); a
// failed reading, or one of the available units alone (no held counter to
// deviate from), leaves the last value.
func (l *Live) ObserveStock(s history.StockSample) {
	if s.Err != "" || s.AvailableOnly {
		return
	}
	st := s.Stock
	l.deviation.WithLabelValues(strconv.FormatUint(uint64(s.Bucket), 10)).Set(float64(st.Initial - st.Available - st.Reserved))
}

// ObserveServers sets the node and pool gauges from the servers sampler's
// newest samples (servers.Options.OnRound).
func (l *Live) ObserveServers(nodes map[string]reports.NodeSample, pool *reports.PoolSecond) {
	for addr, n := range nodes {
		if n.Error != "" {
			l.clusterState.WithLabelValues(addr).Set(0)
			continue
		}
		ok := 0.0
		if n.ClusterState == "ok" {
			ok = 1
		}
		l.clusterState.WithLabelValues(addr).Set(ok)
		l.evicted.WithLabelValues(addr).Set(float64(n.EvictedKeys))
		l.memory.WithLabelValues(addr).Set(float64(n.UsedMemory))
		if n.CPUPct != nil {
			l.cpu.WithLabelValues(addr, n.Role).Set(*n.CPUPct)
		}
		if n.OpsPerS != nil {
			l.nodeOps.WithLabelValues(addr, n.Role).Set(*n.OpsPerS)
		}
		if n.LagBytes != nil {
			l.lag.WithLabelValues(addr).Set(float64(*n.LagBytes))
		}
	}
	if pool != nil {
		l.poolWait.Set(pool.WaitMs / 1000)
		l.poolTimeout.Set(float64(pool.Timeouts))
		l.poolConns.WithLabelValues("total").Set(float64(pool.TotalConns))
		l.poolConns.WithLabelValues("idle").Set(float64(pool.IdleConns))
	}
}

// SetSendPending sets send_pending_count.
func (l *Live) SetSendPending(n int64) { l.sendPending.Set(float64(n)) }

// SetSendPendingOldestAge sets send_pending_oldest_age.
func (l *Live) SetSendPendingOldestAge(d time.Duration) { l.sendPendingAge.Set(d.Seconds()) }

// SetPhase marks the load phase running now (the previous one goes to 0).
func (l *Live) SetPhase(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if name == l.cur {
		return
	}
	if l.cur != "" {
		l.phase.WithLabelValues(l.cur).Set(0)
	}
	l.cur = name
	if name != "" {
		l.phase.WithLabelValues(name).Set(1)
	}
}

// SetActiveFaults marks the faults in force now (every fault seen before
// and not in active goes to 0).
func (l *Live) SetActiveFaults(active []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := map[string]bool{}
	for _, f := range active {
		now[f] = true
		l.faults[f] = true
	}
	for f := range l.faults {
		v := 0.0
		if now[f] {
			v = 1
		}
		l.fault.WithLabelValues(f).Set(v)
	}
}

// factory registers metrics on one registry.
type factory struct{ reg *prometheus.Registry }

func newFactory(reg *prometheus.Registry) factory { return factory{reg} }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}
