package explore

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"seckill-harness/faults"
)

// paramChoices are the parameter values explore draws for a kind, beside
// its defaults: the values that change what the fault does, within what a
// short run can take (a latency below the call timeout, a failover mode
// the cluster allows). A kind without an entry runs with its registered
// defaults on its default target: a new kind is explored from the day it
// is registered, and gains choices here.
var paramChoices = map[string]map[string][]string{
	"latency":                 {"latency": {"20", "50", "100", "200"}, "jitter": {"0", "10", "50"}, "stream": {"downstream", "upstream"}},
	"bandwidth":               {"rate": {"16", "64", "256"}, "stream": {"downstream", "upstream"}},
	"slicer":                  {"average_size": {"1", "16", "64"}, "delay": {"50", "100", "500"}, "stream": {"downstream", "upstream"}},
	"disconnect-before-reply": {"toxic": {"reset_peer", "limit_data", "timeout"}, "every": {"0", "300ms", "500ms"}, "toxicity": {"1", "0.5"}},
	"failover":                {"mode": {"graceful", "force", "takeover", "kill", "pause"}},
	"slot-migration":          {"batch": {"10", "100"}, "pause": {"0", "10ms"}, "slots": {"hot", "all"}},
	"slow-aof":                {"sleep": {"2ms", "5ms", "20ms"}},
	"script-flush":            {"every": {"0", "500ms"}},
	"replica-lag":             {"latency": {"100", "500"}},
}

// stackTargets are the targets a kind declared Stacks may be drawn on
// besides its default: every master at once.
var stackTargets = []string{"", faults.TargetAllMasters}

// drawParams draws a kind's parameters (and, under "target", a target
// other than its default): each choice of paramChoices, keeping only
// those the setting allows (a failover mode that signals a process needs
// process control).
func drawParams(kind string, r *rand.Rand, s Setting) map[string]string {
	out := map[string]string{}
	choices := paramChoices[kind]
	for _, name := range sortedChoiceNames(choices) {
		vals := choices[name]
		var ok []string
		for _, v := range vals {
			if faults.NeedsProcessControl(kind, map[string]string{name: v}) && !s.ProcessControl {
				continue
			}
			if faults.Destructive(kind, map[string]string{name: v}) && !s.AllowDestructive {
				continue
			}
			ok = append(ok, v)
		}
		if len(ok) > 0 {
			out[name] = ok[r.IntN(len(ok))]
		}
	}
	if spec, found := faults.Lookup(kind); found && spec.Rules.Overlap == faults.Stacks && hasParam(spec, "target") && spec.Rules.NeedsReplicationProxies == "" {
		if t := stackTargets[r.IntN(len(stackTargets))]; t != "" {
			out["target"] = t
		}
	}
	return out
}

func hasParam(s faults.Spec, name string) bool {
	for _, p := range s.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

func sortedChoiceNames(m map[string][]string) []string { return slices.Sorted(maps.Keys(m)) }

// checkChoices reports choices naming a kind that is not registered (a
// renamed kind would silently lose its choices).
func checkChoices() error {
	for k := range paramChoices {
		if _, ok := faults.Lookup(k); !ok {
			return fmt.Errorf("explore: parameter choices for %q, which is not a registered fault kind", k)
		}
	}
	return nil
}
