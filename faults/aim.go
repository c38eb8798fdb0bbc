package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
)

// How the slots the hot-* targets aim at were chosen: report.json's
// faults[].evidence.target_chosen_by and aim.chosen_by. A system under
// test that says where it keeps its sale (sut.SaleKeys) names its
// own source instead ("adapter hash_tag {…}", "service mapping hash_tag
// {…}").
const (
	// AimReference: the reference contract's keys of the activity's buckets.
	AimReference = "reference contract keys"
	// AimObserved: nothing says where the system keeps its sale; the
	// master that served the most of its Redis traffic in the
	// ObserveWindow before the injection, and the slot of it holding the
	// most keys.
	AimObserved = "observed traffic"
)

// ObserveWindow is how far back before an injection the system's Redis
// traffic is read: to choose an observed target, and for the share of it
// each fault's target served (report.json's sut_traffic_share).
const ObserveWindow = 5 * time.Second

// Traffic is what the run observes of the system under test's Redis
// traffic: by master address, the commands each master ran for the
// system's clients in (from, to] as the sampler's rounds counted them
// (servers.Sampler.Served), and since its latest round, read now
// (ServedNow).
type Traffic interface {
	Served(from, to time.Time) map[string]int64
	ServedNow(ctx context.Context) map[string]int64
}

// Aimed is the ability of a fault whose Redis master is chosen by where
// the system under test keeps its sale to name the masters it acted on,
// resolved at Inject. Failover, partition, slot-migration, the toxics
// (latency, bandwidth, slicer, disconnect-before-reply), aof-rewrite,
// slow-aof and oom have it: their hot-master (and, for failover,
// hot-replica: the replica's master) and slot-migration's slots=hot|all
// follow the sale, so bySale is true;
// an explicit target (node=, slot=, all-masters, a slot number) acts where
// the scenario says, on purpose, and bySale is false. The lifecycle states
// the share of the system's Redis traffic those masters served in the
// ObserveWindow before the injection, and a fault aimed by the sale whose
// masters served none of it missed the system under test: the run is
// inconclusive. Faults without the ability (slot-down, script-flush,
// the replica faults, the service faults acting on the service's
// process, the pipeline faults) are outside that rule, and so is a
// replica a kind acts on (it serves no client: never in masters).
type Aimed interface {
	AimedAt() (masters []string, bySale bool)
}

// traffic is e.Traffic, or nil when e, the field or the pointer in it is nil.
func (e *Env) traffic() Traffic {
	if e == nil || isNil(e.Traffic) {
		return nil
	}
	return e.Traffic
}

// ChosenBy is how the hot-* targets are chosen in e: AimObserved without
// HotSlots, else e.AimedBy (AimReference when empty).
func (e *Env) ChosenBy() string {
	switch {
	case len(e.HotSlots) == 0:
		return AimObserved
	case e.AimedBy != "":
		return e.AimedBy
	}
	return AimReference
}

// saleSlots are the slots the hot-* targets aim at, the hot one first:
// e.HotSlots, or, without them and with e.Traffic, the observed one
// (AimObserved), read now.
func (e *Env) saleSlots(ctx context.Context) ([]int, error) {
	if len(e.HotSlots) > 0 {
		return e.HotSlots, nil
	}
	tr := e.traffic()
	if tr == nil {
		return nil, errors.New("env.HotSlots is empty (no activity slot to aim at)")
	}
	now := time.Now()
	served := map[string]int64{}
	for a, n := range tr.Served(now.Add(-ObserveWindow), now) {
		served[a] += n
	}
	for a, n := range tr.ServedNow(ctx) {
		served[a] += n
	}
	busiest, most := "", int64(0)
	for a, n := range served {
		if n > most || n == most && a < busiest {
			busiest, most = a, n
		}
	}
	if most == 0 {
		return nil, fmt.Errorf("no Redis traffic of the system under test observed in the %s before the injection, so there is no sale to aim at: give the service mapping a hash_tag (its keys' hash tag), or inject later in the load", ObserveWindow)
	}
	nodes, err := e.nodes(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Addr == busiest && n.Role == "master" {
			slot, err := e.fullestSlot(ctx, n)
			if err != nil {
				return nil, fmt.Errorf("observed sale on %s (%d commands in %s): %w", busiest, most, ObserveWindow, err)
			}
			return []int{slot}, nil
		}
	}
	return nil, fmt.Errorf("the master that served the system's traffic (%s) is no master now", busiest)
}

// fullestSlot is the slot of master n that holds the most keys
// (CLUSTER COUNTKEYSINSLOT over every slot n owns, in one pipeline).
func (e *Env) fullestSlot(ctx context.Context, n compose.Node) (int, error) {
	cl, err := e.cluster().Admin(n.Addr)
	if err != nil {
		return 0, err
	}
	var slots []int
	var cmds []*redis.IntCmd
	_, err = cl.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range n.Slots {
			for s := r[0]; s <= r[1]; s++ {
				slots = append(slots, s)
				cmds = append(cmds, p.ClusterCountKeysInSlot(ctx, s))
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("CLUSTER COUNTKEYSINSLOT: %w", err)
	}
	best, keys := -1, int64(0)
	for i, c := range cmds {
		if c.Val() > keys {
			best, keys = slots[i], c.Val()
		}
	}
	if best < 0 {
		return 0, errors.New("it holds no key")
	}
	return best, nil
}

// bySale reports whether role t is chosen from where the sale is: the
// hot master or a replica of it (a failover acts on that master either way).
func (t Target) bySale() bool {
	return t.isHotMaster() || t.Role == TargetHotReplica
}

// isHotMaster reports whether t is the hot master (the default).
func (t Target) isHotMaster() bool { return t.Role == TargetHotMaster || t.Role == "" }

// AimedAt implements Aimed: the master the failover acted on (the target,
// or the master of the target replica).
func (f *Failover) AimedAt() ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.aim.old.Addr == "" {
		return nil, f.cfg.target.bySale()
	}
	return []string{f.aim.old.Addr}, f.cfg.target.bySale()
}

// AimedAt implements Aimed: the partitioned masters (a partitioned
// replica serves no client: none).
func (f *partitionFault) AimedAt() ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return masterAddrs(f.nodes), f.target.isHotMaster()
}

// AimedAt implements Aimed: the masters whose proxies carry the toxic
// (latency, bandwidth, slicer, disconnect-before-reply; a replica's proxy
// carries no client's commands: none).
func (f *toxicFault) AimedAt() ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return masterAddrs(f.nodes), f.target.isHotMaster()
}

// AimedAt implements Aimed: the master whose AOF was rewritten.
func (f *AOFRewrite) AimedAt() ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node == nil {
		return nil, f.target.isHotMaster()
	}
	return masterAddrs([]compose.Node{*f.node}), f.target.isHotMaster()
}

// AimedAt implements Aimed: the masters whose AOF was slowed.
func (f *SlowAOF) AimedAt() ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ns []compose.Node
	for _, n := range f.nodes {
		ns = append(ns, n.node)
	}
	return masterAddrs(ns), f.target.isHotMaster()
}

// AimedAt implements Aimed: the nodes whose memory was filled (oom acts
// on masters).
func (f *OOM) AimedAt() ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, n := range f.nodes {
		out = append(out, n.addr)
	}
	return out, f.target.isHotMaster()
}

// masterAddrs are the addresses of the masters among ns.
func masterAddrs(ns []compose.Node) []string {
	var out []string
	for _, n := range ns {
		if n.Role == "master" {
			out = append(out, n.Addr)
		}
	}
	return out
}

// AimedAt implements Aimed: the masters the migrated slots left.
func (m *SlotMigration) AimedAt() ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, p := range m.plans {
		out = append(out, p.src.Addr)
	}
	return out, m.slots == "hot" || m.slots == "all"
}

var (
	_ Aimed = (*Failover)(nil)
	_ Aimed = (*partitionFault)(nil)
	_ Aimed = (*SlotMigration)(nil)
	_ Aimed = (*toxicFault)(nil)
	_ Aimed = (*AOFRewrite)(nil)
	_ Aimed = (*SlowAOF)(nil)
	_ Aimed = (*OOM)(nil)
)
