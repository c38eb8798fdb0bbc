package explore

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"seckill-harness/checks"
	"seckill-harness/faults"
	"seckill-harness/runner"
	"seckill-harness/runner/planner"
	"seckill-harness/scenarios"
)

// Schedule is one drawn scenario: the cluster it needs, the activity, one
// open-loop load phase and its fault timeline. It is the unit the
// generator draws and the shrinker reduces; YAML renders it as a scenario
// file that 'seckill-harness run FILE' accepts, and Scenario parses that
// file back through the normal parser and validator.
type Schedule struct {
	Name string `json:"name"`
	Seed int64  `json:"seed"` // the workload's seed (users, request ids, mix)
	Path string `json:"path"` // reserve path: "reference" or a known-bad variant

	Masters     int           `json:"masters"`
	Replicas    int           `json:"replicas"`
	NodeTimeout time.Duration `json:"node_timeout"`

	Stock   int64 `json:"stock"`
	Buckets int   `json:"buckets"`
	Users   int   `json:"users"`

	Load   Load        `json:"load"`
	Faults []FaultDraw `json:"faults"`
	// Pipeline, when set, runs the asynchronous stages after ACCEPTED
	// beside the load (the scenario's pipeline: section).
	Pipeline *Pipeline `json:"pipeline,omitempty"`
}

// Pipeline is the schedule's order pipeline: the shares of MQ sends that
// fail or time out (the rest are acknowledged), the share of orders the
// order stage rejects (each one a release), its consumer lag, and how long
// the stages may drain after the load.
type Pipeline struct {
	MQError     float64       `json:"mq_error"`
	MQTimeout   float64       `json:"mq_timeout"`
	OrderReject float64       `json:"order_reject"`
	OrderDelay  time.Duration `json:"order_delay"`
	// ScanAfter is the dispatcher's scan_after: the access service sends
	// each reservation itself and the dispatcher picks up what it left
	// unsent this long (0: the dispatcher sends everything, and a drawn
	// service-crash has nothing to crash).
	ScanAfter time.Duration `json:"scan_after,omitempty"`
	Drain     time.Duration `json:"drain"`
}

// Load is the schedule's one load phase (open loop).
type Load struct {
	Duration    time.Duration `json:"duration"`
	Shape       string        `json:"shape"` // constant, linear, sine or spike
	Rate        float64       `json:"rate"`  // constant rate, linear start, sine mean, spike base
	Slope       float64       `json:"slope,omitempty"`
	Amplitude   float64       `json:"amplitude,omitempty"`
	Period      time.Duration `json:"period,omitempty"`
	Peak        float64       `json:"peak,omitempty"`
	SpikeAt     time.Duration `json:"spike_at,omitempty"`
	RampUp      time.Duration `json:"ramp_up,omitempty"`
	Hold        time.Duration `json:"hold,omitempty"`
	RampDown    time.Duration `json:"ramp_down,omitempty"`
	Concurrency int           `json:"concurrency"`
	Timeout     time.Duration `json:"timeout"`
	Retries     int           `json:"retries"`
	Mix         runner.Mix    `json:"mix"`
}

// FaultDraw is one fault of the timeline: a registered kind, when it
// starts (At, from the start of the load), how long it lasts (For > 0),
// its target ("" = the kind's default) and its other parameters.
type FaultDraw struct {
	Kind   string            `json:"kind"`
	At     time.Duration     `json:"at"`
	For    time.Duration     `json:"for"`
	Target string            `json:"target,omitempty"`
	Params map[string]string `json:"params,omitempty"`
}

// End is when the fault is healed, from the start of the load.
func (f FaultDraw) End() time.Duration { return f.At + f.For }

// Text is the fault as a --fault value.
func (f FaultDraw) Text() string {
	return scenarios.FaultSpec{Kind: f.Kind, At: f.At, For: f.For, Target: f.Target, Params: f.Params}.Text()
}

// Kinds lists the schedule's fault kinds, sorted, each once.
func (s Schedule) Kinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range s.Faults {
		if !seen[f.Kind] {
			seen[f.Kind] = true
			out = append(out, f.Kind)
		}
	}
	sort.Strings(out)
	return out
}

// Pairs lists the unordered pairs of distinct kinds in the schedule
// ("a+b", a < b), sorted.
func (s Schedule) Pairs() []string {
	k := s.Kinds()
	var out []string
	for i := 0; i < len(k); i++ {
		for j := i + 1; j < len(k); j++ {
			out = append(out, k[i]+"+"+k[j])
		}
	}
	return out
}

// Demand is the operations the load offers (its mean rate × duration).
func (s Schedule) Demand() float64 {
	l := s.Load
	rate := l.Rate
	switch l.Shape {
	case "linear":
		rate += l.Slope * l.Duration.Seconds() / 2
	case "spike":
		rate += (l.Peak - l.Rate) * (l.Hold + (l.RampUp+l.RampDown)/2).Seconds() / l.Duration.Seconds()
	}
	return rate * l.Duration.Seconds()
}

// LoadShape is the schedule's load class for the coverage: the arrival
// curve, the rate band, whether the demand exceeds the stock (the load
// sells out) and whether the mix has duplicates (replays, same users,
// foreign request ids) or releases.
func (s Schedule) LoadShape() string {
	band := "low"
	switch {
	case s.Load.Rate >= 600:
		band = "high"
	case s.Load.Rate >= 250:
		band = "mid"
	}
	stock := "ample"
	if s.Demand() >= float64(s.Stock) {
		stock = "sells-out"
	}
	m := s.Load.Mix
	mix := "fresh"
	switch {
	case m.Replay+m.SameUser+m.ForeignRequest > 0 && m.Release > 0:
		mix = "dup+release"
	case m.Replay+m.SameUser+m.ForeignRequest > 0:
		mix = "dup"
	case m.Release > 0:
		mix = "release"
	}
	parts := []string{s.Load.Shape, band, stock, mix}
	if s.Pipeline != nil {
		parts = append(parts, "pipeline")
	}
	return strings.Join(parts, "/")
}

// Size is how big a schedule is, for the shrinker's before/after.
type Size struct {
	Faults        int     `json:"faults"`
	FaultSeconds  float64 `json:"fault_seconds"` // the fault windows added up
	LoadSeconds   float64 `json:"load_seconds"`
	Rate          float64 `json:"rate"`
	Users         int     `json:"users"`
	Stock         int64   `json:"stock"`
	Buckets       int     `json:"buckets"`
	Concurrency   int     `json:"concurrency"`
	PlannedOps    float64 `json:"planned_ops"`
	MixShareTotal float64 `json:"mix_share_total"`
}

// Size measures the schedule.
func (s Schedule) Size() Size {
	z := Size{Faults: len(s.Faults), LoadSeconds: s.Load.Duration.Seconds(), Rate: s.Load.Rate, Users: s.Users, Stock: s.Stock, Buckets: s.Buckets,
		Concurrency: s.Load.Concurrency, PlannedOps: s.Demand()}
	for _, f := range s.Faults {
		z.FaultSeconds += f.For.Seconds()
	}
	m := s.Load.Mix
	z.MixShareTotal = m.Replay + m.SameUser + m.ForeignRequest + m.Release
	return z
}

func (z Size) String() string {
	return fmt.Sprintf("%d fault(s) over %.1fs, %.1fs of load at %.0f ops/s (%.0f ops), %d users, stock %d in %d bucket(s), %d workers, mix %.2f",
		z.Faults, z.FaultSeconds, z.LoadSeconds, z.Rate, z.PlannedOps, z.Users, z.Stock, z.Buckets, z.Concurrency, z.MixShareTotal)
}

// losesAcks reports whether f loses acknowledged writes by design of
// Redis's asynchronous replication (a killed, paused or taken-over
// master): with one in the schedule, I6 is reported but not required, as
// the built-in failover-kill scenario does.
func losesAcks(f FaultDraw) bool {
	switch f.Kind {
	case "slot-down":
		return true
	case "failover":
		switch f.Params["mode"] {
		case "kill", "pause", "takeover":
			return true
		}
	}
	return false
}

// requiredInvariants is the assertions' invariants: list, nil for "all".
func (s Schedule) requiredInvariants() []string {
	loses := false
	for _, f := range s.Faults {
		loses = loses || losesAcks(f)
	}
	if !loses {
		return nil
	}
	var out []string
	for _, id := range checks.InvariantIDs() {
		if inv, _ := checks.LookupInvariant(id); (inv.Pipeline && s.Pipeline == nil) || id == "I6" {
			continue
		}
		out = append(out, id)
	}
	return out
}

// The scenario file as YAML: field names are the scenario schema's.
type yamlDoc struct {
	Name        string         `yaml:"name"`
	Description string         `yaml:"description,omitempty"`
	Seed        int64          `yaml:"seed"`
	Path        string         `yaml:"path"`
	Topology    yamlTopology   `yaml:"topology"`
	Activity    yamlActivity   `yaml:"activity"`
	Phases      []yamlPhase    `yaml:"phases"`
	Faults      []yamlFault    `yaml:"faults,omitempty"`
	Pipeline    *yamlPipeline  `yaml:"pipeline,omitempty"`
	Assertions  yamlAssertions `yaml:"assertions"`
}

type yamlPipeline struct {
	MQ         map[string]float64 `yaml:"mq"`
	Order      map[string]any     `yaml:"order"`
	Dispatcher map[string]string  `yaml:"dispatcher,omitempty"`
	Drain      string             `yaml:"drain"`
}

type yamlTopology struct {
	Masters     int    `yaml:"masters"`
	Replicas    int    `yaml:"replicas"`
	NodeTimeout string `yaml:"node_timeout"`
}

type yamlActivity struct {
	Stock   int64 `yaml:"stock"`
	Buckets int   `yaml:"buckets"`
	Users   int   `yaml:"users"`
}

type yamlPhase struct {
	Name        string             `yaml:"name"`
	Duration    string             `yaml:"duration"`
	Mode        string             `yaml:"mode"`
	Shape       string             `yaml:"shape"`
	Rate        float64            `yaml:"rate"`
	Slope       float64            `yaml:"slope,omitempty"`
	Amplitude   float64            `yaml:"amplitude,omitempty"`
	Period      string             `yaml:"period,omitempty"`
	Peak        float64            `yaml:"peak,omitempty"`
	SpikeAt     string             `yaml:"spike_at,omitempty"`
	RampUp      string             `yaml:"ramp_up,omitempty"`
	Hold        string             `yaml:"hold,omitempty"`
	RampDown    string             `yaml:"ramp_down,omitempty"`
	Concurrency int                `yaml:"concurrency"`
	Timeout     string             `yaml:"timeout"`
	Retries     int                `yaml:"retries"`
	Mix         map[string]float64 `yaml:"mix"`
}

type yamlFault struct {
	Kind   string            `yaml:"kind"`
	At     string            `yaml:"at"`
	For    string            `yaml:"for"`
	Target string            `yaml:"target,omitempty"`
	Params map[string]string `yaml:"params,omitempty"`
}

type yamlAssertions struct {
	Invariants any `yaml:"invariants"`
}

func durText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// YAML renders the schedule as a scenario file; description, when not
// empty, says where it came from.
func (s Schedule) YAML(description string) ([]byte, error) {
	l := s.Load
	doc := yamlDoc{Name: s.Name, Description: description, Seed: s.Seed, Path: s.Path,
		Topology: yamlTopology{Masters: s.Masters, Replicas: s.Replicas, NodeTimeout: s.NodeTimeout.String()},
		Activity: yamlActivity{Stock: s.Stock, Buckets: s.Buckets, Users: s.Users},
		Phases: []yamlPhase{{Name: "load", Duration: l.Duration.String(), Mode: string(runner.ModeOpen), Shape: l.Shape, Rate: l.Rate,
			Slope: l.Slope, Amplitude: l.Amplitude, Period: durText(l.Period), Peak: l.Peak, SpikeAt: durText(l.SpikeAt),
			RampUp: durText(l.RampUp), Hold: durText(l.Hold), RampDown: durText(l.RampDown),
			Concurrency: l.Concurrency, Timeout: l.Timeout.String(), Retries: l.Retries,
			Mix: map[string]float64{"replay": l.Mix.Replay, "same_user": l.Mix.SameUser, "foreign_request": l.Mix.ForeignRequest, "release": l.Mix.Release}}},
		Assertions: yamlAssertions{Invariants: "all"},
	}
	if p := s.Pipeline; p != nil {
		doc.Pipeline = &yamlPipeline{MQ: map[string]float64{"error": p.MQError, "timeout": p.MQTimeout},
			Order: map[string]any{"reject": p.OrderReject, "delay": p.OrderDelay.String()}, Drain: p.Drain.String()}
		if p.ScanAfter > 0 {
			doc.Pipeline.Dispatcher = map[string]string{"scan_after": p.ScanAfter.String()}
		}
	}
	if ids := s.requiredInvariants(); ids != nil {
		doc.Assertions.Invariants = ids
	}
	for _, f := range s.Faults {
		doc.Faults = append(doc.Faults, yamlFault{Kind: f.Kind, At: f.At.String(), For: f.For.String(), Target: f.Target, Params: f.Params})
	}
	return yaml.Marshal(doc)
}

// Scenario renders the schedule and reads it back through the scenario
// parser and validator, exactly as 'seckill-harness run FILE' would;
// source names it in errors. An error means the schedule is not a valid
// scenario.
func (s Schedule) Scenario(source string) (*scenarios.Scenario, []byte, error) {
	data, err := s.YAML("")
	if err != nil {
		return nil, nil, err
	}
	sc, err := scenarios.Parse(source, data)
	if err != nil {
		return nil, data, err
	}
	if err := sc.ValidateFor(planner.Paths()); err != nil {
		return nil, data, err
	}
	if _, err := sc.Plan(); err != nil {
		return nil, data, err
	}
	return sc, data, nil
}

// clone copies the schedule deeply (faults and their parameters).
func (s Schedule) clone() Schedule {
	c := s
	if s.Pipeline != nil {
		p := *s.Pipeline
		c.Pipeline = &p
	}
	c.Faults = make([]FaultDraw, len(s.Faults))
	for i, f := range s.Faults {
		f.Params = copyParams(f.Params)
		c.Faults[i] = f
	}
	return c
}

func copyParams(p map[string]string) map[string]string {
	if p == nil {
		return nil
	}
	out := make(map[string]string, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// planned is the fault as the registry plans it (for Available).
func (f FaultDraw) planned() (*faults.Planned, error) {
	params := copyParams(f.Params)
	if params == nil {
		params = map[string]string{}
	}
	params["at"], params["for"] = f.At.String(), f.For.String()
	if f.Target != "" {
		params["target"] = f.Target
	}
	return faults.Plan(f.Kind, params, f.Text())
}
