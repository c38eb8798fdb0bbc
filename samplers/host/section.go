package host

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"sort"
	"time"

	"seckill-harness/reports"
)

// LateStart is one operation the pacer started late: when it was due and
// by how much it missed (both on the load's clock).
type LateStart struct {
	Intended, Late time.Duration
}

// StarvedRule is the rule HostSecond.Starved applies, as report.json
// states it.
var StarvedRule = fmt.Sprintf("a second is starved when the machine was oversubscribed (procs_running > cores, or load1 > cores, or steal >= %g%%) "+
	"and the harness was not getting CPU (its threads waited >= %s for a CPU, or a harness stall: the scheduler probe woke >= %s late)",
	StealStarved*100, RunqueueStarved, StallThreshold)

// acc accumulates one second's deltas and gauges.
type acc struct {
	interval, selfCPU, busy, idle, steal, total float64
	runqNs                                      float64
	runqRead                                    bool
	load1                                       float64
	procs                                       int
	stwNs, stwMaxNs                             float64
}

// Section ends the sampler's view of a load that began at began and lasted
// elapsed: one HostSecond per second (aligned with report.json's
// timeseries), the stalls, and the pacer's late starts (late) per second.
func (s *Sampler) Section(began time.Time, elapsed time.Duration, late []LateStart) *reports.Host {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	readings, rawStalls := s.readings, s.stalls
	unread := make([]string, 0, len(s.unread))
	for u := range s.unread {
		unread = append(unread, u)
	}
	s.mu.Unlock()
	sort.Strings(unread)
	h := &reports.Host{Cores: s.cores, GOMAXPROCS: runtime.GOMAXPROCS(0), StallThresholdMs: ms(StallThreshold),
		StarvedRule: StarvedRule, Unread: unread, Seconds: []reports.HostSecond{}, Stalls: []reports.Stall{}}
	n := int(math.Ceil(elapsed.Seconds()))
	accs := make([]*acc, n)
	for i := 1; i < len(readings); i++ {
		prev, cur := readings[i-1], readings[i]
		mid := prev.at.Add(cur.at.Sub(prev.at) / 2).Sub(began)
		ts := int(math.Floor(mid.Seconds()))
		if ts < 0 || ts >= n {
			continue
		}
		if accs[ts] == nil {
			accs[ts] = &acc{}
		}
		accs[ts].add(prev, cur)
	}
	late = append([]LateStart(nil), late...)
	sort.Slice(late, func(i, j int) bool { return late[i].Intended < late[j].Intended })
	h.Stalls = stallsOf(rawStalls, began, elapsed, late)
	for ts, a := range accs {
		sec := reports.HostSecond{TS: int64(ts)} // no reading ended in it
		if a != nil {
			sec = a.second(int64(ts), s.cores)
		}
		h.Seconds = append(h.Seconds, sec)
	}
	fillLateness(h, late)
	for i := range h.Stalls {
		fillStallEvidence(h, &h.Stalls[i])
	}
	for i := range h.Seconds {
		h.Seconds[i].Starved = Starved(h.Seconds[i], h.Cores)
	}
	return h
}

// Starved applies StarvedRule to one second.
func Starved(sec reports.HostSecond, cores int) bool {
	over := sec.ProcsRunning > cores || sec.Load1 > float64(cores) || (sec.StealShare != nil && *sec.StealShare >= StealStarved)
	noCPU := sec.StallMs > 0 || (sec.HarnessRunqueueWaitMs != nil && *sec.HarnessRunqueueWaitMs >= ms(RunqueueStarved))
	return over && noCPU
}

func (a *acc) add(prev, cur reading) {
	a.interval += cur.at.Sub(prev.at).Seconds()
	a.selfCPU += max(0, cur.selfCPU-prev.selfCPU)
	if prev.ok && cur.ok {
		p, c := prev.cpu, cur.cpu
		busy := (c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ) - (p.User + p.Nice + p.System + p.IRQ + p.SoftIRQ)
		idle := (c.Idle + c.Iowait) - (p.Idle + p.Iowait)
		steal := c.Steal - p.Steal
		a.busy, a.idle, a.steal = a.busy+max(0, busy), a.idle+max(0, idle), a.steal+max(0, steal)
		a.total += max(0, busy) + max(0, idle) + max(0, steal)
	}
	if prev.runq != nil && cur.runq != nil {
		a.runqRead = true
		for tid, w := range cur.runq {
			if pw, ok := prev.runq[tid]; ok && w >= pw {
				a.runqNs += float64(w - pw)
			} else if !ok {
				a.runqNs += float64(w) // a thread started in the interval
			}
		}
	}
	a.load1, a.procs = cur.load1, max(a.procs, cur.procsRunning)
	for i := range min(len(prev.stw), len(cur.stw)) {
		total, longest := pauses(prev.stw[i], cur.stw[i])
		a.stwNs += total
		a.stwMaxNs = max(a.stwMaxNs, longest)
	}
}

// pauses is the pause time (bucket midpoints) and the longest pause (its
// bucket's upper bound) between two readings of a pause histogram, in ns.
func pauses(prev, cur metrics.Float64Histogram) (total, longest float64) {
	if len(prev.Counts) != len(cur.Counts) {
		return 0, 0
	}
	for i, c := range cur.Counts {
		d := c - prev.Counts[i]
		if d == 0 {
			continue
		}
		lo, hi := cur.Buckets[i], cur.Buckets[i+1]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		if math.IsInf(hi, 1) {
			hi = lo
		}
		total += float64(d) * (lo + hi) / 2 * 1e9
		longest = max(longest, hi*1e9)
	}
	return total, longest
}

func (a *acc) second(ts int64, cores int) reports.HostSecond {
	sec := reports.HostSecond{TS: ts, IntervalS: round(a.interval, 3), Load1: a.load1, ProcsRunning: a.procs,
		STWMs: round(a.stwNs/1e6, 3), STWMaxMs: round(a.stwMaxNs/1e6, 3)}
	if a.interval > 0 && cores > 0 {
		sec.HarnessCPUShare = round(a.selfCPU/(a.interval*float64(cores)), 4)
	}
	if a.total > 0 {
		sec.MachineBusyShare, sec.MachineIdleShare = round(a.busy/a.total, 4), round(a.idle/a.total, 4)
		st := round(a.steal/a.total, 4)
		sec.StealShare = &st
	}
	if a.runqRead {
		w := round(a.runqNs/1e6, 3)
		sec.HarnessRunqueueWaitMs = &w
	}
	return sec
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
