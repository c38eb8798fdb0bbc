package runner

import (
	"strings"
	"testing"

	"seckill-harness/reports"
)

func k1Facts(kf *KeyFacts) *Facts { return &Facts{Keys: kf} }

// K1 over hand-built facts: a key without a TTL or expiring after the
// retention time fails, naming the key; clean keys pass; only the
// harness's set-up keys, or keys never read, are not a pass.
func TestK1Judge(t *testing.T) {
	k1, _ := LookupInvariant("K1")
	space := func() reports.KeySpace {
		return reports.KeySpace{RetentionUntilMs: 5000, KeysChecked: 4, KeysByKind: map[string]int64{"meta": 1, "stock": 1, "resv": 2}}
	}
	clean := &KeyFacts{Space: space(), PathKeys: 2}
	if c := k1.judge(k1Facts(clean)); c.Status != StatusPass {
		t.Fatalf("clean keys: %s %s", c.Status, c.Detail)
	}

	noTTL := &KeyFacts{Space: space(), PathKeys: 2, WithoutTTL: []string{"seckill:{a:x:s:y:v:1:b:0}:resv:abc"}}
	noTTL.Space.KeysWithoutTTL = 1
	c := k1.judge(k1Facts(noTTL))
	if c.Status != StatusFail || !strings.Contains(c.Detail, "resv:abc") || c.Evidence["leaked_keys"] != int64(1) {
		t.Fatalf("a key without TTL: %s %s %v", c.Status, c.Detail, c.Evidence)
	}
	if n, _, ok := FailureCount("K1", c.Evidence); !ok || n != 1 {
		t.Fatalf("failure count %d %v", n, ok)
	}

	late := &KeyFacts{Space: space(), PathKeys: 2, BeyondRetention: []KeyExpiry{{Key: "seckill:{t}:req:007", ExpiresAtMs: 9000}}}
	late.Space.KeysBeyondRetention = 1
	if c := k1.judge(k1Facts(late)); c.Status != StatusFail || !strings.Contains(c.Detail, "req:007") {
		t.Fatalf("a key beyond retention: %s %s", c.Status, c.Detail)
	}

	setupOnly := &KeyFacts{Space: space()}
	if c := k1.judge(k1Facts(setupOnly)); c.Status != StatusSkip || !strings.Contains(c.Detail, "no key of its own") {
		t.Fatalf("only set-up keys: %s %s", c.Status, c.Detail)
	}
	// A failure is never turned into a skip by vacuity.
	setupOnly.Space.KeysWithoutTTL, setupOnly.WithoutTTL = 1, []string{"seckill:{t}:meta"}
	if c := k1.judge(k1Facts(setupOnly)); c.Status != StatusFail {
		t.Fatalf("a set-up key without TTL: %s %s", c.Status, c.Detail)
	}
	if c := k1.judge(&Facts{}); c.Status != StatusSkip {
		t.Fatalf("keys not read: %s %s", c.Status, c.Detail)
	}
}

// K2 over hand-built facts: any eviction fails, naming the node and count;
// counters read at both ends with no eviction pass; counters not read skip.
func TestK2Judge(t *testing.T) {
	k2, _ := LookupInvariant("K2")
	quiet := &EvictionFacts{Nodes: []NodeEvictions{{Node: "127.0.0.1:7000", Role: "master"}, {Node: "127.0.0.1:7001", Role: "replica"}}}
	if c := k2.judge(&Facts{Evictions: quiet}); c.Status != StatusPass || c.Evidence["evicted_keys"] != int64(0) {
		t.Fatalf("no eviction: %s %s %v", c.Status, c.Detail, c.Evidence)
	}
	evicting := &EvictionFacts{Nodes: []NodeEvictions{{Node: "127.0.0.1:7000", Role: "master", Evicted: 42}, {Node: "127.0.0.1:7001", Role: "master"}}}
	c := k2.judge(&Facts{Evictions: evicting})
	if c.Status != StatusFail || !strings.Contains(c.Detail, "127.0.0.1:7000 (master) evicted 42") {
		t.Fatalf("an evicting master: %s %s", c.Status, c.Detail)
	}
	if n, _, ok := FailureCount("K2", c.Evidence); !ok || n != 42 {
		t.Fatalf("failure count %d %v", n, ok)
	}
	for _, f := range []*Facts{{}, {Evictions: &EvictionFacts{Unread: []string{"127.0.0.1:7000"}}}} {
		if c := k2.judge(f); c.Status != StatusSkip {
			t.Fatalf("counters not read: %s %s", c.Status, c.Detail)
		}
	}
}
