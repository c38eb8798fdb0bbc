package scenarios

import (
	"fmt"
	"strconv"
	"strings"
)

// Set applies one --set key=value to the scenario and resolves it again.
//
// Keys are dotted paths of the file's fields (see SetKeys): seed=7,
// rate_scale=0.1, path=reference, topology.masters=1, activity.stock=10,
// defaults.rate=500, phases.0.rate=500 or phases.baseline.duration=5s (a
// phase by index or name; phases.*.concurrency=32 for every phase),
// phases.0.mix.replay=0.5, faults.0.at=2s, faults.kill.params.mode=pause,
// assertions.max_unknown_ratio=0.01, assertions.slo.0.p99=30ms,
// assertions.outcomes.ACCEPTED.exactly=1, assertions.invariants=I1,I3,
// suite=a,b, pipeline.mq.timeout=0.2, pipeline.order.reject=0.1,
// pipeline.drain=5s, pipeline.defects=order-no-dedupe. An index one past
// the end of a list adds an entry (faults.1.kind=latency). An empty value
// (key=) removes the setting, so its default applies; on a section it
// removes the whole section (pipeline= turns the pipeline off). Setting any
// pipeline key on a scenario without a pipeline: section turns the
// pipeline on with the defaults for the rest. Values are parsed like the
// file's (durations as 10s).
//
// rate_scale=x replaces the scenario's rate_scale (it does not multiply
// it): rate_scale=1 runs the rates as written.
//
// On a suite, name, description, proves and suite apply to the suite; any
// other key is forwarded to every member (Members applies it) and must
// apply to each of them.
//
// Errors name the key and list the valid keys at the point where it went
// wrong. A failed Set leaves the scenario unchanged. Call Validate after the
// last Set.
func (s *Scenario) Set(kv string) error {
	key, val, ok := strings.Cut(kv, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return fmt.Errorf("--set %q: want key=value (e.g. activity.stock=10); valid keys: %s", kv, setKeyList())
	}
	if s.parsed.tree == nil {
		return fmt.Errorf("--set %s: the scenario was not read by Parse, Load, Builtin or Resolve", kv)
	}
	segs := strings.Split(key, ".")
	if s.IsSuite() {
		switch segs[0] {
		case "name", "description", "proves", "suite":
		default:
			s.parsed.sets = append(s.parsed.sets, kv)
			if _, err := s.Members(); err != nil {
				s.parsed.sets = s.parsed.sets[:len(s.parsed.sets)-1]
				return fmt.Errorf("--set %s on suite %s (forwarded to every member): %w", kv, s.Name, err)
			}
			return nil
		}
	}
	tree := s.parsed.tree.clone()
	a := &assigner{s: s, kv: kv, key: key, val: strings.TrimSpace(val)}
	if err := a.assign(tree, rootSchema, segs, ""); err != nil {
		return fmt.Errorf("--set %s: %w", kv, err)
	}
	ns, err := decode(s.Source, tree)
	if err != nil {
		return err
	}
	ns.parsed.sets = s.parsed.sets
	*s = *ns
	return nil
}

type assigner struct {
	s            *Scenario
	kv, key, val string
}

func (a *assigner) p() pos { return pos{set: a.kv} }

func (a *assigner) unknown(path, seg string, sch *schema) error {
	where := "the scenario"
	if path != "" {
		where = path
	}
	msg := fmt.Sprintf("unknown key %q: %s has no field %q", a.key, where, seg)
	if sug := suggest(seg, sch.names()); sug != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", join(path, sug))
	}
	msg += "; valid there: " + strings.Join(sch.names(), ", ")
	if path == "" {
		msg += "; all keys: " + setKeyList()
	}
	return fmt.Errorf("%s", msg)
}

// assign walks segs down n (a node of schema sch at path), creating
// missing sections, and writes the value at the end.
func (a *assigner) assign(n *node, sch *schema, segs []string, path string) error {
	seg := segs[0]
	last := len(segs) == 1
	switch sch.t {
	case tMap, tDict:
		sub := sch.elem
		if sch.t == tMap {
			if sub = sch.field(seg); sub == nil {
				return a.unknown(path, seg, sch)
			}
		}
		if n.kind != mapNode {
			*n = *newMap(a.p())
		}
		childPath := join(path, seg)
		if last {
			if a.val == "" {
				// key= removes the setting (a whole section too: pipeline=
				// turns the pipeline off).
				n.del(seg)
				return nil
			}
			switch sub.t {
			case tMap, tDict, tList:
				return fmt.Errorf("key %q is a section; set one of its keys (or %s= to remove it): %s", a.key, a.key, strings.Join(keysUnder(childPath, sub), ", "))
			}
			n.put(seg, &node{kind: scalarNode, pos: a.p(), text: a.val}, a.p())
			return nil
		}
		child := n.get(seg)
		if child == nil || child.kind == nullNode {
			if sub.t != tMap && sub.t != tDict && sub.t != tList {
				return fmt.Errorf("key %q: %s is a value, it has no keys under it", a.key, childPath)
			}
			if a.val == "" {
				// Removing a setting of an absent section: nothing to do
				// (creating it would turn on pipeline:, add a fault, …).
				return nil
			}
			child = &node{kind: nullNode, pos: a.p()}
			n.put(seg, child, a.p())
		}
		return a.assign(child, sub, segs[1:], childPath)
	case tList:
		if n.kind != seqNode {
			*n = node{kind: seqNode, pos: a.p()}
		}
		if last {
			return fmt.Errorf("key %q names an entry of %s; set one of its keys: %s", a.key, path, strings.Join(keysUnder(path+"."+seg, sch.elem), ", "))
		}
		idx, err := a.entries(n, sch, seg, path)
		if err != nil {
			return err
		}
		for _, i := range idx {
			if i == len(n.items) {
				if a.val == "" {
					continue // removing a setting of an entry that does not exist
				}
				n.items = append(n.items, newMap(a.p()))
			}
			if err := a.assign(n.items[i], sch.elem, segs[1:], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("key %q: %s is a value, it has no keys under it", a.key, path)
}

// entries resolves a list selector: an index (one past the end adds an
// entry), "*" (every entry) or an entry's name.
func (a *assigner) entries(n *node, sch *schema, seg, path string) ([]int, error) {
	size := len(n.items)
	if seg == "*" {
		if size == 0 && path == "phases" {
			return []int{0}, nil // the implicit single phase
		}
		if size == 0 {
			return nil, fmt.Errorf("key %q: %s has no entries", a.key, path)
		}
		idx := make([]int, size)
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	if i, err := strconv.Atoi(seg); err == nil {
		if path == "phases" && size == 0 && i == 0 {
			return []int{0}, nil
		}
		if i < 0 || i > size {
			return nil, fmt.Errorf("key %q: %s has %d entries (indexes 0..%d; %d adds one)%s", a.key, path, size, size-1, size, a.nameHint(path))
		}
		return []int{i}, nil
	}
	names := a.names(path)
	for i, nm := range names {
		if nm == seg && i < max(size, 1) {
			return []int{i}, nil
		}
	}
	if sch.elem.field("name") == nil {
		return nil, fmt.Errorf("key %q: entries of %s are selected by index (0..%d)", a.key, path, size-1)
	}
	return nil, fmt.Errorf("key %q: %s has no entry named %q%s", a.key, path, seg, a.nameHint(path))
}

// names are the resolved names of a list's entries (defaults included).
func (a *assigner) names(path string) []string {
	var out []string
	switch path {
	case "phases":
		for _, p := range a.s.Phases {
			out = append(out, p.Name)
		}
	case "faults":
		for _, f := range a.s.Faults {
			out = append(out, f.Name)
		}
	}
	return out
}

func (a *assigner) nameHint(path string) string {
	if names := a.names(path); len(names) > 0 {
		return "; names: " + strings.Join(names, ", ") + " (or * for every entry)"
	}
	return ""
}

// keysUnder lists the settable keys under a section, relative to the key
// the user typed.
func keysUnder(prefix string, sch *schema) []string {
	var out []string
	var walk func(p string, s *schema)
	walk = func(p string, s *schema) {
		switch s.t {
		case tMap:
			for _, f := range s.fields {
				walk(join(p, f.name), f.sch)
			}
		case tList:
			walk(p+".<i>", s.elem)
		case tDict:
			walk(p+".<"+s.what+">", s.elem)
		default:
			out = append(out, p)
		}
	}
	walk(prefix, sch)
	return out
}
