// Package host samples the machine and the harness process beside the
// load — load average, CPU shares, steal, runnable tasks, the harness's
// run-queue wait, Go's stop-the-world pauses — and probes the harness's
// scheduler for stalls, so a report can tell a slow path under test from
// a starved load generator (report.json's "host" section).
package host

import (
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// Thresholds of the host view.
const (
	// StallThreshold is the lateness from which the scheduler probe's
	// wake-up is a stall: the harness could not run for that long.
	StallThreshold = 10 * time.Millisecond
	// probeEvery is the probe's sleep between wake-ups.
	probeEvery = 5 * time.Millisecond
	// RunqueueStarved is the run-queue wait (summed over the harness's
	// threads) in one second from which the harness is "not getting CPU".
	RunqueueStarved = 50 * time.Millisecond
	// StealStarved is the machine's steal share from which the machine
	// counts as oversubscribed whatever its load.
	StealStarved = 0.10
)

// stwMetrics are the runtime/metrics histograms of stop-the-world pauses.
var stwMetrics = []string{"/sched/pauses/total/gc:seconds", "/sched/pauses/total/other:seconds"}

// reading is one sample of the cumulative counters and the gauges.
type reading struct {
	at           time.Time
	ok           bool // the machine's /proc/stat was read
	load1        float64
	procsRunning int
	cpu          procfs.CPUStat // machine totals, seconds
	selfCPU      float64        // this process, seconds
	runq         map[int]uint64 // per thread: run-queue wait, ns (nil: unread)
	stw          []metrics.Float64Histogram
}

// stall is one probe wake-up at least StallThreshold late.
type stall struct {
	start time.Time
	late  time.Duration
}

// Sampler reads the host once a second (on the second of the load's clock
// once SetOrigin is called) and runs the stall probe, until Stop.
type Sampler struct {
	fs     procfs.FS
	self   procfs.Proc
	cores  int
	unread map[string]bool

	mu       sync.Mutex
	origin   time.Time
	readings []reading
	stalls   []stall

	stop chan struct{}
	done sync.WaitGroup
}

// Start starts sampling and probing. It never fails: what cannot be read
// on this machine is left out of the section and named in Host.Unread.
func Start() *Sampler {
	s := &Sampler{cores: runtime.NumCPU(), unread: map[string]bool{}, stop: make(chan struct{})}
	fs, err := procfs.NewDefaultFS()
	if err == nil {
		s.fs = fs
		s.self, err = fs.Self()
	}
	if err != nil {
		s.unread["/proc"] = true
	}
	if st, err := s.fs.Stat(); err == nil && len(st.CPU) > 0 {
		s.cores = len(st.CPU)
	}
	s.record(s.read())
	s.done.Add(2)
	go s.sampleLoop()
	go s.probeLoop()
	return s
}

// SetOrigin aligns the samples with the load's clock: from now on a
// sample is taken at every whole second after began (the load's t=0).
func (s *Sampler) SetOrigin(began time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.origin = began
	s.mu.Unlock()
}

// Stop takes a last sample and ends both loops; safe to call twice.
func (s *Sampler) Stop() {
	if s == nil {
		return
	}
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	s.done.Wait()
	s.record(s.read())
}

func (s *Sampler) record(r reading) {
	s.mu.Lock()
	s.readings = append(s.readings, r)
	s.mu.Unlock()
}

// next is when the next sample is due: the next whole second of the
// load's clock, or a second from now before the origin is known.
func (s *Sampler) next(now time.Time) time.Time {
	s.mu.Lock()
	o := s.origin
	s.mu.Unlock()
	if o.IsZero() || now.Before(o) {
		return now.Add(time.Second)
	}
	k := math.Floor(now.Sub(o).Seconds()) + 1
	return o.Add(time.Duration(k * float64(time.Second)))
}

func (s *Sampler) sampleLoop() {
	defer s.done.Done()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		t.Reset(time.Until(s.next(time.Now())))
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.record(s.read())
	}
}

// probeLoop sleeps probeEvery in a loop; a wake-up StallThreshold or more
// late is a stall.
func (s *Sampler) probeLoop() {
	defer s.done.Done()
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		t0 := time.Now()
		time.Sleep(probeEvery)
		if late := time.Since(t0) - probeEvery; late >= StallThreshold {
			s.mu.Lock()
			s.stalls = append(s.stalls, stall{start: t0.Add(probeEvery), late: late})
			s.mu.Unlock()
		}
	}
}

// read takes one reading; what fails to read is noted in s.unread.
func (s *Sampler) read() reading {
	r := reading{at: time.Now()}
	if la, err := s.fs.LoadAvg(); err == nil {
		r.load1 = la.Load1
	} else {
		s.note("/proc/loadavg")
	}
	if st, err := s.fs.Stat(); err == nil {
		r.ok, r.cpu, r.procsRunning = true, st.CPUTotal, int(st.ProcessesRunning)
	} else {
		s.note("/proc/stat")
	}
	if ps, err := s.self.Stat(); err == nil {
		r.selfCPU = ps.CPUTime()
	} else {
		s.note("/proc/self/stat")
	}
	r.runq = s.runqueue()
	samples := make([]metrics.Sample, len(stwMetrics))
	for i, name := range stwMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	for _, m := range samples {
		if m.Value.Kind() == metrics.KindFloat64Histogram {
			h := m.Value.Float64Histogram()
			r.stw = append(r.stw, metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets})
		}
	}
	return r
}

// runqueue reads every thread's run-queue wait (schedstat), nil when the
// kernel does not keep it.
func (s *Sampler) runqueue() map[int]uint64 {
	threads, err := s.fs.AllThreads(s.self.PID)
	if err != nil {
		s.note("/proc/self/task")
		return nil
	}
	out := make(map[int]uint64, len(threads))
	for _, t := range threads {
		ss, err := t.Schedstat()
		if err != nil {
			continue // the thread ended, or no schedstat
		}
		out[t.PID] = ss.WaitingNanoseconds
	}
	if len(out) == 0 {
		s.note("/proc/self/task/*/schedstat")
		return nil
	}
	return out
}

func (s *Sampler) note(what string) {
	s.mu.Lock()
	s.unread[what] = true
	s.mu.Unlock()
}
