package checks

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// judgeK1: every key of the activity the path's contract names expires,
// and no later than the activity's retention time.
func judgeK1(f *Facts) Verdict {
	kf := f.Keys
	if kf == nil {
		return Verdict{Evidence: map[string]any{"keys_checked": 0}}
	}
	sp := &kf.Space
	ev := map[string]any{"keys_checked": sp.KeysChecked, "keys_by_kind": sp.KeysByKind, "path_keys": kf.PathKeys,
		"retention_until_ms": sp.RetentionUntilMs, "latest_expiry_ms": sp.LatestExpiryMs, "expiry_read": sp.ExpiryRead,
		"keys_without_ttl": sp.KeysWithoutTTL, "keys_beyond_retention": sp.KeysBeyondRetention}
	bad := sp.KeysWithoutTTL + sp.KeysBeyondRetention
	ev["leaked_keys"] = bad
	allowance := ""
	if len(sp.ExpiryAllowances) > 0 {
		ev["expiry_allowances"], ev["keys_within_expiry_allowance"] = sp.ExpiryAllowances, sp.KeysWithinAllowance
		var per []string
		for _, al := range sp.ExpiryAllowances {
			per = append(per, fmt.Sprintf("bucket %d (slot %d) +%d ms", al.Bucket, al.Slot, al.AllowanceMs))
		}
		allowance = fmt.Sprintf("; allowed beyond it, as measured during the run: %s (%d keys used it)", strings.Join(per, ", "), sp.KeysWithinAllowance)
	}
	if bad == 0 {
		return Verdict{Detail: fmt.Sprintf("all %d keys of the activity expire by its retention time %s (%d written by the path)%s",
			sp.KeysChecked, time.UnixMilli(sp.RetentionUntilMs).UTC().Format(time.RFC3339), kf.PathKeys, allowance), Evidence: ev}
	}
	var parts []string
	if sp.KeysWithoutTTL > 0 {
		ev["without_ttl"] = kf.WithoutTTL[:min(len(kf.WithoutTTL), maxListed)]
		parts = append(parts, fmt.Sprintf("%d keys without a TTL (first: %s)", sp.KeysWithoutTTL, strings.Join(kf.WithoutTTL[:min(len(kf.WithoutTTL), 3)], ", ")))
	}
	if sp.KeysBeyondRetention > 0 {
		ev["beyond_retention"] = kf.BeyondRetention[:min(len(kf.BeyondRetention), maxListed)]
		first := kf.BeyondRetention[0]
		parts = append(parts, fmt.Sprintf("%d keys expiring after the retention time (first: %s at %s)", sp.KeysBeyondRetention,
			first.Key, time.UnixMilli(first.ExpiresAtMs).UTC().Format(time.RFC3339)))
	}
	return Verdict{Failed: true, Detail: fmt.Sprintf("%s: they outlive the sale (retention until %s%s)", strings.Join(parts, "; "),
		time.UnixMilli(sp.RetentionUntilMs).UTC().Format(time.RFC3339), allowance), Evidence: ev}
}

// vacuousK1: the path left no key of its own (no request result,
// reservation, marker, zset or sold-out flag): only the harness's set-up
// was there to judge.
func vacuousK1(f *Facts, _ Verdict) string {
	switch {
	case f.Keys == nil:
		return "the activity's keys were not read"
	case f.Keys.PathKeys == 0:
		return fmt.Sprintf("the path left no key of its own (%d set-up keys checked)", f.Keys.Space.KeysChecked)
	}
	return ""
}

// EvictionFacts are the servers' evicted_keys counters over the run: per
// node, the keys it evicted between a read before the load and one after
// the run settled (a node that restarted counts from its restart).
type EvictionFacts struct {
	Nodes []NodeEvictions
	// Unread names the nodes whose counters could not be read at one of
	// the two ends (their evictions are unknown).
	Unread []string
}

// NodeEvictions is one node's evictions during the run.
type NodeEvictions struct {
	Node    string `json:"node"`
	Role    string `json:"role"`
	Evicted int64  `json:"evicted_keys"`
	// Restarted: the node's run_id changed, so its count starts at its restart.
	Restarted bool `json:"restarted,omitempty"`
}

// judgeK2: no node evicted a key while the run went on.
func judgeK2(f *Facts) Verdict {
	ef := f.Evictions
	if ef == nil {
		return Verdict{Evidence: map[string]any{"nodes_read": 0}}
	}
	var total int64
	var evicting []NodeEvictions
	for _, n := range ef.Nodes {
		total += n.Evicted
		if n.Evicted > 0 {
			evicting = append(evicting, n)
		}
	}
	ev := map[string]any{"evicted_keys": total, "nodes_read": len(ef.Nodes)}
	if len(ef.Unread) > 0 {
		ev["unread"] = ef.Unread
	}
	if total == 0 {
		return Verdict{Detail: fmt.Sprintf("no key evicted on the %d nodes read (evicted_keys unchanged from before the load to after the run)", len(ef.Nodes)), Evidence: ev}
	}
	sort.Slice(evicting, func(i, j int) bool { return evicting[i].Evicted > evicting[j].Evicted })
	ev["nodes"] = evicting
	var parts []string
	for _, n := range evicting {
		parts = append(parts, fmt.Sprintf("%s (%s) evicted %d", n.Node, n.Role, n.Evicted))
	}
	return Verdict{Failed: true, Detail: fmt.Sprintf("%d keys evicted during the run: %s — a full node drops keys instead of refusing writes (maxmemory-policy must be noeviction)",
		total, strings.Join(parts, ", ")), Evidence: ev}
}

// vacuousK2: the servers' counters were not read (a re-check with
// verify, which has no view of the servers during the run).
func vacuousK2(f *Facts, _ Verdict) string {
	switch {
	case f.Evictions == nil:
		return "the servers' evicted_keys counters were not read during the run (verify re-judges without them)"
	case len(f.Evictions.Nodes) == 0:
		return "no node's evicted_keys counter could be read at both ends of the run"
	}
	return ""
}
