package reports

import (
	"fmt"
	"strings"
)

// NodeSummary is one node's run in one row: CPU, the most ops/s, memory,
// the most replication lag, slow-log entries and unanswered samples.
type NodeSummary struct {
	Addr, Role       string
	PeakCPU, MeanCPU float64
	PeakOpsPerS      float64
	PeakMemoryMiB    float64
	MaxLagBytes      *int64 // replicas only
	Slowlog          int
	Unanswered       int
	Evicted          int64 // evicted_keys at the last answer
}

// Summaries is one NodeSummary per node, in the section's node order.
func (s *Servers) Summaries() []NodeSummary {
	if s == nil {
		return nil
	}
	cpu := map[string]NodeCPU{}
	for _, c := range s.CPUByNode() {
		cpu[c.Addr] = c
	}
	var out []NodeSummary
	for _, n := range s.Nodes {
		ns := NodeSummary{Addr: n.Addr, Role: n.Roles(), PeakCPU: cpu[n.Addr].PeakPct, MeanCPU: cpu[n.Addr].MeanPct, Slowlog: max(n.SlowlogEntries, len(n.Slowlog))}
		for _, p := range n.Series {
			if p.Error != "" {
				ns.Unanswered++
				continue
			}
			if p.OpsPerS != nil {
				ns.PeakOpsPerS = max(ns.PeakOpsPerS, *p.OpsPerS)
			}
			ns.PeakMemoryMiB = max(ns.PeakMemoryMiB, float64(p.UsedMemory)/(1<<20))
			if p.LagBytes != nil && (ns.MaxLagBytes == nil || *p.LagBytes > *ns.MaxLagBytes) {
				v := *p.LagBytes
				ns.MaxLagBytes = &v
			}
			ns.Evicted = p.EvictedKeys
		}
		out = append(out, ns)
	}
	return out
}

// PoolTotals sums the client pool's per-interval counters over the run.
func (s *Servers) PoolTotals() (p PoolSecond) {
	if s == nil {
		return p
	}
	for _, x := range s.Pool {
		p.Hits += x.Hits
		p.Misses += x.Misses
		p.Timeouts += x.Timeouts
		p.WaitCount += x.WaitCount
		p.WaitMs += x.WaitMs
		p.StaleConns += x.StaleConns
		p.TotalConns = max(p.TotalConns, x.TotalConns)
	}
	return p
}

func lagText(v *int64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// servers writes the servers section: the hottest node, a row per node,
// the scripts' cost and the client pool.
func (t *textWriter) servers(r *Report) {
	s := r.Servers
	if s == nil || len(s.Nodes) == 0 {
		return
	}
	t.ew.printf("\nservers: %s\n", orDash(s.HottestSummary()))
	tw := t.table()
	fmt.Fprintf(tw, "NODE\tROLE\t%8s\t%8s\t%9s\t%8s\t%10s\t%7s\t%10s\n", "PEAK CPU", "MEAN CPU", "PEAK OP/S", "MEM MiB", "MAX LAG B", "SLOWLOG", "UNANSWERED")
	for _, n := range s.Summaries() {
		fmt.Fprintf(tw, "%s\t%s\t%7.1f%%\t%7.1f%%\t%9.0f\t%8.1f\t%10s\t%7d\t%10d\n", n.Addr, n.Role, n.PeakCPU, n.MeanCPU,
			n.PeakOpsPerS, n.PeakMemoryMiB, lagText(n.MaxLagBytes), n.Slowlog, n.Unanswered)
	}
	t.end()
	for _, c := range s.Scripts {
		t.ew.printf("script %s: %d calls, %.2f µs per call (server side), %d failed, %d rejected\n", c.Command, c.Calls, c.UsecPerCall, c.FailedCalls, c.RejectedCall)
	}
	if len(s.Pool) > 0 {
		p := s.PoolTotals()
		t.ew.printf("client pool: %d conns at most, %d waits (%.1f ms waited), %d pool timeouts, %d stale conns removed\n", p.TotalConns, p.WaitCount, p.WaitMs, p.Timeouts, p.StaleConns)
	}
}

// markdownServers writes the servers section of summary.md.
func markdownServers(p func(string, ...any), r *Report) {
	s := r.Servers
	if s == nil || len(s.Nodes) == 0 {
		return
	}
	if h := s.HottestSummary(); h != "" {
		p("Servers: %s.\n\n", mdText(h))
	}
	p("| node | role | peak CPU %% | mean CPU %% | peak ops/s | memory MiB | max lag bytes | slowlog |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range s.Summaries() {
		p("| %s | %s | %.1f | %.1f | %.0f | %.1f | %s | %d |\n", mdCell(n.Addr), n.Role, n.PeakCPU, n.MeanCPU, n.PeakOpsPerS, n.PeakMemoryMiB, lagText(n.MaxLagBytes), n.Slowlog)
	}
	p("\n")
	if len(s.Scripts) > 0 {
		var parts []string
		for _, c := range s.Scripts {
			parts = append(parts, fmt.Sprintf("`%s` %d calls, %.2f µs/call, %d failed", mdCode(c.Command), c.Calls, c.UsecPerCall, c.FailedCalls))
		}
		p("Scripts (server side, this run): %s.\n\n", strings.Join(parts, "; "))
	}
}
