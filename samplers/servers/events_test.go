package servers

import (
	"fmt"
	"strings"
	"testing"

	"seckill-harness/reports"
)

// The fixtures are series as report.json's servers.nodes carries them:
// three masters (7000-7002) and a replica of 7001 (7004), one sample a
// second. Facts first (DetectEvents), then attribution (Attribute).

const (
	m0, m1, m2, r1 = "127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7004"
)

// healthy is n seconds of a node in role (replica of master) with nothing wrong.
func healthy(addr, role, master string, n int) reports.ServerNode {
	node := reports.ServerNode{Addr: addr, Role: role, Master: master}
	for i := 0; i < n; i++ {
		s := reports.NodeSample{TS: float64(i), Role: role, NodeID: "id-" + addr, RunID: "run-" + addr,
			UptimeS: int64(100 + i), ClusterState: "ok", SyncFull: 1}
		if role == "replica" {
			s.Master, s.LinkStatus, s.SyncFull = master, "up", 0
		}
		node.Series = append(node.Series, s)
	}
	return node
}

func cluster(n int) []reports.ServerNode {
	return []reports.ServerNode{healthy(m0, "master", "", n), healthy(m1, "master", "", n),
		healthy(m2, "master", "", n), healthy(r1, "replica", m1, n)}
}

// pausedMaster: 7001 stops answering at 5 s; its peers flag it fail? at 6 s
// and fail at 7 s, cluster_state:fail on the others 7-8 s; 7004 is
// promoted at 8 s; 7001 answers again at 11 s as a replica of 7004 and
// the flags clear.
func pausedMaster() []reports.ServerNode {
	ns := cluster(15)
	for i := 5; i < 11; i++ {
		ns[1].Series[i] = reports.NodeSample{TS: float64(i), Error: "i/o timeout"}
	}
	for i := 11; i < 15; i++ {
		s := &ns[1].Series[i]
		s.Role, s.Master, s.LinkStatus, s.SyncFull = "replica", r1, "up", 0
	}
	for _, k := range []int{0, 2} {
		for i := 6; i < 11; i++ {
			flag := "fail"
			if i == 6 {
				flag = "fail?"
			}
			ns[k].Series[i].PeerFlags = map[string]string{"id-" + m1: flag}
		}
		ns[k].Series[7].ClusterState = "fail"
	}
	for i := 5; i < 8; i++ {
		ns[3].Series[i].LinkStatus = "down"
	}
	for i := 8; i < 15; i++ {
		s := &ns[3].Series[i]
		s.Role, s.Master, s.LinkStatus = "master", "", ""
	}
	for i := 12; i < 15; i++ {
		ns[3].Series[i].SyncFull = 1 // 7001 resynced from it in full
	}
	return ns
}

func whats(evs []reports.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s@%s@%g", e.What, e.Node, e.TimeS))
	}
	return strings.Join(out, " ")
}

func find(evs []reports.Event, what, node string) *reports.Event {
	for i := range evs {
		if evs[i].What == what && evs[i].Node == node {
			return &evs[i]
		}
	}
	return nil
}

func TestDetectEventsQuietClusterHasNone(t *testing.T) {
	if evs := DetectEvents(cluster(20), 1); len(evs) != 0 {
		t.Fatalf("a quiet cluster shows events: %s", whats(evs))
	}
}

func TestDetectEventsAutomaticFailover(t *testing.T) {
	evs := DetectEvents(pausedMaster(), 1)
	af := find(evs, reports.EventAutomaticFailover, m1)
	if af == nil || af.TimeS != 8 {
		t.Fatalf("no automatic-failover of %s at 8 s: %s", m1, whats(evs))
	}
	for _, want := range []string{"replica " + r1 + " promoted", "flagged by", "rejoined as a replica of " + r1 + " at 11.0 s"} {
		if !strings.Contains(af.Evidence, want) {
			t.Errorf("evidence %q lacks %q", af.Evidence, want)
		}
	}
	if e := find(evs, reports.EventRoleChange, m1); e != nil {
		t.Errorf("the old master's demotion is part of the failover, not a role change of its own: %+v", e)
	}
	for _, w := range []struct {
		what, node string
		at, dur    float64
	}{
		{reports.EventUnreachable, m1, 5, 6},
		{reports.EventNodeFail, m1, 6, 5},
		{reports.EventClusterFail, "cluster", 7, 1},
		{reports.EventLinkDown, r1, 5, 3},
		{reports.EventFullResync, r1, 12, 0},
	} {
		e := find(evs, w.what, w.node)
		if e == nil || e.TimeS != w.at || e.DurationS != w.dur {
			t.Errorf("want %s of %s at %g s for %g s; got %+v in %s", w.what, w.node, w.at, w.dur, e, whats(evs))
		}
	}
	if e := find(evs, reports.EventNodeFail, m1); e != nil && !strings.Contains(e.Evidence, "fail? then fail") {
		t.Errorf("node-fail evidence %q: want the flags' progression", e.Evidence)
	}
}

// A replica promoted while its master answered and nobody flagged it is a
// (manual) failover, not an automatic one.
func TestDetectEventsManualFailover(t *testing.T) {
	ns := cluster(10)
	for i := 4; i < 10; i++ {
		ns[1].Series[i].Role, ns[1].Series[i].Master = "replica", r1
		ns[3].Series[i].Role, ns[3].Series[i].Master = "master", ""
	}
	evs := DetectEvents(ns, 1)
	if len(evs) != 1 || evs[0].What != reports.EventFailover || evs[0].Node != m1 || evs[0].TimeS != 4 {
		t.Fatalf("want one failover of %s at 4 s, got %s", m1, whats(evs))
	}
}

func TestDetectEventsRestartAndLoneDemotion(t *testing.T) {
	ns := cluster(10)
	for i := 6; i < 10; i++ {
		ns[2].Series[i].RunID, ns[2].Series[i].UptimeS = "run-new", int64(i-5)
	}
	for i := 7; i < 10; i++ {
		ns[0].Series[i].Role, ns[0].Series[i].Master = "replica", m2
	}
	evs := DetectEvents(ns, 1)
	if e := find(evs, reports.EventRestart, m2); e == nil || e.TimeS != 5 || !strings.Contains(e.Evidence, "run_id") {
		t.Errorf("want a restart of %s at 5 s (6 s - 1 s of uptime): %s", m2, whats(evs))
	}
	if e := find(evs, reports.EventRoleChange, m0); e == nil || e.TimeS != 7 {
		t.Errorf("want a role-change of %s at 7 s: %s", m0, whats(evs))
	}
	// The uptime alone going back is a restart too.
	ns = cluster(10)
	ns[0].Series[4].UptimeS = 1
	if e := find(DetectEvents(ns, 1), reports.EventRestart, m0); e == nil {
		t.Error("uptime going back: no restart")
	}
}

// A single missed round is not an outage; a counter read across a restart
// is not a resync.
func TestDetectEventsIgnoresOneMissedRoundAndCountersAcrossRestart(t *testing.T) {
	ns := cluster(10)
	ns[0].Series[3] = reports.NodeSample{TS: 3, Error: "timeout"}
	ns[2].Series[6].RunID, ns[2].Series[6].SyncFull = "run-x", 5
	ns[2].Series[6].UptimeS = 1
	evs := DetectEvents(ns, 1)
	if find(evs, reports.EventUnreachable, m0) != nil || find(evs, reports.EventFullResync, m2) != nil {
		t.Errorf("false events: %s", whats(evs))
	}
}

func TestAttributeToThePlannedFaultThatDeclaresIt(t *testing.T) {
	evs := DetectEvents(pausedMaster(), 1)
	pause := Cause{Name: "failover:mode=pause", FromS: 4.8, ToS: 11, Expected: []reports.ExpectedEvent{
		{What: reports.EventAutomaticFailover, Nodes: []string{m1, r1}},
		{What: reports.EventNodeFail, Nodes: []string{m1, r1}},
		{What: reports.EventUnreachable, Nodes: []string{m1, r1}},
		{What: reports.EventLinkDown, Nodes: []string{m1, r1}},
		{What: reports.EventFullResync, Nodes: []string{m1, r1}},
		{What: reports.EventClusterFail},
	}}
	un, at := Attribute(evs, []Cause{pause}, 1)
	if len(un) != 0 || len(at) != len(evs) {
		t.Fatalf("planned pause: unplanned %s", whats(un))
	}
	for _, e := range at {
		if e.Fault != pause.Name {
			t.Errorf("%s attributed to %q", e.What, e.Fault)
		}
	}
	// The same fault on another master explains only the cluster-wide part.
	other := pause
	for i := range other.Expected {
		if other.Expected[i].Nodes != nil {
			other.Expected[i].Nodes = []string{m2}
		}
	}
	un, _ = Attribute(evs, []Cause{other}, 1)
	if find(un, reports.EventAutomaticFailover, m1) == nil || find(un, reports.EventClusterFail, "cluster") != nil {
		t.Errorf("fault on %s: unplanned %s", m2, whats(un))
	}
	// A graceful failover declares no automatic one: a starved host's is surfaced.
	graceful := Cause{Name: "failover", FromS: 4.8, ToS: 11, Expected: []reports.ExpectedEvent{
		{What: reports.EventFailover, Nodes: []string{m1, r1}}, {What: reports.EventRoleChange, Nodes: []string{m1, r1}}}}
	un, _ = Attribute(evs, []Cause{graceful}, 1)
	if find(un, reports.EventAutomaticFailover, m1) == nil {
		t.Errorf("graceful failover explained an automatic one: %s", whats(un))
	}
	// Outside the window (and its settle period) nothing is explained.
	late := pause
	late.FromS, late.ToS = 30, 40
	if un, _ = Attribute(evs, []Cause{late}, 1); len(un) != len(evs) {
		t.Errorf("a fault at 30-40 s explained events at 5-12 s: unplanned %s", whats(un))
	}
	early := pause
	early.FromS, early.ToS = 0, 8-SettleS-1.5
	if un, _ = Attribute(evs, []Cause{early}, 1); find(un, reports.EventAutomaticFailover, m1) == nil {
		t.Error("a fault healed more than the settle period before explained the failover")
	}
}
