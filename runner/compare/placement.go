package compare

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"seckill-harness/compose"
	"seckill-harness/lua"
)

// Placement is where an activity's buckets live: the slot of each bucket's
// stock key (CLUSTER KEYSLOT, asked of the cluster) and the master owning
// that slot, the buckets per master, and the ceiling that implies.
//
// Users are spread evenly over buckets, and every operation of a bucket
// runs on the master of its slot, so the busiest master carries
// BusiestShare of the load: with one master's capacity C, the activity
// holds at most C / BusiestShare, i.e. Ceiling = 1 / BusiestShare times a
// single slot's capacity (1 bucket: 1.0; 4 buckets as 2/1/1 on three
// masters: 2.0; spread evenly over three masters: 3.0).
type Placement struct {
	Buckets []BucketPlacement `json:"buckets"`
	// PerMaster is the number of buckets per master address (every master
	// of the cluster, those with none included).
	PerMaster    map[string]int `json:"per_master"`
	BusiestShare float64        `json:"busiest_share"`
	Ceiling      float64        `json:"ceiling"`
}

// BucketPlacement is one bucket's slot and owner.
type BucketPlacement struct {
	Bucket uint32 `json:"bucket"`
	Key    string `json:"stock_key"`
	Slot   int    `json:"slot"`
	Master string `json:"master"`
}

// PlacementOf asks the cluster for the slot of each bucket's stock key and
// that slot's owner.
func PlacementOf(ctx context.Context, cl compose.Cluster, act *lua.Activity) (*Placement, error) {
	nodes, err := cl.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	p := &Placement{PerMaster: map[string]int{}}
	var anyAddr string
	for _, n := range nodes {
		if n.Role == "master" {
			p.PerMaster[n.Addr] = 0
			anyAddr = n.Addr
		}
	}
	if anyAddr == "" {
		return nil, fmt.Errorf("placement: the cluster reports no master")
	}
	adm, err := cl.Admin(anyAddr)
	if err != nil {
		return nil, err
	}
	for b := uint32(0); b < act.Buckets; b++ {
		key := act.Scope(b).StockKey()
		slot, err := adm.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return nil, fmt.Errorf("placement: CLUSTER KEYSLOT %s: %w", key, err)
		}
		owner, err := cl.MasterOfSlot(ctx, int(slot))
		if err != nil {
			return nil, fmt.Errorf("placement: owner of slot %d: %w", slot, err)
		}
		p.Buckets = append(p.Buckets, BucketPlacement{Bucket: b, Key: key, Slot: int(slot), Master: owner.Addr})
		p.PerMaster[owner.Addr]++
	}
	p.settle()
	return p, nil
}

// settle derives BusiestShare and Ceiling from the bucket counts.
func (p *Placement) settle() {
	total, busiest := 0, 0
	for _, n := range p.PerMaster {
		total += n
		busiest = max(busiest, n)
	}
	if busiest > 0 {
		p.BusiestShare = float64(busiest) / float64(total)
		p.Ceiling = 1 / p.BusiestShare
	}
}

// Spread is the buckets per master, busiest first, e.g. "2/1/1" (masters
// without a bucket show as 0).
func (p *Placement) Spread() string {
	counts := make([]int, 0, len(p.PerMaster))
	for _, n := range p.PerMaster {
		counts = append(counts, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	parts := make([]string, len(counts))
	for i, n := range counts {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, "/")
}
