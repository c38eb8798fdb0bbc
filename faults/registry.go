package faults

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// builtin is every kind the harness has, in one place: a new kind is a file
// named after it that declares its Spec, and a line here.
func builtin() []Spec {
	return []Spec{
		aofRewriteKind,
		bandwidthKind,
		compensatorCrashKind,
		disconnectKind,
		dispatcherCrashKind,
		failoverKind,
		latencyKind,
		oomKind,
		partitionKind,
		replicaLagKind,
		replicaPartitionKind,
		scriptFlushKind,
		serviceCrashKind,
		serviceKillKind,
		servicePauseKind,
		serviceRestartKind,
		slicerKind,
		slotDownKind,
		slotMigrationKind,
		slowAOFKind,
		soldOutNoticeLostKind,
	}
}

// Spec registers a kind: its name, its documentation, its parameters, how
// to build a fault of it, and the rules it declares about itself (see
// Rules: whether it is destructive, signals processes, needs the proxies or
// the pipeline, may overlap others, what topology it needs, whether it can
// run on a given cluster). The guard, the scenario validator and the CLI
// read those rules; no other file keeps a list of kinds.
type Spec struct {
	Kind string
	Help string
	// Params declares every parameter the kind takes but at= and for=:
	// New refuses any other, and types each one (Typed.Of reads it).
	Params []Param
	// Build makes a fault from its typed parameters. It refuses a
	// combination of values that cannot go together with an error naming
	// the parameter.
	Build func(v Values) (Fault, error)
	// Rules are the kind's declarations; Rules.Destructive and
	// Rules.Overlap are required.
	Rules Rules
}

// New builds a fault of the kind from its parameters' text (without at/for;
// params is not modified). An unknown parameter or a bad value is an error
// naming the parameter and what it wants.
func (s Spec) New(params map[string]string) (Fault, error) {
	v, err := parseParams(s.Params, params)
	if err != nil {
		return nil, err
	}
	return s.Build(v)
}

var (
	regMu    sync.RWMutex
	registry = index(builtin())
)

// index is the registry of kinds (see add).
func index(kinds []Spec) map[string]Spec {
	m := map[string]Spec{}
	for _, s := range kinds {
		add(m, s)
	}
	return m
}

// Register adds a kind beside the built-in ones (a test's throwaway kind);
// see add for what it refuses.
func Register(s Spec) {
	regMu.Lock()
	defer regMu.Unlock()
	add(registry, s)
}

// add puts s in m. It panics on a kind registered twice, without Build, or
// without the required Rules (Destructive and Overlap), naming what is
// missing.
func add(m map[string]Spec, s Spec) {
	if s.Kind == "" || s.Build == nil {
		panic(fmt.Sprintf("faults: kind %q registered without a name or a Build", s.Kind))
	}
	if err := checkRules(s); err != nil {
		panic(err.Error())
	}
	if _, dup := m[s.Kind]; dup {
		panic("faults: kind registered twice: " + s.Kind)
	}
	m[s.Kind] = s
}

// Kinds lists the registered kinds, sorted by name.
func Kinds() []Spec {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Lookup finds a kind.
func Lookup(kind string) (Spec, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := registry[kind]
	return s, ok
}

func kindNames() string {
	var names []string
	for _, s := range Kinds() {
		names = append(names, s.Kind)
	}
	return strings.Join(names, ", ")
}
