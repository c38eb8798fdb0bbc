package reports

import (
	"fmt"
	"sort"
	"strings"
)

// Servers is report.json's "servers" section (additive): the cluster's own
// view of the run, next to the client's. Nodes holds one entry per node the
// run used (every master and replica), each with a series sampled once per
// IntervalS off the harness's admin connections (never the load's pool),
// from the start of the load to its end. Scripts, Slowlog and Latency are
// read once after the load; Pool is the client's connection pool, sampled
// on the same clock.
type Servers struct {
	IntervalS float64      `json:"interval_s"`
	Nodes     []ServerNode `json:"nodes"`
	// Scripts is INFO commandstats of the script commands (eval, evalsha,
	// fcall, script …) on the masters, summed, counting only the calls made
	// during this run (the difference between a read before the load and
	// one after it).
	Scripts []CommandStat `json:"scripts,omitempty"`
	// Pool is the load's go-redis connection pool, one entry per interval.
	Pool []PoolSecond `json:"pool,omitempty"`
	// LatencyThresholdMs is the nodes' latency-monitor-threshold during the
	// run (0: the latency monitor was off, so latency entries cannot exist).
	LatencyThresholdMs int64 `json:"latency_monitor_threshold_ms"`
	// Errors lists what could not be read (a node down at the end, a
	// command refused); the section is still as complete as the rest allows.
	Errors []string `json:"errors,omitempty"`
}

// ServerNode is one node of the run: its address, its role when the load
// started, and its per-interval series. Slowlog and Latency (masters at
// the end of the run) keep entries logged during the run.
type ServerNode struct {
	Addr string `json:"addr"`
	// Role is "master" or "replica" at the start of the load (a failover
	// shows in the series' role).
	Role string `json:"role"`
	// Master is a replica's master address at the start ("" for a master).
	Master string       `json:"master,omitempty"`
	Series []NodeSample `json:"series"`
	// Slowlog keeps the slowest 16 entries of the run (each with its first
	// 4 arguments, cut to 80 bytes); SlowlogEntries counts them all (of the
	// 128 newest the node keeps).
	Slowlog        []SlowlogEntry `json:"slowlog,omitempty"`
	SlowlogEntries int            `json:"slowlog_entries,omitempty"`
	Latency        []LatencyEvent `json:"latency,omitempty"`
}

// NodeSample is one node at one instant. A node that did not answer has
// Error set and every other field but TS zero.
type NodeSample struct {
	TS    float64 `json:"t_s"` // seconds since the load started
	Error string  `json:"error,omitempty"`
	Role  string  `json:"role,omitempty"`
	// CPUPct is the node's CPU (used_cpu_sys + used_cpu_user) since the
	// previous sample, in percent of one core; nil on the first answer after
	// a gap or a restart.
	CPUPct *float64 `json:"cpu_pct,omitempty"`
	// OpsPerS is total_commands_processed since the previous sample, per
	// second; nil like CPUPct.
	OpsPerS          *float64 `json:"ops_per_s,omitempty"`
	ConnectedClients int64    `json:"connected_clients"`
	UsedMemory       int64    `json:"used_memory"`
	MaxMemory        int64    `json:"maxmemory"` // 0: no limit
	EvictedKeys      int64    `json:"evicted_keys"`
	ReplOffset       int64    `json:"master_repl_offset"`
	// LinkStatus is a replica's master_link_status ("up"/"down").
	LinkStatus string `json:"link_status,omitempty"`
	// LagBytes is, on a replica, its master's master_repl_offset (read in
	// the same round) minus its own slave_repl_offset; nil when either is
	// unknown.
	LagBytes        *int64 `json:"lag_bytes,omitempty"`
	AOFRewrite      bool   `json:"aof_rewrite_in_progress,omitempty"`
	RDBBgsave       bool   `json:"rdb_bgsave_in_progress,omitempty"`
	LatestForkUsec  int64  `json:"latest_fork_usec"`
	ClusterState    string `json:"cluster_state,omitempty"`
	ClusterSlotsOK  int64  `json:"cluster_slots_ok,omitempty"`
	ClusterKnownNum int64  `json:"cluster_known_nodes,omitempty"`
	// The fields below are what unplanned events are detected from
	// (servers.DetectEvents); all additive.
	//
	// NodeID is the node's cluster id (CLUSTER NODES myself), RunID the
	// first 12 characters of INFO's run_id, UptimeS uptime_in_seconds: a
	// restart changes the run_id and sends the uptime back.
	NodeID  string `json:"node_id,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	UptimeS int64  `json:"uptime_s,omitempty"`
	// Master is a replica's master (as the harness addresses it).
	Master string `json:"master,omitempty"`
	// SyncFull is INFO stats sync_full (full resyncs this node served as a
	// master); SyncInProgress is a replica's master_sync_in_progress.
	SyncFull       int64 `json:"sync_full,omitempty"`
	SyncInProgress bool  `json:"master_sync_in_progress,omitempty"`
	// PeerFlags is what this node's CLUSTER NODES says is wrong with other
	// nodes, by their cluster id: "fail?", "fail" and/or "disconnected"
	// (the link-state), comma-separated; healthy peers are left out.
	PeerFlags map[string]string `json:"peer_flags,omitempty"`
}

// SlowlogEntry is one SLOWLOG GET entry logged during the run.
type SlowlogEntry struct {
	ID         int64    `json:"id"`
	AtS        float64  `json:"at_s"` // seconds since the load started (1 s resolution)
	DurationUs int64    `json:"duration_us"`
	Args       []string `json:"args"`
	Client     string   `json:"client,omitempty"`
}

// LatencyEvent is one latency-monitor event (LATENCY LATEST) of a master,
// with its LATENCY HISTORY points logged during the run.
type LatencyEvent struct {
	Event    string         `json:"event"`
	LatestMs int64          `json:"latest_ms"`
	MaxMs    int64          `json:"max_ms"` // all-time maximum the node keeps
	History  []LatencyPoint `json:"history"`
}

// LatencyPoint is one LATENCY HISTORY sample.
type LatencyPoint struct {
	AtS       float64 `json:"at_s"`
	LatencyMs int64   `json:"latency_ms"`
}

// CommandStat is INFO commandstats of one command during the run.
type CommandStat struct {
	Command      string  `json:"command"`
	Calls        int64   `json:"calls"`
	Usec         int64   `json:"usec"`
	UsecPerCall  float64 `json:"usec_per_call"`
	RejectedCall int64   `json:"rejected_calls"`
	FailedCalls  int64   `json:"failed_calls"`
}

// PoolSecond is the client's connection pool (go-redis PoolStats, summed
// over the nodes) at one instant: the counters are deltas since the
// previous sample, the connection counts are levels.
type PoolSecond struct {
	TS         float64 `json:"t_s"`
	Hits       int64   `json:"hits"`
	Misses     int64   `json:"misses"`
	Timeouts   int64   `json:"timeouts"`
	WaitCount  int64   `json:"wait_count"`
	WaitMs     float64 `json:"wait_ms"`
	TotalConns int64   `json:"total_conns"`
	IdleConns  int64   `json:"idle_conns"`
	StaleConns int64   `json:"stale_conns"`
	// Pending is the acquisitions in progress at the reading (additive).
	Pending int64 `json:"pending"`
}

// Roles is the node's role over the run: "master", or "replica→master"
// when a failover changed it (each change once, in order).
func (n ServerNode) Roles() string {
	roles := []string{n.Role}
	for _, p := range n.Series {
		if p.Role != "" && p.Role != roles[len(roles)-1] {
			roles = append(roles, p.Role)
		}
	}
	return strings.Join(roles, "→")
}

// NodeCPU is one node's CPU over the run.
type NodeCPU struct {
	Addr    string
	Role    string
	PeakPct float64
	MeanPct float64
	Samples int
}

// CPUByNode lists every node's peak and mean CPU, hottest (highest peak)
// first; nodes with no CPU sample are left out.
func (s *Servers) CPUByNode() []NodeCPU {
	if s == nil {
		return nil
	}
	var out []NodeCPU
	for _, n := range s.Nodes {
		c := NodeCPU{Addr: n.Addr, Role: n.Roles()}
		sum := 0.0
		for _, p := range n.Series {
			if p.CPUPct == nil {
				continue
			}
			c.Samples++
			sum += *p.CPUPct
			c.PeakPct = max(c.PeakPct, *p.CPUPct)
		}
		if c.Samples == 0 {
			continue
		}
		c.MeanPct = sum / float64(c.Samples)
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PeakPct > out[j].PeakPct })
	return out
}

// HottestSummary is one line naming the hottest node, its peak CPU and the
// other nodes' peaks ("" when no CPU was sampled).
func (s *Servers) HottestSummary() string {
	cpu := s.CPUByNode()
	if len(cpu) == 0 {
		return ""
	}
	h := cpu[0]
	line := fmt.Sprintf("hottest node %s (%s): peak CPU %.0f%%, mean %.0f%%", h.Addr, h.Role, h.PeakPct, h.MeanPct)
	if len(cpu) > 1 {
		line += "; others peak"
		for i, c := range cpu[1:] {
			sep := ","
			if i == 0 {
				sep = ""
			}
			line += fmt.Sprintf("%s %s %.0f%%", sep, c.Addr, c.PeakPct)
		}
	}
	return line
}
