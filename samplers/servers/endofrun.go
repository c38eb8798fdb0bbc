package servers

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/reports"
)

// DefaultLatencyThresholdMs is the latency-monitor-threshold the sampler
// sets on a cluster the harness owns whose latency monitor is off (Redis's
// default): events of at least this many milliseconds (a fork, a slow
// script, an AOF fsync) are then logged during the run. A cluster the
// harness does not own keeps its setting.
const DefaultLatencyThresholdMs = 5

// slowlogMax is how many slow-log entries are read per master (the newest).
const slowlogMax = 128

// endCallTimeout bounds each end-of-run read of one node.
const endCallTimeout = 3 * time.Second

// readCommandStats reads every master's INFO commandstats (address →
// command → stat) and the latency-monitor threshold in force, turning the
// monitor on (DefaultLatencyThresholdMs) on an owned cluster that has it
// off.
func (s *Sampler) readCommandStats(ctx context.Context) (map[string]map[string]reports.CommandStat, int64) {
	topo, err := s.c.Nodes(ctx)
	if err != nil {
		s.noteErr("commandstats: topology: " + err.Error())
		return nil, 0
	}
	out := map[string]map[string]reports.CommandStat{}
	var threshold int64
	for _, n := range topo {
		cl, err := s.c.Admin(n.Addr)
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, endCallTimeout)
		t := latencyThreshold(cctx, cl, s.c.Owned())
		threshold = max(threshold, t)
		if n.Role == "master" {
			if info, err := cl.Info(cctx, "commandstats").Result(); err == nil {
				out[n.Addr] = parseCommandStats(info)
			} else {
				s.noteErr(fmt.Sprintf("%s: commandstats: %v", n.Addr, err))
			}
		}
		cancel()
	}
	return out, threshold
}

// latencyThreshold returns the node's latency-monitor-threshold, first
// setting DefaultLatencyThresholdMs when it is 0 and the cluster is owned.
func latencyThreshold(ctx context.Context, cl *redis.Client, owned bool) int64 {
	v, err := cl.ConfigGet(ctx, "latency-monitor-threshold").Result()
	if err != nil {
		return 0
	}
	t, _ := strconv.ParseInt(v["latency-monitor-threshold"], 10, 64)
	if t == 0 && owned {
		if cl.ConfigSet(ctx, "latency-monitor-threshold", strconv.Itoa(DefaultLatencyThresholdMs)).Err() == nil {
			return DefaultLatencyThresholdMs
		}
	}
	return t
}

// isScriptCommand reports whether an INFO commandstats name is one of the
// script commands (EVAL*, FCALL*, SCRIPT *, FUNCTION *).
func isScriptCommand(name string) bool {
	for _, p := range []string{"eval", "fcall", "script", "function"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// parseCommandStats parses INFO commandstats
// ("cmdstat_evalsha:calls=3,usec=40,usec_per_call=13.33,rejected_calls=0,failed_calls=0")
// keeping the script commands.
func parseCommandStats(info string) map[string]reports.CommandStat {
	out := map[string]reports.CommandStat{}
	for k, v := range parseInfo(info) {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok || !isScriptCommand(name) {
			continue
		}
		st := reports.CommandStat{Command: name}
		for _, kv := range strings.Split(v, ",") {
			f, val, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(val, 10, 64)
			switch f {
			case "calls":
				st.Calls = n
			case "usec":
				st.Usec = n
			case "rejected_calls":
				st.RejectedCall = n
			case "failed_calls":
				st.FailedCalls = n
			}
		}
		out[name] = st
	}
	return out
}

// scriptDelta sums, over the masters, each script command's counts after
// minus before (a node whose counters went back, restarted, counts from
// zero), keeping the commands called during the run.
func scriptDelta(before, after map[string]map[string]reports.CommandStat) []reports.CommandStat {
	sum := map[string]*reports.CommandStat{}
	for addr, cmds := range after {
		for name, a := range cmds {
			b := before[addr][name]
			if a.Calls < b.Calls {
				b = reports.CommandStat{}
			}
			t, ok := sum[name]
			if !ok {
				t = &reports.CommandStat{Command: name}
				sum[name] = t
			}
			t.Calls += a.Calls - b.Calls
			t.Usec += a.Usec - b.Usec
			t.RejectedCall += a.RejectedCall - b.RejectedCall
			t.FailedCalls += a.FailedCalls - b.FailedCalls
		}
	}
	var out []reports.CommandStat
	for _, t := range sum {
		if t.Calls == 0 && t.RejectedCall == 0 && t.FailedCalls == 0 {
			continue
		}
		if t.Calls > 0 {
			t.UsecPerCall = float64(int64(float64(t.Usec)/float64(t.Calls)*100+0.5)) / 100
		}
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Calls > out[j].Calls })
	return out
}

// readSlowlog returns the slowest of the node's slow-log entries logged at
// or after began (the slow log has 1 s resolution: an entry of began's
// second counts), and how many there were.
func readSlowlog(ctx context.Context, c compose.Cluster, addr string, began time.Time) ([]reports.SlowlogEntry, int, error) {
	cl, err := c.Admin(addr)
	if err != nil {
		return nil, 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, endCallTimeout)
	defer cancel()
	logs, err := cl.SlowLogGet(cctx, slowlogMax).Result()
	if err != nil {
		return nil, 0, err
	}
	var out []reports.SlowlogEntry
	for _, e := range logs {
		if e.Time.Unix() < began.Unix() {
			continue
		}
		out = append(out, reports.SlowlogEntry{ID: e.ID, AtS: float64(e.Time.Unix() - began.Unix()),
			DurationUs: e.Duration.Microseconds(), Args: shortArgs(e.Args), Client: e.ClientAddr})
	}
	total := len(out)
	// The slowest slowlogKept, in log order: a loaded run logs hundreds of
	// reserve calls, each with a dozen keys.
	sort.SliceStable(out, func(i, j int) bool { return out[i].DurationUs > out[j].DurationUs })
	out = out[:min(len(out), slowlogKept)]
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, total, nil
}

// slowlogKept is how many slow-log entries per master the report keeps
// (the slowest); ServerNode.SlowlogEntries counts them all.
const slowlogKept = 16

// shortArgs keeps an entry's first arguments, each cut to 80 bytes, and
// says how many were left out.
func shortArgs(args []string) []string {
	const keep, width = 4, 80
	var out []string
	for i, a := range args {
		if i == keep {
			out = append(out, fmt.Sprintf("… (+%d args)", len(args)-keep))
			break
		}
		if len(a) > width {
			a = a[:width] + "…"
		}
		out = append(out, a)
	}
	return out
}

// readLatency returns the node's latency-monitor events with LATENCY
// HISTORY points logged at or after began (1 s resolution, like the slow log).
func readLatency(ctx context.Context, c compose.Cluster, addr string, began time.Time) ([]reports.LatencyEvent, error) {
	cl, err := c.Admin(addr)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, endCallTimeout)
	defer cancel()
	latest, err := cl.Latency(cctx).Result()
	if err != nil {
		return nil, err
	}
	var out []reports.LatencyEvent
	for _, l := range latest {
		if l.Time.Unix() < began.Unix() {
			continue // nothing of this event during the run
		}
		ev := reports.LatencyEvent{Event: l.Name, LatestMs: l.Latest.Milliseconds(), MaxMs: l.Max.Milliseconds()}
		hist, err := cl.Do(cctx, "LATENCY", "HISTORY", l.Name).Slice()
		if err != nil {
			return out, err
		}
		for _, h := range hist {
			pt, ok := h.([]any)
			if !ok || len(pt) != 2 {
				continue
			}
			ts, _ := pt[0].(int64)
			ms, _ := pt[1].(int64)
			if ts < began.Unix() {
				continue
			}
			ev.History = append(ev.History, reports.LatencyPoint{AtS: float64(ts - began.Unix()), LatencyMs: ms})
		}
		out = append(out, ev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Event < out[j].Event })
	return out, nil
}
