package lifecycle

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"seckill-harness/compose"
	"seckill-harness/reports"
)

// MasterCPU is one master's CPU over a measured window: the delta of
// used_cpu_sys + used_cpu_user from INFO cpu, in seconds, and the share of
// one core that is over the window (1.0: one core busy the whole time).
type MasterCPU struct {
	Addr    string  `json:"addr"`
	CPUSecs float64 `json:"cpu_s"`
	Cores   float64 `json:"cores"`
}

// cpuSnapshot is every master's cumulative CPU seconds at one instant.
type cpuSnapshot struct {
	at   time.Time
	secs map[string]float64 // master address -> used_cpu_sys + used_cpu_user
}

// readMasterCPU reads INFO cpu of every master of the cluster through its
// admin (direct, unproxied) connections.
func readMasterCPU(ctx context.Context, cl compose.Cluster) (cpuSnapshot, error) {
	snap := cpuSnapshot{at: time.Now(), secs: map[string]float64{}}
	nodes, err := cl.Nodes(ctx)
	if err != nil {
		return snap, err
	}
	for _, n := range nodes {
		if n.Role != "master" {
			continue
		}
		adm, err := cl.Admin(n.Addr)
		if err != nil {
			return snap, err
		}
		info, err := adm.Info(ctx, "cpu").Result()
		if err != nil {
			return snap, fmt.Errorf("INFO cpu of %s: %w", n.Addr, err)
		}
		s, err := infoCPUSeconds(info)
		if err != nil {
			return snap, fmt.Errorf("INFO cpu of %s: %w", n.Addr, err)
		}
		snap.secs[n.Addr] = s
	}
	return snap, nil
}

// infoCPUSeconds sums used_cpu_sys and used_cpu_user of an INFO cpu reply.
func infoCPUSeconds(info string) (float64, error) {
	var sum float64
	found := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", k, err)
		}
		sum += f
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("no used_cpu_sys and used_cpu_user fields")
	}
	return sum, nil
}

// masterCPUBetween is each master's CPU from a to b, sorted by address
// (masters missing from either snapshot are left out).
func masterCPUBetween(a, b cpuSnapshot) []MasterCPU {
	wall := b.at.Sub(a.at).Seconds()
	var out []MasterCPU
	for addr, end := range b.secs {
		start, ok := a.secs[addr]
		if !ok {
			continue
		}
		m := MasterCPU{Addr: addr, CPUSecs: end - start}
		if wall > 0 {
			m.Cores = m.CPUSecs / wall
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// processCPUSeconds is this process's user + system CPU so far (the
// harness's client cost).
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// loadCPU measures the load window of one step: the masters' CPU (INFO
// cpu deltas) and this process's CPU. Use as Plan.OnLoad.
type loadCPU struct {
	cluster           compose.Cluster
	before, after     cpuSnapshot
	clientA, clientB  float64
	errBefore, errEnd error
}

func (l *loadCPU) onLoad(ctx context.Context) func() {
	l.before, l.errBefore = readMasterCPU(ctx, l.cluster)
	l.clientA = processCPUSeconds()
	return func() {
		l.clientB = processCPUSeconds()
		l.after, l.errEnd = readMasterCPU(context.WithoutCancel(ctx), l.cluster)
	}
}

// masters is each master's CPU over the window (nil when it could not be read).
func (l *loadCPU) masters() ([]MasterCPU, error) {
	if l.errBefore != nil {
		return nil, l.errBefore
	}
	if l.errEnd != nil {
		return nil, l.errEnd
	}
	return masterCPUBetween(l.before, l.after), nil
}

// clientSecs is this process's CPU over the window.
func (l *loadCPU) clientSecs() float64 { return l.clientB - l.clientA }

// CPUSpread is how a load's CPU sat on the masters: the hottest master
// and its CPU, and the highest CPU among the other masters, in percent of
// one core over the load. One master near its limit while the others idle
// is the sign to split the stock into more buckets; all masters alike is
// what buckets buy.
type CPUSpread struct {
	HotMaster       string  `json:"hot_master"`
	HotCPUPct       float64 `json:"hot_master_cpu_pct"`
	OthersMaxCPUPct float64 `json:"other_masters_cpu_max_pct"`
}

// spreadOf is the spread of masters' CPU (nil when there is none).
func spreadOf(ms []MasterCPU) *CPUSpread {
	if len(ms) == 0 {
		return nil
	}
	hot := 0
	for i, m := range ms {
		if m.Cores > ms[hot].Cores {
			hot = i
		}
	}
	s := &CPUSpread{HotMaster: ms[hot].Addr, HotCPUPct: 100 * ms[hot].Cores}
	for i, m := range ms {
		if i != hot {
			s.OthersMaxCPUPct = max(s.OthersMaxCPUPct, 100*m.Cores)
		}
	}
	return s
}

// spreadColumns are the two table columns of a spread.
const spreadColumns = "hot master cpu\tother masters cpu (max)"

// columns renders a spread as the spreadColumns cells ("-" when unknown).
func (s *CPUSpread) columns() string {
	if s == nil {
		return "-\t-"
	}
	return fmt.Sprintf("%.0f%%\t%.0f%%", s.HotCPUPct, s.OthersMaxCPUPct)
}

// mastersCPUOfServers is each master's (by its role when the load
// started) mean CPU over the load from the servers section's per-interval
// series, in address order; CPUSecs is the mean times the load's length.
func mastersCPUOfServers(s *reports.Servers, loadS float64) []MasterCPU {
	if s == nil {
		return nil
	}
	var out []MasterCPU
	for _, n := range s.Nodes {
		if n.Role != "master" {
			continue
		}
		sum, k := 0.0, 0
		for _, p := range n.Series {
			if p.CPUPct != nil {
				sum += *p.CPUPct
				k++
			}
		}
		if k == 0 {
			continue
		}
		cores := sum / float64(k) / 100
		out = append(out, MasterCPU{Addr: n.Addr, Cores: cores, CPUSecs: cores * loadS})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}
