package faults

// KindDoc is a fault kind as `seckill-harness faults --json` prints it:
// its parameters and the rules it declares (see Rules), with the rules
// that depend on parameters evaluated for the default parameters and for
// every value of each enum parameter (Param.Values).
type KindDoc struct {
	Kind   string     `json:"kind"`
	Help   string     `json:"help"`
	Params []ParamDoc `json:"params"`
	Rules  RulesDoc   `json:"rules"`
}

// ParamDoc is one parameter: at and for (every kind has them) first.
type ParamDoc struct {
	Name    string   `json:"name"`
	Default string   `json:"default,omitempty"`
	Help    string   `json:"help"`
	Values  []string `json:"values,omitempty"`
}

// RulesDoc is a kind's Rules in data.
type RulesDoc struct {
	// Destructive: with the default parameters the fault changes the
	// cluster itself (mastership, slots, configuration); DestructiveWhy
	// says how. MayBeDestructive: some parameters make it so (the kinds
	// --allow-destructive is about); DestructiveWhen lists the enum
	// parameter values that do ("mode=kill").
	Destructive      bool     `json:"destructive"`
	DestructiveWhy   string   `json:"destructive_why,omitempty"`
	MayBeDestructive bool     `json:"may_be_destructive"`
	DestructiveWhen  []string `json:"destructive_when,omitempty"`
	// SignalsProcessWhen lists the parameter values (default parameters:
	// "default") with which the fault signals a node's process, refused
	// wherever the harness did not start the processes.
	SignalsProcessWhen []string `json:"signals_process_when,omitempty"`
	// NeedsProxies, NeedsReplicationProxies, NeedsPipeline and NeedsService say why the
	// kind needs them ("": it does not).
	NeedsProxies            string `json:"needs_proxies,omitempty"`
	NeedsReplicationProxies string `json:"needs_replication_proxies,omitempty"`
	NeedsPipeline           string `json:"needs_pipeline,omitempty"`
	NeedsService            string `json:"needs_service,omitempty"`
	// Overlap is "stacks" (may overlap any fault) or "exclusive" (not with
	// another exclusive fault on the same target).
	Overlap string `json:"overlap"`
	// MinMasters and MinReplicas are the smallest cluster it acts on (0:
	// no minimum).
	MinMasters  int `json:"min_masters,omitempty"`
	MinReplicas int `json:"min_replicas,omitempty"`
}

// timingParams are the parameters every kind takes (parsed by the timeline).
var timingParams = []ParamDoc{
	{Name: "at", Default: "0s", Help: "offset from the start of the load"},
	{Name: "for", Default: "0s", Help: "how long it lasts; 0 = until the load ends"},
}

// Describe documents every registered kind, sorted by name.
func Describe() []KindDoc {
	var out []KindDoc
	for _, s := range Kinds() {
		d := KindDoc{Kind: s.Kind, Help: s.Help, Params: append([]ParamDoc(nil), timingParams...)}
		for _, p := range s.Params {
			d.Params = append(d.Params, ParamDoc{Name: p.Name, Default: p.Default, Help: p.Help, Values: p.Values})
		}
		d.Rules = describeRules(s)
		out = append(out, d)
	}
	return out
}

func describeRules(s Spec) RulesDoc {
	r := s.Rules
	d := RulesDoc{MayBeDestructive: r.Destructive.may, NeedsProxies: r.NeedsProxies,
		NeedsReplicationProxies: r.NeedsReplicationProxies, NeedsPipeline: r.NeedsPipeline,
		NeedsService: r.NeedsService, MinMasters: r.Topology.Masters, MinReplicas: r.Topology.Replicas, Overlap: "stacks"}
	if r.Overlap == Exclusive {
		d.Overlap = "exclusive"
	}
	defaults := map[string]string{}
	if r.Destructive.why != nil {
		d.DestructiveWhy = r.Destructive.why(defaults)
		d.Destructive = d.DestructiveWhy != ""
	}
	if r.SignalsProcess != nil {
		if why, _ := r.SignalsProcess(defaults); why != "" {
			d.SignalsProcessWhen = append(d.SignalsProcessWhen, "default")
		}
	}
	for _, p := range s.Params {
		for _, v := range p.Values {
			params := map[string]string{p.Name: v}
			if d.MayBeDestructive && !d.Destructive && r.Destructive.why(params) != "" {
				d.DestructiveWhen = append(d.DestructiveWhen, p.Name+"="+v)
			}
			if r.SignalsProcess != nil {
				if why, _ := r.SignalsProcess(params); why != "" {
					d.SignalsProcessWhen = append(d.SignalsProcessWhen, p.Name+"="+v)
				}
			}
		}
	}
	return d
}
