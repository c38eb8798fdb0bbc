package servers

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"seckill-harness/reports"
)

// Unplanned events are found in two steps, as pure functions of the
// sampled series (report.json's servers.nodes): DetectEvents states the
// facts — every role change, failover, restart, cluster_state:fail window,
// flagged or disconnected node, full resync and unreachable node, with its
// time and evidence — and Attribute then splits them into the events a
// planned fault explains and the unplanned rest.

// failLookbackS is how far before a promotion (and failAheadS after it)
// the old master being flagged or silent makes the failover automatic: the
// cluster flags it FAIL before it elects a replica, and the flag stays
// until the old master answers again.
const (
	failLookbackS = 10.0
	failAheadS    = 2.0
)

// DetectEvents lists what the cluster did during the sampled series, in
// time order. intervalS is the sampling period (report.json's
// servers.interval_s). It reads only nodes: the facts step.
func DetectEvents(nodes []reports.ServerNode, intervalS float64) []reports.Event {
	if intervalS <= 0 {
		intervalS = DefaultInterval.Seconds()
	}
	d := &detection{nodes: nodes, interval: intervalS, byID: map[string]string{}}
	for _, n := range nodes {
		for _, s := range n.Series {
			if s.NodeID != "" {
				d.byID[s.NodeID] = n.Addr
			}
		}
	}
	d.restarts()
	d.roleChanges()
	d.clusterFail()
	d.peerTrouble()
	d.replicationLinks()
	d.resyncs()
	d.unreachable()
	sort.SliceStable(d.out, func(i, j int) bool {
		if d.out[i].TimeS != d.out[j].TimeS {
			return d.out[i].TimeS < d.out[j].TimeS
		}
		return d.out[i].Node < d.out[j].Node
	})
	return d.out
}

type detection struct {
	nodes    []reports.ServerNode
	interval float64
	byID     map[string]string // cluster id → address
	out      []reports.Event
}

func (d *detection) add(e reports.Event) { d.out = append(d.out, e) }

// answered is a node's samples that have an answer (no Error).
func answered(n reports.ServerNode) []reports.NodeSample {
	var out []reports.NodeSample
	for _, s := range n.Series {
		if s.Error == "" {
			out = append(out, s)
		}
	}
	return out
}

// restarts: a run_id change or the uptime going back between two answers.
func (d *detection) restarts() {
	for _, n := range d.nodes {
		ok := answered(n)
		for i := 1; i < len(ok); i++ {
			p, c := ok[i-1], ok[i]
			changed := p.RunID != "" && c.RunID != "" && p.RunID != c.RunID
			back := p.UptimeS > 0 && c.UptimeS < p.UptimeS
			if !changed && !back {
				continue
			}
			at := math.Min(c.TS, math.Max(p.TS, c.TS-float64(c.UptimeS)))
			ev := fmt.Sprintf("uptime %d s at %.1f s, %d s at %.1f s", p.UptimeS, p.TS, c.UptimeS, c.TS)
			if changed {
				ev = fmt.Sprintf("run_id %s… → %s…, ", p.RunID, c.RunID) + ev
			}
			d.add(reports.Event{TimeS: round3(at), Node: n.Addr, What: reports.EventRestart, Evidence: ev})
		}
	}
}

// roleChanges: a replica promoted is a failover of its master (automatic
// when that master was flagged or silent around it); a master demoted
// afterwards is folded into that failover's evidence, otherwise it is a
// role change of its own.
func (d *detection) roleChanges() {
	type demotion struct {
		node   string
		at     float64
		master string
	}
	var demoted []demotion
	for _, n := range d.nodes {
		ok := answered(n)
		for i := 1; i < len(ok); i++ {
			p, c := ok[i-1], ok[i]
			switch {
			case p.Role == "replica" && c.Role == "master":
				d.promotion(n.Addr, p, c)
			case p.Role == "master" && c.Role == "replica":
				demoted = append(demoted, demotion{n.Addr, c.TS, c.Master})
			}
		}
	}
	for _, dm := range demoted {
		i := slices.IndexFunc(d.out, func(e reports.Event) bool {
			return e.Node == dm.node && e.TimeS <= dm.at+d.interval &&
				(e.What == reports.EventAutomaticFailover || e.What == reports.EventFailover)
		})
		if i >= 0 {
			d.out[i].Evidence += fmt.Sprintf("; %s rejoined as a replica of %s at %.1f s", dm.node, orUnknown(dm.master), dm.at)
			continue
		}
		d.add(reports.Event{TimeS: dm.at, Node: dm.node, What: reports.EventRoleChange,
			Evidence: fmt.Sprintf("master → replica of %s at %.1f s, no failover of it seen", orUnknown(dm.master), dm.at)})
	}
}

// promotion records the failover that made replica addr a master.
func (d *detection) promotion(addr string, p, c reports.NodeSample) {
	old := p.Master
	e := reports.Event{TimeS: c.TS, Node: old, What: reports.EventFailover,
		Evidence: fmt.Sprintf("replica %s promoted to master (a replica of %s at %.1f s, master at %.1f s)", addr, orUnknown(old), p.TS, c.TS)}
	if old == "" {
		e.Node = addr
		d.add(e)
		return
	}
	if why := d.troubleOf(old, c.TS-failLookbackS, c.TS+failAheadS); why != "" {
		e.What = reports.EventAutomaticFailover
		e.Evidence += "; " + why
	} else {
		e.Evidence += "; " + old + " answered and no peer flagged it"
	}
	d.add(e)
}

// troubleOf says how node addr was failing between from and to: flagged by
// peers, or not answering the sampler ("" when neither).
func (d *detection) troubleOf(addr string, from, to float64) string {
	var why []string
	flaggers := map[string]string{}
	for _, n := range d.nodes {
		for _, s := range n.Series {
			if s.TS < from || s.TS > to {
				continue
			}
			if n.Addr == addr && s.Error != "" && len(why) == 0 {
				why = append(why, fmt.Sprintf("%s did not answer the sampler at %.1f s (%s)", addr, s.TS, truncateText(s.Error, 60)))
			}
			for id, f := range s.PeerFlags {
				if d.addrOf(id) == addr && strings.Contains(f, "fail") && flaggers[n.Addr] == "" {
					flaggers[n.Addr] = fmt.Sprintf("%s (%s at %.1f s)", n.Addr, f, s.TS)
				}
			}
		}
	}
	if len(flaggers) > 0 {
		why = append([]string{fmt.Sprintf("%s flagged by %s", addr, joinSorted(flaggers))}, why...)
	}
	return strings.Join(why, "; ")
}

func (d *detection) addrOf(id string) string {
	if a, ok := d.byID[id]; ok {
		return a
	}
	return id
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown master"
	}
	return s
}

func joinSorted(m map[string]string) string {
	var v []string
	for _, s := range m {
		v = append(v, s)
	}
	sort.Strings(v)
	return strings.Join(v, ", ")
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
