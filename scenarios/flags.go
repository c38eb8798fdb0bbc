package scenarios

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"seckill-harness/faults"
	"seckill-harness/runner"
	"seckill-harness/sut/pipeline"
)

// FlagSource is the Source of a scenario made from command-line flags.
const FlagSource = "the command line"

// Flags is an ad-hoc load as run's flags describe it: one phase, an
// activity and a topology. Given maps the name of every flag given
// explicitly to its value as typed; errors about a field a flag set name
// the flag ("--rate nan: phases[0].rate: …"), and a given flag counts as
// written (a shape parameter the shape does not use is refused, as in a file).
type Flags struct {
	Name     string
	Load     runner.Config // the phase (Seed, Users and TTL included)
	Stock    int64
	Buckets  int
	Topology Topology
	// Pipeline runs the order pipeline beside the load (nil: off) for
	// Drain after it, as a file's pipeline: section.
	Pipeline *pipeline.Config
	Drain    time.Duration
	Given    map[string]string
}

// flagFields maps run's load flags to the scenario fields they set.
var flagFields = map[string]string{
	"rate": "phases[0].rate", "duration": "phases[0].duration", "mode": "phases[0].mode",
	"concurrency": "phases[0].concurrency", "shape": "phases[0].shape", "max-in-flight": "phases[0].max_in_flight",
	"max-ops": "phases[0].max_ops", "timeout": "phases[0].timeout", "retries": "phases[0].retries",
	"slope": "phases[0].slope", "amplitude": "phases[0].amplitude", "period": "phases[0].period",
	"peak": "phases[0].peak", "spike-at": "phases[0].spike_at", "ramp-up": "phases[0].ramp_up",
	"hold": "phases[0].hold", "ramp-down": "phases[0].ramp_down",
	"users": "activity.users", "stock": "activity.stock", "buckets": "activity.buckets",
	"reservation-ttl": "activity.reservation_ttl", "seed": "seed", "name": "name",
	"drain": "pipeline.drain", "masters": "topology.masters", "replicas": "topology.replicas", "node-timeout": "topology.node_timeout",
	"pool-size": "topology.pool_size", "pool-timeout": "topology.pool_timeout",
}

// The mix flags, one per share (mix-same-user: phases[0].mix.same_user).
func init() {
	for _, sh := range new(runner.Mix).Shares() {
		flagFields[sh.FlagName()] = "phases[0].mix." + sh.Name
	}
}

// setting is how the user sets field to value in this scenario: the run
// flag that sets it for a scenario made from flags ("--replicas 1"), the
// file's field otherwise ("topology.replicas: 1").
func (s *Scenario) setting(field string, value any) string {
	if s.Source == FlagSource {
		for name, f := range flagFields {
			if f == field {
				return fmt.Sprintf("--%s %v", name, value)
			}
		}
	}
	return fmt.Sprintf("%s: %v", field, value)
}

// FromFlags is the scenario of an ad-hoc run: what a file with the same
// values would resolve to (rate_scale 1, the reference path, no
// assertions). Validate it like any other scenario.
func FromFlags(f Flags) *Scenario {
	c := f.Load
	s := &Scenario{Name: f.Name, Seed: c.Seed, RateScale: 1, Topology: f.Topology, Path: DefaultPath,
		Activity: Activity{Stock: f.Stock, Buckets: f.Buckets, Users: c.Users, ReservationTTL: c.TTL},
		Phases:   []Phase{{Name: defaultPhaseName, Config: c}},
		Pipeline: f.Pipeline, Drain: f.Drain, Source: FlagSource, parsed: parseState{pos: map[string]pos{}}}
	if d, ok := f.Given["duration"]; ok {
		s.parsed.pos["phases"] = pos{flag: "--duration " + d} // the limits on the whole load
	}
	var mix []string // the shares' sum is judged on the mix as a whole
	for name, val := range f.Given {
		if path, ok := flagFields[name]; ok {
			s.parsed.pos[path] = pos{flag: "--" + name + " " + val}
			if strings.HasPrefix(name, "mix-") {
				mix = append(mix, "--"+name+" "+val)
			}
		}
	}
	if len(mix) > 0 {
		sort.Strings(mix)
		s.parsed.pos["phases[0].mix"] = pos{flag: strings.Join(mix, " ")}
	}
	return s
}

// AddFaultFlags appends --fault values to the timeline as fault entries
// (named like a file's: the kind, "#2" on a second of one kind). Syntax
// errors (not key=value, unknown kind, a bad parameter) are refused here;
// Validate then applies the timeline's rules (windows, overlap, topology)
// to them as to a file's faults, naming the --fault.
func (s *Scenario) AddFaultFlags(specs []string) error {
	count := map[string]int{}
	for _, f := range s.Faults {
		count[f.Kind]++
	}
	for _, text := range specs {
		p, err := faults.Parse(text)
		if err != nil {
			return fmt.Errorf("--fault: %w", err)
		}
		params := maps.Clone(p.Params)
		target := params["target"]
		for _, k := range []string{"at", "for", "target"} {
			delete(params, k)
		}
		count[p.Kind]++
		name := p.Kind
		if count[p.Kind] > 1 {
			name = fmt.Sprintf("%s#%d", p.Kind, count[p.Kind])
		}
		if s.parsed.pos == nil {
			s.parsed.pos = map[string]pos{}
		}
		s.parsed.pos[fmt.Sprintf("faults[%d]", len(s.Faults))] = pos{flag: "--fault " + text}
		s.Faults = append(s.Faults, FaultSpec{Name: name, Kind: p.Kind, At: p.At, For: p.For, Target: target, Params: params})
	}
	return nil
}

// MarkFlag records that a command-line flag gave the field at path (e.g.
// "path", "wait.replicas"): errors about the field name flagText
// ("--path foo") instead of the file line, and the field counts as written.
func (s *Scenario) MarkFlag(path, flagText string) {
	if s.parsed.pos == nil {
		s.parsed.pos = map[string]pos{}
	}
	s.parsed.pos[path] = pos{flag: flagText}
}
