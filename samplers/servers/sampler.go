// Package servers is the cluster's own view of a run, next to the
// client's: every node sampled once per interval while the load runs
// (CPU, ops/s, clients, memory, evictions, replication offsets and lag,
// link status, fork and persistence activity, cluster state), the slow
// log, the latency monitor and the scripts' command statistics read after
// the load, and the client's connection pool on the same clock.
//
// Every read goes through the cluster's admin clients
// (compose.Cluster.Admin): direct, never proxied, never the load's pool,
// so a fault on the client path or an exhausted pool does not blind the
// sampler, and the sampler does not steal connections from the load.
package servers

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/reports"
)

// DefaultInterval is the sampling period when Options.Interval is 0.
const DefaultInterval = time.Second

// Options tune a Sampler.
type Options struct {
	// Interval between rounds; 0: DefaultInterval.
	Interval time.Duration
	// Pool, when set, is read every round (the load's client: its
	// PoolStats, never a connection of it).
	Pool PoolStatser
	// OnRound, when set, is called after every round with the nodes'
	// newest samples (address → sample) and the pool's: live metrics hang
	// here. It runs on the sampler's goroutine.
	OnRound func(nodes map[string]reports.NodeSample, pool *reports.PoolSecond)
}

// PoolStatser is what the sampler reads of the load's client.
type PoolStatser interface {
	PoolStats() *redis.PoolStats
}

// Sampler samples every node of a cluster once per interval, from Start
// until Stop. Its methods are safe for concurrent use.
type Sampler struct {
	c    compose.Cluster
	opt  Options
	stop context.CancelFunc
	done chan struct{}

	mu    sync.Mutex
	nodes map[string]*nodeSeries // by address
	order []string               // first-seen order of the addresses
	pool  []poolAt
	repl  []replicationAt
	errs  []string
	// before is every master's commandstats before the load (address →
	// command → stat).
	before    map[string]map[string]reports.CommandStat
	threshold int64
}

// nodeSeries is one node's samples, with absolute times.
type nodeSeries struct {
	role, master string // at the first sample
	samples      []sampleAt
	prev         *counters
	evict        evictions
}

// evictions accumulates one node's evicted_keys over every reading.
type evictions struct {
	readings  int    // successful readings
	last      int64  // evicted_keys at the last reading
	runID     string // run_id at the last reading
	evicted   int64  // keys evicted since the first reading
	restarted bool   // run_id changed: counted from the restart
}

// add takes one reading of evicted_keys: the increase since the last one
// counts; after a restart (another run_id, counters reset) the whole new
// value does.
func (e *evictions) add(evicted int64, runID string) {
	switch {
	case e.readings == 0:
	case runID != e.runID:
		e.evicted += evicted
		e.restarted = true
	case evicted >= e.last:
		e.evicted += evicted - e.last
	}
	e.readings++
	e.last, e.runID = evicted, runID
}

type sampleAt struct {
	at time.Time
	s  reports.NodeSample
	// served is the commands the node ran for the path under test's
	// clients since the previous sample (dataCommands); -1: unknown (the
	// first answer after a gap or a restart).
	served int64
}

type replicationAt struct {
	at       time.Time
	replicas []compose.ReplicaLag
}

type poolAt struct {
	at time.Time
	s  reports.PoolSecond
}

// counters are the cumulative INFO figures the rates are deltas of.
type counters struct {
	at       time.Time
	cpu      float64 // used_cpu_sys + used_cpu_user, seconds
	commands int64
	data     int64 // dataCommands
	runID    string
}

// Start reads every master's commandstats (the baseline of Finish's
// script figures) and starts sampling in the background. Stop ends it.
func Start(ctx context.Context, c compose.Cluster, opt Options) *Sampler {
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	s := &Sampler{c: c, opt: opt, nodes: map[string]*nodeSeries{}, done: make(chan struct{})}
	s.before, s.threshold = s.readCommandStats(ctx)
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	// The first round before returning: every node has its baseline (the
	// start of its first rates) before the load begins.
	s.round(sctx)
	// The pool's baseline: its counters now (warm-up included), not
	// recorded; every entry is a difference from here on.
	var prevPool *redis.PoolStats
	if s.opt.Pool != nil {
		prevPool = s.opt.Pool.PoolStats()
	}
	go s.loop(sctx, prevPool)
	return s
}

// Stop ends the sampling and waits for the round in progress. Idempotent;
// a nil Sampler is a no-op.
func (s *Sampler) Stop() {
	if s == nil {
		return
	}
	s.stop()
	<-s.done
}

func (s *Sampler) loop(ctx context.Context, prevPool *redis.PoolStats) {
	defer close(s.done)
	tick := time.NewTicker(s.opt.Interval)
	defer tick.Stop()
	for {
		if s.opt.OnRound != nil {
			s.opt.OnRound(s.Latest())
		}
		select {
		case <-ctx.Done():
			// The pool's counters up to Stop (a local read): the totals
			// cover the whole load, not only up to the last tick.
			s.samplePool(prevPool)
			return
		case <-tick.C:
		}
		s.round(ctx)
		prevPool = s.samplePool(prevPool)
	}
}

// round reads every node once, in parallel, each bounded by the interval.
// The topology read before has its own bound: a node that does not answer
// it (a paused master) must not use up the time of the others' reads, or
// every node would look unreachable.
func (s *Sampler) round(ctx context.Context) {
	tctx, tcancel := context.WithTimeout(ctx, s.opt.Interval/2)
	topo, err := s.c.Nodes(tctx)
	tcancel()
	if err != nil {
		s.noteErr("topology: " + err.Error())
	}
	rctx, cancel := context.WithTimeout(ctx, s.opt.Interval)
	defer cancel()
	addrs := s.c.Addrs()
	for _, n := range topo {
		addrs = append(addrs, n.Addr)
	}
	addrs = dedupe(addrs)
	infos := make([]nodeInfo, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos[i] = readNode(rctx, s.c, a)
		}()
	}
	// Replication lag as compose reads it (the report's replication_lag
	// too), beside the nodes' INFO.
	replAt := time.Now()
	reps, rerr := compose.ReadReplicationLag(rctx, s.c)
	wg.Wait()
	if ctx.Err() != nil {
		return // a round cut short by Stop is not a sample
	}
	if rerr != nil {
		reps = nil
	}
	byReplica := map[string]compose.ReplicaLag{}
	for _, r := range reps {
		byReplica[r.Replica] = r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repl = append(s.repl, replicationAt{at: replAt, replicas: reps})
	for _, in := range infos {
		s.record(in, byReplica)
	}
}

// record turns one node's reading into a sample (s.mu held).
func (s *Sampler) record(in nodeInfo, byReplica map[string]compose.ReplicaLag) {
	ns, ok := s.nodes[in.addr]
	if !ok {
		ns = &nodeSeries{}
		s.nodes[in.addr] = ns
		s.order = append(s.order, in.addr)
	}
	smp := reports.NodeSample{}
	if in.err != nil {
		smp.Error = in.err.Error()
		ns.prev = nil
		ns.samples = append(ns.samples, sampleAt{at: in.at, s: smp, served: -1})
		return
	}
	smp.Role = in.role()
	rl, isReplica := byReplica[in.addr]
	if ns.role == "" {
		ns.role = smp.Role
		if smp.Role == "replica" {
			ns.master = masterOf(in, rl, isReplica)
		}
	}
	cur := &counters{at: in.at, cpu: in.float("used_cpu_sys") + in.float("used_cpu_user"),
		commands: in.int("total_commands_processed"), data: dataCommands(in.fields), runID: in.field("run_id")}
	served := int64(-1)
	if p := ns.prev; p != nil && p.runID == cur.runID && cur.at.After(p.at) && cur.cpu >= p.cpu && cur.commands >= p.commands {
		dt := cur.at.Sub(p.at).Seconds()
		cpu := roundTo(100*(cur.cpu-p.cpu)/dt, 10)
		ops := roundTo(float64(cur.commands-p.commands)/dt, 1)
		smp.CPUPct, smp.OpsPerS = &cpu, &ops
		if cur.data >= p.data {
			served = cur.data - p.data
		}
	}
	ns.prev = cur
	smp.ConnectedClients = in.int("connected_clients")
	smp.UsedMemory = in.int("used_memory")
	smp.MaxMemory = in.int("maxmemory")
	smp.EvictedKeys = in.int("evicted_keys")
	ns.evict.add(smp.EvictedKeys, cur.runID)
	smp.ReplOffset = in.int("master_repl_offset")
	smp.AOFRewrite = in.field("aof_rewrite_in_progress") == "1"
	smp.RDBBgsave = in.field("rdb_bgsave_in_progress") == "1"
	smp.LatestForkUsec = in.int("latest_fork_usec")
	smp.ClusterState = in.field("cluster_state")
	smp.ClusterSlotsOK = in.int("cluster_slots_ok")
	smp.ClusterKnownNum = in.int("cluster_known_nodes")
	smp.NodeID, smp.PeerFlags = in.myID, in.peers
	smp.RunID = cur.runID[:min(len(cur.runID), 12)]
	smp.UptimeS = in.int("uptime_in_seconds")
	smp.SyncFull = in.int("sync_full")
	if smp.Role == "replica" {
		smp.LinkStatus = in.field("master_link_status")
		smp.SyncInProgress = in.field("master_sync_in_progress") == "1"
		if isReplica {
			smp.LagBytes = rl.LagBytes
		}
		smp.Master = masterOf(in, rl, isReplica)
	}
	ns.samples = append(ns.samples, sampleAt{at: in.at, s: smp, served: served})
}

// masterOf names a replica's master: as its master reports it when the
// master answered this round, else as the replica's own INFO names it
// (master_host:master_port). A paused or dead master does not answer, and
// the failover that follows is exactly when the name is needed.
func masterOf(in nodeInfo, rl compose.ReplicaLag, fromMaster bool) string {
	if fromMaster && rl.Master != "" {
		return rl.Master
	}
	h, p := in.field("master_host"), in.field("master_port")
	if h == "" || p == "" {
		return ""
	}
	return net.JoinHostPort(h, p)
}

// samplePool reads the load's pool and records the deltas since prev.
func (s *Sampler) samplePool(prev *redis.PoolStats) *redis.PoolStats {
	if s.opt.Pool == nil {
		return nil
	}
	cur := s.opt.Pool.PoolStats()
	if cur == nil {
		return prev
	}
	if prev == nil {
		prev = &redis.PoolStats{}
	}
	p := reports.PoolSecond{
		Hits: int64(cur.Hits) - int64(prev.Hits), Misses: int64(cur.Misses) - int64(prev.Misses),
		Timeouts: int64(cur.Timeouts) - int64(prev.Timeouts), WaitCount: int64(cur.WaitCount) - int64(prev.WaitCount),
		WaitMs:     roundTo(float64(cur.WaitDurationNs-prev.WaitDurationNs)/1e6, 1000),
		TotalConns: int64(cur.TotalConns), IdleConns: int64(cur.IdleConns), StaleConns: int64(cur.StaleConns) - int64(prev.StaleConns),
		Pending: int64(cur.PendingRequests),
	}
	s.mu.Lock()
	s.pool = append(s.pool, poolAt{at: time.Now(), s: p})
	s.mu.Unlock()
	return cur
}

// Pool returns the load client's pool series: one entry per round from
// Start to Stop, each the differences of the counters since the previous
// one (the first: since Start) and the connection levels at its reading,
// with times in seconds since began. It is the one source of both
// report.json's servers.pool and its pool section (reports.PoolOf).
func (s *Sampler) Pool(began time.Time) []reports.PoolSecond {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []reports.PoolSecond
	for _, p := range s.pool {
		if p.at.Before(began.Add(-s.opt.Interval)) {
			continue
		}
		ps := p.s
		ps.TS = round3(p.at.Sub(began).Seconds())
		out = append(out, ps)
	}
	return out
}

// Replication returns the replication lag series read in every round
// (compose.ReadReplicationLag), with times in seconds since began; rounds
// before began are left out. A round whose topology could not be read has
// no replicas.
func (s *Sampler) Replication(began time.Time) []compose.ReplicationSample {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []compose.ReplicationSample
	for _, r := range s.repl {
		if r.at.Before(began) {
			continue
		}
		out = append(out, compose.ReplicationSample{TS: round3(r.at.Sub(began).Seconds()), Replicas: r.replicas})
	}
	return out
}

// Latest returns every node's newest sample and the pool's newest, for
// live metrics.
func (s *Sampler) Latest() (map[string]reports.NodeSample, *reports.PoolSecond) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]reports.NodeSample{}
	for a, ns := range s.nodes {
		if n := len(ns.samples); n > 0 {
			out[a] = ns.samples[n-1].s
		}
	}
	var p *reports.PoolSecond
	if n := len(s.pool); n > 0 {
		c := s.pool[n-1].s
		p = &c
	}
	return out, p
}

func (s *Sampler) noteErr(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 20 && (len(s.errs) == 0 || s.errs[len(s.errs)-1] != e) {
		s.errs = append(s.errs, e)
	}
}

// Finish stops the sampling, reads the slow log, the latency monitor and
// the scripts' command statistics of every master (keeping what was logged
// since began, the load's start), and returns the servers section. The
// series' times are seconds since began; samples taken before began, other
// than the last one (the baseline of the first rates), are dropped.
func (s *Sampler) Finish(ctx context.Context, began time.Time) *reports.Servers {
	s.Stop()
	out := &reports.Servers{IntervalS: s.opt.Interval.Seconds(), LatencyThresholdMs: s.threshold}
	masters := s.mastersNow(ctx)
	s.mu.Lock()
	for _, a := range s.order {
		ns := s.nodes[a]
		n := reports.ServerNode{Addr: a, Role: ns.role, Master: ns.master, Series: []reports.NodeSample{}}
		for _, sa := range ns.samples {
			if sa.at.Before(began.Add(-s.opt.Interval)) {
				continue
			}
			sm := sa.s
			sm.TS = round3(sa.at.Sub(began).Seconds())
			n.Series = append(n.Series, sm)
		}
		out.Nodes = append(out.Nodes, n)
	}
	out.Errors = append(out.Errors, s.errs...)
	s.mu.Unlock()
	out.Pool = s.Pool(began)
	for a := range masters {
		if !slices.ContainsFunc(out.Nodes, func(n reports.ServerNode) bool { return n.Addr == a }) {
			out.Nodes = append(out.Nodes, reports.ServerNode{Addr: a, Role: "master", Series: []reports.NodeSample{}})
		}
	}
	for i := range out.Nodes {
		n := &out.Nodes[i]
		if !masters[n.Addr] {
			continue
		}
		var err error
		if n.Slowlog, n.SlowlogEntries, err = readSlowlog(ctx, s.c, n.Addr, began); err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("%s: slowlog: %v", n.Addr, err))
		}
		if n.Latency, err = readLatency(ctx, s.c, n.Addr, began); err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("%s: latency: %v", n.Addr, err))
		}
	}
	after, _ := s.readCommandStats(ctx)
	out.Scripts = scriptDelta(s.before, after)
	return out
}

// mastersNow is the set of addresses that are masters at the end (the
// masters of the start when the topology cannot be read).
func (s *Sampler) mastersNow(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	if topo, err := s.c.Nodes(ctx); err == nil {
		for _, n := range topo {
			if n.Role == "master" {
				out[n.Addr] = true
			}
		}
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, ns := range s.nodes {
		if ns.role == "master" {
			out[a] = true
		}
	}
	return out
}

// nodeInfo is one node's INFO and CLUSTER INFO, parsed.
type nodeInfo struct {
	addr   string
	at     time.Time
	err    error
	fields map[string]string
	myID   string            // CLUSTER NODES myself
	peers  map[string]string // peer id → its trouble (parsePeerFlags)
}

func (in nodeInfo) field(k string) string { return in.fields[k] }
func (in nodeInfo) int(k string) int64 {
	v, _ := strconv.ParseInt(in.fields[k], 10, 64)
	return v
}
func (in nodeInfo) float(k string) float64 {
	v, _ := strconv.ParseFloat(in.fields[k], 64)
	return v
}

// role maps INFO's role ("master"/"slave") to the harness's names.
func (in nodeInfo) role() string {
	if in.fields["role"] == "slave" {
		return "replica"
	}
	return in.fields["role"]
}

// infoSections are the INFO sections a sample needs.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "commandstats"}

// readNode reads one node's INFO sections and CLUSTER INFO in one round trip.
func readNode(ctx context.Context, c compose.Cluster, addr string) nodeInfo {
	in := nodeInfo{addr: addr, at: time.Now()}
	cl, err := c.Admin(addr)
	if err != nil {
		in.err = err
		return in
	}
	var info *redis.StringCmd
	var cinfo, cnodes *redis.StringCmd
	_, err = cl.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Info(ctx, infoSections...)
		cinfo = p.ClusterInfo(ctx)
		cnodes = p.ClusterNodes(ctx)
		return nil
	})
	in.at = time.Now()
	if err != nil {
		in.err = err
		return in
	}
	in.fields = parseInfo(info.Val())
	for k, v := range parseInfo(cinfo.Val()) {
		in.fields[k] = v
	}
	in.myID, in.peers = parsePeerFlags(cnodes.Val())
	return in
}

// parsePeerFlags reads a CLUSTER NODES reply: the id of the node that
// answered (myself) and, by id, every other node it flags fail? or fail
// or whose link-state is disconnected (those words, comma-separated, in
// that order). Malformed lines are skipped.
func parsePeerFlags(s string) (myID string, peers map[string]string) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		flags := strings.Split(f[2], ",")
		if slices.Contains(flags, "myself") {
			myID = f[0]
			continue
		}
		var bad []string
		for _, w := range []string{"fail?", "fail"} {
			if slices.Contains(flags, w) {
				bad = append(bad, w)
			}
		}
		if f[7] == "disconnected" && !slices.Contains(flags, "handshake") && !slices.Contains(flags, "noaddr") {
			bad = append(bad, "disconnected")
		}
		if len(bad) > 0 {
			if peers == nil {
				peers = map[string]string{}
			}
			peers[f[0]] = strings.Join(bad, ",")
		}
	}
	return myID, peers
}

// parseInfo splits an INFO (or CLUSTER INFO) reply into its fields.
func parseInfo(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range in {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

func round3(v float64) float64 { return roundTo(v, 1000) }

// roundTo rounds v to 1/per (per 10: one decimal).
func roundTo(v, per float64) float64 { return math.Round(v*per) / per }
