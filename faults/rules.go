package faults

// The rules a fault kind declares about itself, in the Rules field of its
// Spec. Everything that decides whether a fault may or
// can run reads them: the safety guard (CheckAllowed, Destructive,
// NeedsProcessControl), the scenario validator (overlap, topology,
// pipeline), Available (a planned fault against the cluster at hand) and
// the CLI's --allow-destructive help (DestructiveKinds). A new kind is its
// own file plus its test; nothing else keeps a list of kinds.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"seckill-harness/compose"
)

// Rules are what a kind declares about itself. Destructive and Overlap
// must be declared (the registry panics otherwise, naming the field); the other
// fields are optional, and their zero value means "does not need it".
type Rules struct {
	// Destructive declares whether and why a fault of the kind changes the
	// cluster itself (mastership, slot ownership, node configuration), as
	// opposed to the harness's own proxies or pipeline: NotDestructive(),
	// DestructiveBecause(why) or DestructiveWhen(func). Required. The guard
	// refuses a destructive fault against a cluster the harness did not
	// create unless the user passes --allow-destructive.
	Destructive Destructiveness

	// SignalsProcess reports, for a fault's parameters, why it signals a
	// node's process (a clause: "mode=kill signals the master's process")
	// and which parameters would not (a clause naming the alternative:
	// "mode=graceful|force|takeover", or ""); why "" means it does not.
	// Such a fault is refused on a cluster whose processes the harness did
	// not start, whatever --allow-destructive says. nil: never.
	SignalsProcess func(params map[string]string) (why, instead string)

	// NeedsProxies, when not "", says why the kind acts through the
	// toxiproxy proxies in front of the nodes (a clause: "it puts a toxic on
	// the target node's proxy"); Available refuses it without proxies.
	NeedsProxies string
	// NeedsReplicationProxies, when not "", says why the kind acts on the
	// replication stream through the harness's replication proxies; a run
	// planning it starts its local cluster with them, and Available refuses
	// a cluster that replicates directly.
	NeedsReplicationProxies string
	// NeedsPipeline, when not "", says what the kind does to the run's
	// order pipeline (a clause: "stops the pipeline's send_pending
	// dispatcher"); the scenario validator refuses it in a scenario without
	// a pipeline: section, Available without Setting.Pipeline.
	NeedsPipeline string
	// NeedsService, when not "", says what the kind does to the access
	// service the run started as a child (--service-cmd; a clause: "kills
	// the service's process group"); Available refuses it without
	// Setting.Service, the scenario validator without service_cmd.
	NeedsService string
	// PipelineOutage, when its Name is set, declares that reservations
	// accepted during the fault wait for it to end: the scenario validator
	// then requires the reservation TTL to exceed the fault's window.
	PipelineOutage PipelineOutage

	// Overlap declares whether a fault of the kind may act on a target
	// while another Exclusive fault acts on it: Stacks or Exclusive.
	// Required.
	Overlap Overlap
	// OverlapTarget names what a fault with these parameters acts on, for
	// the overlap rule (see Acted.Same). nil: the node(s) its target
	// parameter names (hot-master when absent). A kind acting on something
	// other than a node returns Acted{Target: "<its name>", Node: false}.
	OverlapTarget func(params map[string]string) Acted

	// Topology is the smallest cluster the kind can act on.
	Topology Topology

	// Available, when set, judges what the declarations above cannot: can
	// a fault with these parameters (at= and for= removed) run in this
	// setting? It returns nil, or
	// an error naming the problem and the fix. It is called by Available
	// after the declared rules passed.
	Available func(s Setting, params map[string]string) error
}

// Destructiveness is a kind's declaration of whether it changes the
// cluster itself. Build it with NotDestructive, DestructiveBecause or
// DestructiveWhen; the zero value is "not declared".
type Destructiveness struct {
	why      func(params map[string]string) string
	declared bool
	may      bool // some parameters make it destructive
}

// NotDestructive declares a kind that acts only on the harness's own parts
// (its proxies, its pipeline): the cluster's nodes, bus and replication are
// untouched.
func NotDestructive() Destructiveness {
	return Destructiveness{declared: true, why: func(map[string]string) string { return "" }}
}

// DestructiveBecause declares a kind that always changes the cluster; why
// is the reason as the guard prints it, a clause starting with "it": "it
// moves slots and their keys between masters (CLUSTER SETSLOT, MIGRATE)".
func DestructiveBecause(why string) Destructiveness {
	return Destructiveness{declared: true, may: true, why: func(map[string]string) string { return why }}
}

// DestructiveWhen declares a kind whose parameters decide: why returns the
// reason (as for DestructiveBecause) for parameters that change the
// cluster, "" for those that do not. DestructiveKinds lists such a kind.
func DestructiveWhen(why func(params map[string]string) string) Destructiveness {
	return Destructiveness{declared: true, may: true, why: why}
}

// Overlap is a kind's declaration of whether it may overlap another fault
// on the same target.
type Overlap int

const (
	overlapUndeclared Overlap = iota
	// Stacks: the fault may overlap any other (network toxics stack on a
	// proxy).
	Stacks
	// Exclusive: the fault moves, stops or reconfigures what it acts on, so
	// it must not overlap another Exclusive fault on the same target.
	Exclusive
)

// Topology is the smallest cluster a kind can act on; a zero field means
// no minimum. The Why clauses complete "<kind> needs …".
type Topology struct {
	Masters     int    // masters owning slots
	MastersWhy  string // "another master to move the slot to"
	Replicas    int    // replicas of every master
	ReplicasWhy string // "a replica per master"
}

// PipelineOutage names an outage of the pipeline a fault causes, for the
// reservation-TTL rule of the scenario validator.
type PipelineOutage struct {
	// Name is the outage as messages name it: "dispatcher crash".
	Name string
	// Consequence is what goes wrong when the reservation TTL does not
	// exceed the outage, as a clause.
	Consequence string
}

// Acted is what a fault acts on, for the overlap rule.
type Acted struct {
	// Target names it as messages show it: a target as Target renders it
	// ("hot-master", "slot=42", "all-masters") or the name of a part of
	// the harness ("pipeline-dispatcher").
	Target string
	// Node: Target is a node (or every master) of the cluster.
	Node bool
}

// Same reports whether two faults act on the same thing: the same target,
// or every master and any node.
func (a Acted) Same(b Acted) bool {
	if a.Target == b.Target {
		return true
	}
	return a.Node && b.Node && (a.Target == TargetAllMasters || b.Target == TargetAllMasters)
}

// checkRules is what the registry demands of a Spec's Rules.
func checkRules(s Spec) error {
	var missing []string
	if !s.Rules.Destructive.declared || s.Rules.Destructive.why == nil {
		missing = append(missing, "Rules.Destructive (NotDestructive(), DestructiveBecause(why) or DestructiveWhen(func))")
	}
	if s.Rules.Overlap != Stacks && s.Rules.Overlap != Exclusive {
		missing = append(missing, "Rules.Overlap (Stacks or Exclusive)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("faults: kind %q does not declare %s in its Spec", s.Kind, strings.Join(missing, " and "))
	}
	return nil
}

// rulesOf returns the declared rules of kind; ok is false for an unknown kind.
func rulesOf(kind string) (Rules, bool) {
	s, ok := Lookup(kind)
	return s.Rules, ok
}

// destructiveWhy is why a fault of kind with params changes the cluster,
// "" when it does not; an unknown kind gets a reason of its own.
func destructiveWhy(kind string, params map[string]string) string {
	r, ok := rulesOf(kind)
	if !ok {
		return "its kind is not known to be harmless"
	}
	return r.Destructive.why(params)
}

// DestructiveKinds lists, sorted, the kinds that change the cluster itself
// (always or for some parameters): the faults --allow-destructive is about.
func DestructiveKinds() []string {
	var out []string
	for _, s := range Kinds() {
		if s.Rules.Destructive.may {
			out = append(out, s.Kind)
		}
	}
	return out
}

// ExclusiveKinds lists, sorted, the kinds declared Exclusive: faults of
// these kinds must not overlap on one target.
func ExclusiveKinds() []string {
	var out []string
	for _, s := range Kinds() {
		if s.Rules.Overlap == Exclusive {
			out = append(out, s.Kind)
		}
	}
	return out
}

// IsExclusive reports whether kind is declared Exclusive.
func IsExclusive(kind string) bool {
	r, ok := rulesOf(kind)
	return ok && r.Overlap == Exclusive
}

// OverlapTarget is what a fault of kind with params (its target parameter
// included) acts on, for the overlap rule: the kind's OverlapTarget, else
// the node(s) of its target parameter as Target renders it (the raw value
// when it does not parse).
func OverlapTarget(kind string, params map[string]string) Acted {
	if r, ok := rulesOf(kind); ok && r.OverlapTarget != nil {
		return r.OverlapTarget(params)
	}
	t, err := ParseTarget(params["target"])
	if err != nil {
		return Acted{Target: params["target"], Node: true}
	}
	return Acted{Target: t.String(), Node: true}
}

// CompletesOnInject reports whether a fault of kind with params ends its
// effect when Inject returns (the optional Completing ability of its
// Fault). Parameters New refuses are judged as the kind's defaults.
func CompletesOnInject(kind string, params map[string]string) bool {
	s, ok := Lookup(kind)
	if !ok {
		return false
	}
	f, err := s.New(params)
	if err != nil {
		if f, err = s.New(map[string]string{}); err != nil {
			return false
		}
	}
	c, is := f.(Completing)
	return is && c.CompletesOnInject()
}

// Setting is what Available judges a planned fault against: the cluster at
// hand and the harness's parts around it. SettingOf reads it from a
// running cluster; a caller that plans ahead may fill it by hand.
type Setting struct {
	Provider         string // compose.ProviderLocal, ProviderDocker or ProviderExternal
	Owned            bool   // the harness created the cluster
	ProcessControl   bool   // the harness can signal the nodes' processes
	AllowDestructive bool   // the user passed --allow-destructive
	Masters          int    // masters owning slots
	Replicas         int    // the fewest replicas any of those masters has
	Proxies          bool   // toxiproxy sits in front of the nodes
	Pipeline         bool   // the run has the order pipeline
	LocalSoldOut     bool   // the reserve path has the local sold-out flag (--local-soldout)
	Service          bool   // the run started the access service as a child (--service-cmd)
	// ReplicationProxies: the cluster's replication runs through proxies
	// of the harness (compose.ReplicationLinks), which the replication
	// kinds act on.
	ReplicationProxies bool
}

// SettingOf reads the Setting of a running cluster (topology from
// CLUSTER NODES as one reachable node sees it); proxies and pipeline say
// whether the run has them.
func SettingOf(ctx context.Context, c compose.Cluster, allowDestructive, proxies, pipeline bool) (Setting, error) {
	if isNil(c) {
		return Setting{}, errors.New("faults: no cluster to read the setting of")
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return Setting{}, fmt.Errorf("faults: topology of the %s cluster: %w", c.Provider(), err)
	}
	s := Setting{Provider: c.Provider(), Owned: c.Owned(), ProcessControl: compose.HasProcessControl(c),
		AllowDestructive: allowDestructive, Proxies: proxies, Pipeline: pipeline}
	s.ReplicationProxies = hasReplicationProxies(c)
	s.Masters, s.Replicas = compose.MastersAndReplicas(nodes)
	return s, nil
}

// Available judges whether the planned fault can run in setting s, by the
// rules its kind declares: the safety guard (process control, destructive
// faults on a cluster the harness did not create), the topology, the
// proxies and the pipeline, then the kind's own Available. The error names
// the fault, the problem and the fix; nil: it can run.
func Available(p *Planned, s Setting) error {
	if p == nil {
		return nil
	}
	if err := allowed(p, s); err != nil {
		return err
	}
	r, ok := rulesOf(p.Kind)
	if !ok {
		return fmt.Errorf("fault %q: unknown kind %q; valid kinds: %s", p.name(), p.Kind, kindNames())
	}
	name := p.name()
	t := r.Topology
	if t.Masters > 0 && s.Masters < t.Masters {
		return fmt.Errorf("fault %q: %s needs %s, but this %s cluster has %d master(s) owning slots: use --masters %d or more (a local or docker cluster) or a cluster with that many",
			name, p.Kind, t.MastersWhy, s.Provider, s.Masters, t.Masters)
	}
	if t.Replicas > 0 && s.Replicas < t.Replicas {
		return fmt.Errorf("fault %q: %s needs %s, but a master of this %s cluster has %d replica(s): use --replicas %d (a local or docker cluster) or a cluster whose masters have replicas",
			name, p.Kind, t.ReplicasWhy, s.Provider, s.Replicas, t.Replicas)
	}
	if p.Params["target"] == TargetHotReplica && s.Replicas < 1 {
		return fmt.Errorf("fault %q: target=hot-replica needs a replica, but a master of this %s cluster has none: use --replicas 1 or another target", name, s.Provider)
	}
	if r.NeedsProxies != "" && !s.Proxies {
		return fmt.Errorf("fault %q: %s needs the proxies (%s), and this run has none: run it with faults through the harness's proxies (embedded, or --toxiproxy URL)",
			name, p.Kind, r.NeedsProxies)
	}
	if r.NeedsReplicationProxies != "" && !s.ReplicationProxies {
		return fmt.Errorf("fault %q: %s %s, and this %s cluster replicates directly, not through proxies of the harness: "+
			"run it on a local cluster the harness starts (--cluster local): it routes replication through proxies of its own (compose.Options.ReplicationProxies) when such a fault is planned", name, p.Kind, r.NeedsReplicationProxies, s.Provider)
	}
	if r.NeedsPipeline != "" && !s.Pipeline {
		return fmt.Errorf("fault %q: %s %s, but this run has no pipeline: turn the pipeline on (a scenario's pipeline: section)", name, p.Kind, r.NeedsPipeline)
	}
	if r.NeedsService != "" && !s.Service {
		return fmt.Errorf("fault %q: %s %s, but this run started no service: give the command that starts your access service (--service-cmd 'CMD', or a scenario's service_cmd:)", name, p.Kind, r.NeedsService)
	}
	if r.Available != nil {
		if err := r.Available(s, withoutTiming(p.Params)); err != nil {
			return fmt.Errorf("fault %q: %w", name, err)
		}
	}
	return nil
}

// name is the fault as the user wrote it, or its kind.
func (p *Planned) name() string {
	if p.Spec != "" {
		return p.Spec
	}
	return p.Kind
}

// withoutTiming is params without at= and for= (what a kind's New sees).
func withoutTiming(params map[string]string) map[string]string {
	out := maps.Clone(params)
	for _, k := range []string{"at", "for"} {
		delete(out, k)
	}
	return out
}

// ActsOnProxies reports whether kind declares that it acts through the
// client proxies (Rules.NeedsProxies): traffic that bypasses them escapes
// it.
func ActsOnProxies(kind string) bool {
	r, ok := rulesOf(kind)
	return ok && r.NeedsProxies != ""
}

// NeedReplicationProxies reports whether any planned fault declares that it
// acts on the replication stream (Rules.NeedsReplicationProxies): the run's
// local cluster then routes replication through proxies of its own.
func NeedReplicationProxies(planned []*Planned) bool {
	for _, p := range planned {
		if sp, ok := Lookup(p.Kind); ok && sp.Rules.NeedsReplicationProxies != "" {
			return true
		}
	}
	return false
}

// TopologyNeed is the smallest topology the planned faults can act on: the
// largest declared Topology of their kinds, and a replica per master for
// target=hot-replica. A run waits for a cluster it did not create to show
// it (compose.WaitSettled) before Available judges the faults.
func TopologyNeed(planned []*Planned) compose.TopologyNeeds {
	var need compose.TopologyNeeds
	for _, p := range planned {
		if r, ok := rulesOf(p.Kind); ok {
			need.Masters = max(need.Masters, r.Topology.Masters)
			need.ReplicasPerMaster = max(need.ReplicasPerMaster, r.Topology.Replicas)
		}
		if p.Params["target"] == TargetHotReplica {
			need.ReplicasPerMaster = max(need.ReplicasPerMaster, 1)
		}
	}
	return need
}
