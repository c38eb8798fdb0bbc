package servers

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"seckill-harness/reports"
)

// span is a stretch of a series where a condition held: from the first
// sample showing it to the first answer without it (open: still holding
// at the last sample, which then ends it). who is the node that saw it.
type span struct {
	from, to float64
	open     bool
	who      string
	note     string
}

// spans lists where cond holds in series; a sample for which cond is not
// known (no answer, field absent) neither starts nor ends a span.
func spans(series []reports.NodeSample, cond func(reports.NodeSample) (holds, known bool)) []span {
	var out []span
	var cur *span
	for _, s := range series {
		holds, known := cond(s)
		switch {
		case !known:
			if cur != nil {
				cur.to = s.TS
			}
		case holds && cur == nil:
			cur = &span{from: s.TS, to: s.TS, open: true}
		case holds:
			cur.to = s.TS
		case cur != nil:
			cur.to, cur.open = s.TS, false
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// merge joins overlapping spans (of several observers) into groups, each
// with the spans it is made of.
func merge(in []span) [][]span {
	sort.SliceStable(in, func(i, j int) bool { return in[i].from < in[j].from })
	var out [][]span
	end := 0.0
	for _, s := range in {
		if n := len(out); n > 0 && s.from <= end {
			out[n-1] = append(out[n-1], s)
			end = max(end, s.to)
			continue
		}
		out = append(out, []span{s})
		end = s.to
	}
	return out
}

// groupEvent is one event for a merged group: it starts at the first span
// and lasts to the last end; the evidence lists who saw what, when.
func groupEvent(g []span, node, what, prefix string) reports.Event {
	from, to := g[0].from, g[0].to
	var parts []string
	for _, s := range g {
		to = max(to, s.to)
		p := fmt.Sprintf("%s %.1f–%.1f s", s.who, s.from, s.to)
		if s.note != "" {
			p = fmt.Sprintf("%s (%s) %.1f–%.1f s", s.who, s.note, s.from, s.to)
		}
		if s.open {
			p += " (still at the last sample)"
		}
		parts = append(parts, p)
	}
	return reports.Event{TimeS: from, DurationS: round3(to - from), Node: node, What: what,
		Evidence: prefix + strings.Join(parts, ", ")}
}

// clusterFail: cluster_state:fail on any node, one event per overlapping
// group.
func (d *detection) clusterFail() {
	var all []span
	for _, n := range d.nodes {
		for _, s := range spans(n.Series, func(s reports.NodeSample) (bool, bool) {
			return s.ClusterState == "fail", s.Error == "" && s.ClusterState != ""
		}) {
			s.who = n.Addr
			all = append(all, s)
		}
	}
	for _, g := range merge(all) {
		d.add(groupEvent(g, "cluster", reports.EventClusterFail, "cluster_state:fail on "))
	}
}

// peerTrouble: peers flagging a node fail?/fail (node-fail), or their
// cluster-bus link to it disconnected (link-down, unless inside a
// node-fail of the same node).
func (d *detection) peerTrouble() {
	ids := map[string]bool{}
	for _, n := range d.nodes {
		for _, s := range n.Series {
			for id := range s.PeerFlags {
				ids[id] = true
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		addr := d.addrOf(id)
		fails := d.flagSpans(id, "fail")
		for _, g := range merge(fails) {
			d.add(groupEvent(g, addr, reports.EventNodeFail, "flagged by "))
		}
		for _, g := range merge(d.flagSpans(id, "disconnected")) {
			e := groupEvent(g, addr, reports.EventLinkDown, "cluster-bus link disconnected as seen by ")
			if !slices.ContainsFunc(fails, func(f span) bool { return f.from <= e.TimeS && e.End() <= f.to }) {
				d.add(e)
			}
		}
	}
}

// flagSpans is every observer's spans of flagging node id with word in
// its peer flags ("fail" matches fail? and fail).
func (d *detection) flagSpans(id, word string) []span {
	var out []span
	for _, n := range d.nodes {
		seen := map[string]bool{}
		for _, s := range spans(n.Series, func(s reports.NodeSample) (bool, bool) {
			f := s.PeerFlags[id]
			if strings.Contains(f, word) {
				for _, w := range strings.Split(f, ",") {
					seen[w] = true
				}
			}
			return strings.Contains(f, word), s.Error == "" && s.NodeID != ""
		}) {
			s.who = n.Addr
			if word == "fail" {
				var ws []string
				for _, w := range []string{"fail?", "fail"} {
					if seen[w] {
						ws = append(ws, w)
					}
				}
				s.note = strings.Join(ws, " then ")
			}
			out = append(out, s)
		}
	}
	return out
}

// replicationLinks: a replica's master_link_status down.
func (d *detection) replicationLinks() {
	for _, n := range d.nodes {
		master := ""
		for _, s := range spans(n.Series, func(s reports.NodeSample) (bool, bool) {
			if s.LinkStatus == "down" && s.Master != "" {
				master = s.Master
			}
			return s.Role == "replica" && s.LinkStatus == "down", s.Error == ""
		}) {
			s.who = n.Addr
			d.add(groupEvent([]span{s}, n.Addr, reports.EventLinkDown,
				fmt.Sprintf("master_link_status:down (master %s) on ", orUnknown(master))))
		}
	}
}

// resyncs: a master's sync_full rising between two answers of one run_id;
// a replica's master_sync_in_progress is folded into its master's event
// when there is one near it, else an event of its own.
func (d *detection) resyncs() {
	for _, n := range d.nodes {
		ok := answered(n)
		for i := 1; i < len(ok); i++ {
			p, c := ok[i-1], ok[i]
			if p.RunID == c.RunID && c.SyncFull > p.SyncFull {
				d.add(reports.Event{TimeS: c.TS, Node: n.Addr, What: reports.EventFullResync,
					Evidence: fmt.Sprintf("sync_full %d → %d between %.1f s and %.1f s (a replica resynced in full)", p.SyncFull, c.SyncFull, p.TS, c.TS)})
			}
		}
	}
	for _, n := range d.nodes {
		master := ""
		for _, s := range spans(n.Series, func(s reports.NodeSample) (bool, bool) {
			if s.SyncInProgress && s.Master != "" {
				master = s.Master
			}
			return s.Role == "replica" && s.SyncInProgress, s.Error == ""
		}) {
			note := fmt.Sprintf("replica %s in master_sync_in_progress %.1f–%.1f s", n.Addr, s.from, s.to)
			i := slices.IndexFunc(d.out, func(e reports.Event) bool {
				return e.What == reports.EventFullResync && e.Node == master &&
					e.TimeS >= s.from-2*d.interval && e.TimeS <= s.to+2*d.interval
			})
			if i >= 0 {
				d.out[i].Evidence += "; " + note
				continue
			}
			d.add(reports.Event{TimeS: s.from, DurationS: round3(s.to - s.from), Node: n.Addr,
				What: reports.EventFullResync, Evidence: note + fmt.Sprintf(" (master %s)", orUnknown(master))})
		}
	}
}

// unreachable: two or more rounds in a row without an answer.
func (d *detection) unreachable() {
	for _, n := range d.nodes {
		for i := 0; i < len(n.Series); {
			j := i
			for j < len(n.Series) && n.Series[j].Error != "" {
				j++
			}
			if j-i >= 2 {
				to, still := n.Series[j-1].TS, j == len(n.Series)
				if !still {
					to = n.Series[j].TS
				}
				ev := fmt.Sprintf("%d rounds without an answer from %.1f s: %s", j-i, n.Series[i].TS, truncateText(n.Series[i].Error, 80))
				if still {
					ev += " (still at the last sample)"
				}
				d.add(reports.Event{TimeS: n.Series[i].TS, DurationS: round3(to - n.Series[i].TS), Node: n.Addr,
					What: reports.EventUnreachable, Evidence: ev})
			}
			i = max(j, i+1)
		}
	}
}
