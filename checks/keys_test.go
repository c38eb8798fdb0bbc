package checks

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/reports"
	"seckill-harness/sut"
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
	f.Keys.BeyondRetention = []sut.KeyExpiry{{Key: "seckill:{a:x:s:y:v:1:b:0}:req:007", ExpiresAtMs: 9000}}
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

// K1 grants a bucket's keys exactly the allowance measured for it (a
// migrated slot), and nothing else: a key within it passes, the same
// overshoot in a bucket without one fails, a key an hour too long or
// without a TTL fails in the bucket with one.
func TestK1AllowanceIsPerBucketAndBounded(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	tgt := newTarget(t, 10, 2)
	a := tgt.Activity
	ret := a.RetentionUntilMs
	allow := []reports.ExpiryAllowance{{Bucket: 0, Slot: 1, AllowanceMs: 40, Reason: "test"}}
	set := func(key string, at int64) {
		t.Helper()
		if err := testRDB.Set(ctx, key, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if at > 0 {
			if err := testRDB.PExpireAt(ctx, key, time.UnixMilli(at)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	judge := func() (*KeyFacts, Check) {
		t.Helper()
		kf, err := tgt.sys().(sut.StateReader).ReadKeys(ctx, a, sut.KeyQuery{Allowances: allow})
		if err != nil {
			t.Fatal(err)
		}
		return kf, judgeOne(t, "K1", &Facts{Keys: kf})
	}
	set(a.Scope(0).SoldoutKey(), ret+40)
	if kf, ch := judge(); ch.Status != StatusPass || kf.Space.KeysWithinAllowance != 1 || !strings.Contains(ch.Detail, "+40 ms") {
		t.Fatalf("a key 40 ms over in the bucket allowed 40 ms: %s %s (within %d)", ch.Status, ch.Detail, kf.Space.KeysWithinAllowance)
	}
	set(a.Scope(0).SoldoutKey(), ret+41)
	if _, ch := judge(); ch.Status != StatusFail {
		t.Fatalf("a key 41 ms over in the bucket allowed 40 ms: %s %s", ch.Status, ch.Detail)
	}
	set(a.Scope(0).SoldoutKey(), ret)
	for _, c := range []struct {
		name string
		at   int64
	}{{"40 ms over in a bucket without allowance", ret + 40}, {"an hour over", ret + 3_600_000}, {"without a TTL", 0}} {
		key := a.Scope(1).SoldoutKey()
		if c.name != "40 ms over in a bucket without allowance" {
			key = a.Scope(0).SendPendingKey()
		}
		set(key, c.at)
		if _, ch := judge(); ch.Status != StatusFail || !strings.Contains(ch.Detail, key) {
			t.Fatalf("a key %s: %s %s", c.name, ch.Status, ch.Detail)
		}
		testRDB.Del(ctx, key)
	}
}
