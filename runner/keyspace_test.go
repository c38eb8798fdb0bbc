package runner

import (
	"strings"
	"testing"

	"seckill-harness/reports"
)

// Fixtures of K1 and K2 (listed in invariants_test.go's fixture tables).

// keysClean: a sold-out run whose keys all expire by retention.
func keysClean() *Facts {
	f := soldOut()
	f.Keys = &KeyFacts{PathKeys: 8, Space: reports.KeySpace{RetentionUntilMs: 5000, LatestExpiryMs: 5000, KeysChecked: 10,
		KeysByKind: map[string]int64{"meta": 1, "stock": 1, "resv": 2, "user": 2, "req": 2, "soldout": 1, "send_pending": 1}}}
	return f
}

// keysWithoutTTL: the reservation records were written without a TTL.
func keysWithoutTTL() *Facts {
	f := keysClean()
	f.Keys.WithoutTTL = []string{"seckill:{a:x:s:y:v:1:b:0}:resv:r-a", "seckill:{a:x:s:y:v:1:b:0}:resv:r-b"}
	f.Keys.Space.KeysWithoutTTL = 2
	return f
}

// keysBeyondRetention: a request shard expires after the retention time.
func keysBeyondRetention() *Facts {
	f := keysClean()
	f.Keys.BeyondRetention = []KeyExpiry{{Key: "seckill:{a:x:s:y:v:1:b:0}:req:007", ExpiresAtMs: 9000}}
	f.Keys.Space.KeysBeyondRetention, f.Keys.Space.LatestExpiryMs = 1, 9000
	return f
}

// keysSetUpOnly: nothing but the harness's meta and stock.
func keysSetUpOnly() *Facts {
	f := untouched()
	f.Keys = &KeyFacts{Space: reports.KeySpace{RetentionUntilMs: 5000, KeysChecked: 2, KeysByKind: map[string]int64{"meta": 1, "stock": 1}}}
	return f
}

// keysNotRead: the keys were never read.
func keysNotRead() *Facts { return soldOut() }

// evictionsNone: every node read at both ends, none evicted.
func evictionsNone() *Facts {
	f := soldOut()
	f.Evictions = &EvictionFacts{Nodes: []NodeEvictions{{Node: "127.0.0.1:7000", Role: "master"}, {Node: "127.0.0.1:7001", Role: "replica"}}}
	return f
}

// evictionsOnAMaster: one master evicted 42 keys.
func evictionsOnAMaster() *Facts {
	f := soldOut()
	f.Evictions = &EvictionFacts{Nodes: []NodeEvictions{{Node: "127.0.0.1:7000", Role: "master", Evicted: 42}, {Node: "127.0.0.1:7001", Role: "master"}}}
	return f
}

// evictionsUnread: no node could be read at both ends.
func evictionsUnread() *Facts {
	f := soldOut()
	f.Evictions = &EvictionFacts{Unread: []string{"127.0.0.1:7000"}}
	return f
}

// K1's failure names the keys and counts them; a set-up key without a TTL
// fails even when the path wrote nothing (a failure is never vacuous).
func TestK1NamesTheLeakedKeys(t *testing.T) {
	for _, c := range []struct {
		facts func() *Facts
		key   string
		n     int64
	}{{keysWithoutTTL, "resv:r-a", 2}, {keysBeyondRetention, "req:007", 1}} {
		ch := judgeOne(t, "K1", c.facts())
		if ch.Status != StatusFail || !strings.Contains(ch.Detail, c.key) {
			t.Fatalf("%s %s", ch.Status, ch.Detail)
		}
		if n, _, ok := FailureCount("K1", ch.Evidence); !ok || n != c.n {
			t.Fatalf("failure count %d %v, want %d", n, ok, c.n)
		}
	}
	f := keysSetUpOnly()
	f.Keys.Space.KeysWithoutTTL, f.Keys.WithoutTTL = 1, []string{"seckill:{t}:meta"}
	if ch := judgeOne(t, "K1", f); ch.Status != StatusFail {
		t.Fatalf("a set-up key without TTL: %s %s", ch.Status, ch.Detail)
	}
}

// K2's failure names the node, its role and its count.
func TestK2NamesTheEvictingNode(t *testing.T) {
	ch := judgeOne(t, "K2", evictionsOnAMaster())
	if ch.Status != StatusFail || !strings.Contains(ch.Detail, "127.0.0.1:7000 (master) evicted 42") {
		t.Fatalf("%s %s", ch.Status, ch.Detail)
	}
	if n, _, ok := FailureCount("K2", ch.Evidence); !ok || n != 42 {
		t.Fatalf("failure count %d %v", n, ok)
	}
}
