package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
)

// Each kind that acts on Redis masters names them, and says whether the
// sale chose them: hot-master (and, for a failover, hot-replica, which
// acts on that master) yes; node=, slot=, all-masters, a slot number no.
// A replica a toxic or a partition acts on is never among the masters:
// it serves no client.
func TestAimedAtNamesMastersAndWhetherTheSaleChoseThem(t *testing.T) {
	m := compose.Node{Addr: "127.0.0.1:7000", Role: "master"}
	r := compose.Node{Addr: "127.0.0.1:7003", Role: "replica"}
	for _, c := range []struct {
		name   string
		f      Aimed
		want   []string
		bySale bool
	}{
		{"toxic at hot-master", &toxicFault{target: Target{Role: TargetHotMaster}, nodes: []compose.Node{m}}, []string{m.Addr}, true},
		{"toxic at hot-replica", &toxicFault{target: Target{Role: TargetHotReplica}, nodes: []compose.Node{r}}, nil, false},
		{"partition at node=", &partitionFault{target: Target{Role: TargetNode, Node: m.Addr}, nodes: []compose.Node{m}}, []string{m.Addr}, false},
		{"partition at all-masters", &partitionFault{target: Target{Role: TargetAllMasters}, nodes: []compose.Node{m, r}}, []string{m.Addr}, false},
		{"failover at hot-replica", &Failover{cfg: failoverConfig{target: Target{Role: TargetHotReplica}}, aim: failoverAim{old: m}}, []string{m.Addr}, true},
		{"failover at slot=", &Failover{cfg: failoverConfig{target: Target{Role: TargetSlotMaster, Node: "5"}}, aim: failoverAim{old: m}}, []string{m.Addr}, false},
		{"slot-migration of the hot slot", &SlotMigration{slots: "hot", plans: []*slotMove{{src: m}}}, []string{m.Addr}, true},
		{"slot-migration of slot 5", &SlotMigration{slots: "5", plans: []*slotMove{{src: m}}}, []string{m.Addr}, false},
		{"slow-aof at hot-master", &SlowAOF{target: Target{}, nodes: []*aofNode{{node: m}}}, []string{m.Addr}, true},
	} {
		got, bySale := c.f.AimedAt()
		if !slices.Equal(got, c.want) || bySale != c.bySale {
			t.Errorf("%s: AimedAt = %v, %v; want %v, %v", c.name, got, bySale, c.want, c.bySale)
		}
	}
}

type quietTraffic struct{}

func (quietTraffic) Served(from, to time.Time) map[string]int64 {
	return map[string]int64{"127.0.0.1:7000": 0}
}
func (quietTraffic) ServedNow(ctx context.Context) map[string]int64 { return nil }

// Without the sale's slots and with no traffic of the system seen, a
// hot-master has nothing to aim at: the error says so and names the fix.
func TestObservedTargetWithoutTrafficIsRefused(t *testing.T) {
	env := &Env{Traffic: quietTraffic{}}
	_, err := env.saleSlots(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no Redis traffic of the system under test") || !strings.Contains(err.Error(), "hash_tag") {
		t.Fatalf("saleSlots = %v, want the refusal naming hash_tag", err)
	}
	if got := env.ChosenBy(); got != AimObserved {
		t.Fatalf("ChosenBy = %q, want %q", got, AimObserved)
	}
}
