package reports

// Host is report.json's "host" (additive): the machine's and the harness
// process's view of the run, one sample per second of the load (aligned
// with timeseries: a sample's t_s covers [t_s, t_s+1) seconds from the
// start of the load), and the harness stalls. It says whether a latency or
// throughput figure measures the path under test or a starved load
// generator (see Assertion.Inconclusive).
type Host struct {
	// Cores is the machine's online CPUs; GOMAXPROCS the harness's.
	Cores      int `json:"cores"`
	GOMAXPROCS int `json:"gomaxprocs"`
	// StallThresholdMs is the lateness from which the scheduler probe's
	// wake-up counts as a stall (see Stall).
	StallThresholdMs float64 `json:"stall_threshold_ms"`
	// StarvedRule states when a second is "starved" (HostSecond.Starved).
	StarvedRule string `json:"starved_rule"`
	// Unread names what could not be read on this machine (e.g. no
	// /proc/<pid>/task/*/schedstat): its fields are absent.
	Unread  []string     `json:"unread,omitempty"`
	Seconds []HostSecond `json:"seconds"`
	Stalls  []Stall      `json:"stalls"`
}

// HostSecond is the host's view of one second of the load. Shares are of
// the machine's capacity (cores × interval): 1 is every core busy.
type HostSecond struct {
	TS int64 `json:"t_s"`
	// IntervalS is the sampler's actual interval ending in this second
	// (longer than 1 when the sampler itself was held up).
	IntervalS float64 `json:"interval_s"`
	Load1     float64 `json:"load1"`
	// ProcsRunning is /proc/stat procs_running at the sample: tasks
	// runnable on the machine (this process's threads included).
	ProcsRunning int `json:"procs_running"`
	// HarnessCPUShare is this process's user+system CPU time over the
	// machine's capacity.
	HarnessCPUShare float64 `json:"harness_cpu_share"`
	// MachineBusyShare and MachineIdleShare (idle + iowait) split the
	// machine's CPU time; StealShare is time a hypervisor gave to another
	// guest (absent where /proc/stat has no steal column).
	MachineBusyShare float64  `json:"machine_busy_share"`
	MachineIdleShare float64  `json:"machine_idle_share"`
	StealShare       *float64 `json:"steal_share,omitempty"`
	// HarnessRunqueueWaitMs is the time this process's threads spent
	// runnable but waiting for a CPU (sum over threads of
	// /proc/self/task/*/schedstat's run-queue wait): the harness not
	// getting CPU. Absent without schedstat.
	HarnessRunqueueWaitMs *float64 `json:"harness_runqueue_wait_ms,omitempty"`
	// LateStarts and MaxLateMs: the pacer's lateness for the operations
	// due in this second (started more than totals.late_start_threshold_ms
	// after their intended time; the most late one).
	LateStarts int64   `json:"late_starts"`
	MaxLateMs  float64 `json:"max_late_ms"`
	// STWMs is the Go runtime's stop-the-world pause time in this second
	// (GC and other, runtime/metrics /sched/pauses/total/*:seconds);
	// STWMaxMs the longest pause (upper bound of its histogram bucket).
	STWMs    float64 `json:"stw_ms"`
	STWMaxMs float64 `json:"stw_max_ms"`
	// StallMs is the harness stall time (Stall) in this second.
	StallMs float64 `json:"stall_ms"`
	// Starved is true when the second meets Host.StarvedRule.
	Starved bool `json:"starved"`
}

// Stall is one interval in which the harness's scheduler could not run on
// time: its probe, a goroutine that sleeps a few milliseconds in a loop,
// woke up at least Host.StallThresholdMs late (an overloaded machine, a
// stop-the-world pause, a frozen VM). The probe does nothing else, so a
// slow path under test cannot delay it: a stall is the harness's own
// lateness. Consumers (e.g. a list of unplanned events) take these as they
// are.
type Stall struct {
	AtS        float64       `json:"at_s"` // start, seconds from the start of the load
	DurationMs float64       `json:"duration_ms"`
	Evidence   StallEvidence `json:"evidence"`
}

// StallEvidence is what the host showed around a stall: the probe's own
// lateness, the operations due in the stall that started late, and the
// host figures of the second it began in.
type StallEvidence struct {
	ProbeLateMs  float64  `json:"probe_late_ms"`
	LateStarts   int64    `json:"late_starts"` // operations due in the stall that started late
	MaxLateMs    float64  `json:"max_late_ms"`
	Load1        float64  `json:"load1"`
	ProcsRunning int      `json:"procs_running"`
	StealShare   *float64 `json:"steal_share,omitempty"`
	STWMs        float64  `json:"stw_ms"`
}

// Inconclusive is why a latency or throughput assertion that failed is
// reported inconclusive instead: the stand could not sustain the plan in
// the window it judges. Rule states the rule; the rest is the evidence.
type Inconclusive struct {
	Rule string `json:"rule"`
	// WindowS is the window judged, [start, end) seconds of the load.
	WindowS [2]float64 `json:"window_s"`
	// StarvedSeconds are the seconds of the window that met the starved
	// rule; LateStarts of Ops the pacer's late starts in the window;
	// StallMs the stall time in it.
	StarvedSeconds []int64 `json:"starved_seconds"`
	Ops            int64   `json:"ops"`
	LateStarts     int64   `json:"late_starts"`
	LateShare      float64 `json:"late_share"`
	StallMs        float64 `json:"stall_ms"`
	// RunqueueShare is the harness threads' wait for a CPU over the whole
	// window, as a share of its length (0.25: a quarter of a core's time
	// spent runnable but not running).
	RunqueueShare float64 `json:"runqueue_share"`
	// The host's worst figures over the starved seconds.
	MaxLoad1              float64 `json:"max_load1"`
	MaxProcsRunning       int     `json:"max_procs_running"`
	MaxStealShare         float64 `json:"max_steal_share"`
	HarnessRunqueueWaitMs float64 `json:"harness_runqueue_wait_ms"`
	STWMs                 float64 `json:"stw_ms"`
}
