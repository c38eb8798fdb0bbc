package compare

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"seckill-harness/compose"
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
	nodes, err := cl.Nodes(ctx)
	if err != nil {
		return cpuSnapshot{at: time.Now(), secs: map[string]float64{}}, err
	}
	var masters []string
	for _, n := range nodes {
		if n.Role == "master" {
			masters = append(masters, n.Addr)
		}
	}
	return readCPU(ctx, cl, masters)
}

// readCPU reads INFO cpu of the nodes at addrs.
func readCPU(ctx context.Context, cl compose.Cluster, addrs []string) (cpuSnapshot, error) {
	snap := cpuSnapshot{at: time.Now(), secs: map[string]float64{}}
	for _, addr := range addrs {
		adm, err := cl.Admin(addr)
		if err != nil {
			return snap, err
		}
		info, err := adm.Info(ctx, "cpu").Result()
		if err != nil {
			return snap, fmt.Errorf("INFO cpu of %s: %w", addr, err)
		}
		s, err := infoCPUSeconds(info)
		if err != nil {
			return snap, fmt.Errorf("INFO cpu of %s: %w", addr, err)
		}
		snap.secs[addr] = s
	}
	return snap, nil
}

// addrs are the nodes of the snapshot.
func (s cpuSnapshot) addrs() []string {
	out := make([]string, 0, len(s.secs))
	for a := range s.secs {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
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

// loadCPU measures the load window of one run: the masters' CPU (INFO
// cpu deltas, the one source of master CPU in a compare) and this
// process's CPU. Use as Plan.OnLoad.
type loadCPU struct {
	before, after     cpuSnapshot
	clientA, clientB  float64
	errBefore, errEnd error
}

// onLoad reads the masters' CPU when the load starts and, through the
// function it returns, the same nodes' when it ends (a node promoted or
// demoted meanwhile is still the node that was a master at the start).
func (l *loadCPU) onLoad(ctx context.Context, cl compose.Cluster) func() {
	l.before, l.errBefore = readMasterCPU(ctx, cl)
	l.clientA = processCPUSeconds()
	return func() {
		l.clientB = processCPUSeconds()
		l.after, l.errEnd = readCPU(context.WithoutCancel(ctx), cl, l.before.addrs())
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
