package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"seckill-harness/internal/buildinfo"
	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
)

// SchemaVersion is the Record layout written now (Record.V).
const SchemaVersion = 1

// Kinds of record: what appended it.
const (
	KindRun      = "run"
	KindSuite    = "suite"
	KindCompare  = "compare"
	KindCapacity = "capacity"
	KindExplore  = "explore"
)

// Record is one run's entry in the history. Its JSON names are a
// contract of the history files and table (extend, never rename).
type Record struct {
	V    int    `json:"v"`
	Kind string `json:"kind"` // run, suite, compare, capacity, explore
	// Scenario is report.json's scenario name; ScenarioHash its content
	// hash (ContentHash); Suite the suite a member ran in ("" alone).
	Scenario     string    `json:"scenario"`
	ScenarioHash string    `json:"scenario_hash,omitempty"`
	Suite        string    `json:"suite,omitempty"`
	At           time.Time `json:"at"`            // when the load started (UTC)
	Run          string    `json:"run,omitempty"` // the report directory
	System       System    `json:"system"`
	Harness      Harness   `json:"harness"`
	Machine      Machine   `json:"machine"`
	// Verdict is PASS, FAIL, INCONCLUSIVE or ERROR; Exit the exit code
	// (internal/exitcode); Failed the failed checks' names.
	Verdict string   `json:"verdict"`
	Exit    int      `json:"exit"`
	Failed  []string `json:"failed,omitempty"`
	// Figures are the trended figures by name (see the package doc);
	// a figure the run did not measure is absent, never 0.
	Figures map[string]float64 `json:"figures"`
	// Samples are per-second samples of the whole load (seconds with
	// operations), oldest first: what the rank test compares.
	Samples map[string][]float64 `json:"samples,omitempty"`
}

// System is the system under test in a record: report.json's
// system_under_test, its scripts as role → SHA1.
type System struct {
	Name    string            `json:"name"`
	Kind    string            `json:"kind,omitempty"`
	Adapter string            `json:"adapter,omitempty"`
	Scripts map[string]string `json:"scripts,omitempty"`
}

// Harness is the harness build that made the record.
type Harness struct {
	Version  string `json:"version,omitempty"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// Machine is where the run ran.
type Machine struct {
	Host  string  `json:"host,omitempty"`
	Cores int     `json:"cores"`
	Load1 float64 `json:"load1"` // the load average in the load's first second
}

// Sample names: per-second figures of a record (Record.Samples).
const (
	SampleP50        = "p50_ms"
	SampleP99        = "p99_ms"
	SampleP999       = "p999_ms"
	SampleThroughput = "throughput_ops_per_s"
	SampleServiceP50 = "service_p50_ms"
	SampleServiceP99 = "service_p99_ms"
)

// FromReport is the record of a finished run's report (rep.Passed and
// its checks decide the verdict; interrupted: exit 2). kind is one of
// the Kind constants; run names the report directory.
func FromReport(rep *reports.Report, kind, run string) Record {
	r := Record{V: SchemaVersion, Kind: kind, Scenario: rep.Scenario, ScenarioHash: ContentHash(rep.ResolvedScenario),
		At: rep.StartedAt.UTC(), Run: run, System: systemOf(rep.SystemUnderTest), Harness: harnessNow(),
		Machine: machineOf(rep.Host), Figures: figuresOf(rep), Samples: samplesOf(rep.Timeseries, rep.DurationS, rep.Phases)}
	r.Exit = exitOf(rep)
	r.Verdict = exitcode.Verdict(r.Exit)
	r.Failed = rep.FailedChecks()
	return r
}

// exitOf is the exit code the report's verdict maps to.
func exitOf(rep *reports.Report) int {
	switch {
	case rep.Interrupted != nil:
		return exitcode.HarnessError
	case rep.Passed:
		return exitcode.Pass
	case rep.IsInconclusive():
		return exitcode.Inconclusive
	}
	return exitcode.CheckFailed
}

// ContentHash is the scenario's content hash: SHA-256 (first 16 hex
// digits) of its resolved form (report.json's resolved_scenario) without
// what does not change the load (hashFree: the system under test, where
// the file lies, its prose, the regression thresholds), so a change of the
// script keeps the baseline and a change of the load starts a new one. ""
// without a resolved scenario.
func ContentHash(resolved map[string]any) string {
	if len(resolved) == 0 {
		return ""
	}
	m := make(map[string]any, len(resolved))
	for k, v := range resolved {
		if !hashFree[k] {
			m[k] = v
		}
	}
	b, err := json.Marshal(m) // map keys are sorted: a stable form
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// hashFree are the resolved scenario's keys ContentHash leaves out.
var hashFree = map[string]bool{"adapter": true, "path": true, "source": true, "description": true, "proves": true, "regressions": true}

func systemOf(s *reports.SystemUnderTest) System {
	if s == nil {
		return System{Name: "reference", Kind: "reference"}
	}
	out := System{Name: s.Name, Kind: s.Kind, Adapter: s.Adapter}
	for _, sc := range s.Scripts {
		if out.Scripts == nil {
			out.Scripts = map[string]string{}
		}
		out.Scripts[sc.Role] = sc.SHA1
	}
	return out
}

func harnessNow() Harness {
	in := buildinfo.Read()
	return Harness{Version: in.Version, Revision: in.Revision, Modified: in.Modified}
}

func machineOf(h *reports.Host) Machine {
	m := Machine{}
	m.Host, _ = os.Hostname()
	if h == nil {
		m.Cores = numCPU()
		return m
	}
	if m.Cores = h.Cores; m.Cores == 0 {
		m.Cores = numCPU()
	}
	if len(h.Seconds) > 0 {
		m.Load1 = h.Seconds[0].Load1
	}
	return m
}

// figuresOf reads the trended figures off a report.
func figuresOf(rep *reports.Report) map[string]float64 {
	f := map[string]float64{}
	if rep.Totals.Ops > 0 {
		putPercentiles(f, "", rep.LatencyMs)
		putPercentiles(f, "service.", rep.ServiceTimeMs)
		f["throughput_ops_per_s"] = rep.ThroughputOpsPerS
		f["errors"] = float64(rep.Totals.Outcomes["ERROR"])
		f["unknowns"] = float64(rep.Unknown.Total)
		f["lost_acks"] = float64(rep.LostAcks)
	}
	for _, p := range rep.Phases {
		if p.Ops > 0 {
			putPercentiles(f, "phase."+p.Name+".", p.LatencyMs)
			f["phase."+p.Name+".throughput_ops_per_s"] = p.ThroughputOpsPerS
		}
	}
	for i, flt := range rep.Faults {
		name := flt.Name
		if name == "" {
			name = flt.Kind
			if n := countKind(rep.Faults, flt.Kind); n > 1 {
				name = flt.Kind + "#" + itoa(i)
			}
		}
		if ms, ok := number(flt.Evidence["recovery_ms"]); ok {
			f["fault."+name+".recovery_ms"] = ms
		}
	}
	if orders, ok := number(rep.Pipeline["orders"]); ok && rep.DurationS > 0 {
		f["orders_per_s"] = orders / rep.DurationS
	}
	if rep.Capacity != nil && rep.Capacity.MaxRateOpsPerS > 0 {
		f["capacity_ops_per_s"] = rep.Capacity.MaxRateOpsPerS
	}
	if rep.Compare != nil {
		for _, v := range rep.Compare.Variants {
			f["variant."+v.Name+".p99_ms"] = v.LatencyMs.P99
			f["variant."+v.Name+".throughput_ops_per_s"] = v.ThroughputOpsPerS
		}
	}
	return f
}

func numCPU() int { return runtime.NumCPU() }

// load1 reads the machine's one-minute load average.
func load1() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return v, err == nil
}

func putPercentiles(f map[string]float64, prefix string, p reports.Percentiles) {
	f[prefix+"p50_ms"], f[prefix+"p99_ms"], f[prefix+"p999_ms"] = p.P50, p.P99, p.P999
}

func countKind(fs []reports.Fault, kind string) int {
	n := 0
	for _, f := range fs {
		if f.Kind == kind && f.Name == "" {
			n++
		}
	}
	return n
}

// samplesOf takes the per-second samples of the whole seconds of the load
// (TS+1 <= durationS) with operations: a partial last second would add a
// throughput sample of a fraction of a second. Each phase's seconds (those
// whose middle lies in the phase) are kept again under "phase.<name>.".
func samplesOf(ts []reports.Second, durationS float64, phases []reports.Phase) map[string][]float64 {
	s := map[string][]float64{}
	add := func(prefix string, sec reports.Second) {
		s[prefix+SampleP50] = append(s[prefix+SampleP50], sec.P50Ms)
		s[prefix+SampleP99] = append(s[prefix+SampleP99], sec.P99Ms)
		s[prefix+SampleP999] = append(s[prefix+SampleP999], sec.P999Ms)
		s[prefix+SampleThroughput] = append(s[prefix+SampleThroughput], float64(sec.Completed))
	}
	for _, sec := range ts {
		if sec.Ops == 0 || float64(sec.TS+1) > durationS+0.05 {
			continue
		}
		add("", sec)
		s[SampleServiceP50] = append(s[SampleServiceP50], sec.ServiceP50Ms)
		s[SampleServiceP99] = append(s[SampleServiceP99], sec.ServiceP99Ms)
		mid := float64(sec.TS) + 0.5
		for _, p := range phases {
			if p.Name != "" && mid >= p.StartS && mid < p.EndS {
				add(PhasePrefix+p.Name+".", sec)
			}
		}
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

// number reads a JSON-ish number out of an evidence map.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func itoa(i int) string { return strconv.Itoa(i) }

// FigureUnit is the unit of a figure by its name's suffix: "_ms" ms,
// "_per_s" ops/s, anything else a count.
func FigureUnit(figure string) string {
	switch {
	case strings.HasSuffix(figure, "_ms"):
		return "ms"
	case strings.HasSuffix(figure, "_per_s"):
		return "ops/s"
	}
	return "count"
}

// sortByAt sorts records oldest first (stable: append order breaks ties).
func sortByAt(rs []Record) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].At.Before(rs[j].At) })
}
