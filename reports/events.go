package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The kinds of events the cluster's own view shows (Event.What). The
// servers sampler detects them (servers.DetectEvents); a fault kind
// declares the ones it causes (faults.Expecting); a scenario may tolerate
// some (tolerate_events). The names are a contract: add, never rename.
const (
	// EventAutomaticFailover: a replica was promoted while its master was
	// flagged failing by its peers or did not answer (the cluster failed it
	// over by itself). Node: the master that lost its slots.
	EventAutomaticFailover = "automatic-failover"
	// EventFailover: a replica was promoted while its master answered and
	// no peer flagged it (a CLUSTER FAILOVER, e.g. a fail-back). Node: the
	// master that lost its slots.
	EventFailover = "failover"
	// EventRoleChange: a master became a replica without a failover of it
	// seen before. Node: that node.
	EventRoleChange = "role-change"
	// EventRestart: the node's run_id changed or its uptime went back.
	EventRestart = "restart"
	// EventClusterFail: nodes reported cluster_state:fail. Node: "cluster"
	// (the evidence names the nodes).
	EventClusterFail = "cluster-fail"
	// EventNodeFail: peers flagged the node fail? (PFAIL) or fail in
	// CLUSTER NODES. Node: the flagged node.
	EventNodeFail = "node-fail"
	// EventLinkDown: peers' cluster-bus link to the node was disconnected
	// (CLUSTER NODES link-state), or a replica's master_link_status was
	// down. Node: the node the link leads to (the replica for a
	// replication link).
	EventLinkDown = "link-down"
	// EventFullResync: a master's sync_full rose (a replica resynced in
	// full), or a replica reported master_sync_in_progress. Node: that
	// master (or the replica, when its master's counter did not show it).
	EventFullResync = "full-resync"
	// EventUnreachable: the node did not answer the sampler for at least
	// two rounds in a row.
	EventUnreachable = "unreachable"
	// EventHarnessStall: the harness's own process was starved (the host
	// view's stalls); not detected by the sampler.
	EventHarnessStall = "harness-stall"
)

// EventKind documents one kind of event.
type EventKind struct {
	Name, Help string
}

// EventKinds lists every kind of event, most telling first (the order in
// which a verdict line or a check's detail names them).
func EventKinds() []EventKind {
	return []EventKind{
		{EventAutomaticFailover, "a replica promoted while its master was flagged failing or did not answer"},
		{EventFailover, "a replica promoted while its master answered (CLUSTER FAILOVER)"},
		{EventRestart, "a node's run_id changed or its uptime went back"},
		{EventRoleChange, "a master became a replica with no failover of it seen"},
		{EventClusterFail, "cluster_state:fail on one or more nodes"},
		{EventFullResync, "a replica resynced in full (sync_full rose, or master_sync_in_progress)"},
		{EventNodeFail, "peers flagged a node fail? or fail"},
		{EventUnreachable, "a node did not answer the sampler for two rounds or more"},
		{EventLinkDown, "a cluster-bus link disconnected, or a replica's master link down"},
		{EventHarnessStall, "the harness's own process stalled (host starvation)"},
	}
}

// IsEventKind reports whether name is one of EventKinds.
func IsEventKind(name string) bool {
	return slices.ContainsFunc(EventKinds(), func(k EventKind) bool { return k.Name == name })
}

// EventKindNames is every kind's name, in EventKinds order.
func EventKindNames() []string {
	var out []string
	for _, k := range EventKinds() {
		out = append(out, k.Name)
	}
	return out
}

func eventRank(what string) int {
	i := slices.IndexFunc(EventKinds(), func(k EventKind) bool { return k.Name == what })
	if i < 0 {
		return len(EventKinds())
	}
	return i
}

// Event is one thing the cluster did, seen by the servers sampler (or the
// host view): when (seconds since the load started, like the fault
// windows), on which node, what (one of EventKinds) and the evidence.
type Event struct {
	TimeS float64 `json:"time_s"`
	// DurationS is how long a condition lasted (cluster-fail, node-fail,
	// link-down, unreachable, a resync in progress); 0 for an instant.
	DurationS float64 `json:"duration_s,omitempty"`
	Node      string  `json:"node"`
	What      string  `json:"what"`
	Evidence  string  `json:"evidence"`
	// Fault names the planned fault the event is attributed to
	// (attributed_events only).
	Fault string `json:"fault,omitempty"`
	// Tolerated: the scenario's tolerate_events names this kind.
	Tolerated bool `json:"tolerated,omitempty"`
}

// Phrase is the event in a few words: "automatic-failover of
// 127.0.0.1:7001 at 12.3 s".
func (e Event) Phrase() string {
	of := " of " + e.Node
	if e.Node == "" || e.Node == "cluster" || e.Node == "harness" {
		of = ""
	}
	s := fmt.Sprintf("%s%s at %.1f s", e.What, of, e.TimeS)
	if e.DurationS > 0 {
		s += fmt.Sprintf(" for %.1f s", e.DurationS)
	}
	return s
}

// End is when the event ended (TimeS for an instant).
func (e Event) End() float64 { return e.TimeS + e.DurationS }

// ExpectedEvent is one kind of event a planned fault may cause, on Nodes
// (nil: on any node — a cluster-wide effect).
type ExpectedEvent struct {
	What  string
	Nodes []string
}

// CheckEvent is a planned fault window or an unplanned event overlapping
// a failing check's violations.
type CheckEvent struct {
	Planned bool    `json:"planned"`
	TimeS   float64 `json:"time_s"`
	EndS    float64 `json:"end_s"`
	// What is the fault's kind for a planned one ("failover"), the event's
	// kind otherwise.
	What string `json:"what"`
	// Node is the fault's target or the event's node.
	Node string `json:"node,omitempty"`
	// Text is the phrase the check's detail carries.
	Text string `json:"text"`
}

// RankEvents sorts events most telling first (EventKinds order), then by time.
func RankEvents(evs []Event) {
	sort.SliceStable(evs, func(i, j int) bool {
		ri, rj := eventRank(evs[i].What), eventRank(evs[j].What)
		if ri != rj {
			return ri < rj
		}
		return evs[i].TimeS < evs[j].TimeS
	})
}

// namedMax is how many events a verdict line or a detail names.
const namedMax = 3

// NameEvents is a clause naming up to three events, most telling first,
// with how many more there were: "unplanned automatic-failover of
// 127.0.0.1:7001 at 12.3 s, node-fail of … (+4 more)". "" for none.
func NameEvents(prefix string, evs []Event) string {
	if len(evs) == 0 {
		return ""
	}
	evs = slices.Clone(evs)
	RankEvents(evs)
	var parts []string
	for _, e := range evs[:min(len(evs), namedMax)] {
		parts = append(parts, e.Phrase())
	}
	s := prefix + strings.Join(parts, ", ")
	if len(evs) > namedMax {
		s += fmt.Sprintf(" (+%d more)", len(evs)-namedMax)
	}
	return s
}

// Untolerated is the unplanned events the scenario does not tolerate.
func (r *Report) Untolerated() []Event {
	var out []Event
	for _, e := range r.UnplannedEvents {
		if !e.Tolerated {
			out = append(out, e)
		}
	}
	return out
}

// VerdictLine is Verdict followed by the unplanned events the scenario
// does not tolerate ("PASS; unplanned automatic-failover of 127.0.0.1:7001
// at 12.3 s"): the line the text, Markdown and HTML summaries show.
// Verdict itself stays "PASS" or "FAIL (…)" for programs comparing it.
func (r *Report) VerdictLine() string {
	v := r.Verdict()
	if s := NameEvents("unplanned ", r.Untolerated()); s != "" {
		v += "; " + s
	}
	return v
}
