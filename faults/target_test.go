package faults

import (
	"seckill-harness/internal/clustertest"
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	const id = "07c37dfeb235213a872192d90877d0cd55635b91"
	cases := map[string]Target{
		"":                    {Role: TargetHotMaster},
		"hot-master":          {Role: TargetHotMaster},
		"hot-replica":         {Role: TargetHotReplica},
		"all-masters":         {Role: TargetAllMasters},
		"node=127.0.0.1:7000": {Role: TargetNode, Node: "127.0.0.1:7000"},
		"127.0.0.1:7000":      {Role: TargetNode, Node: "127.0.0.1:7000"},
		"node=" + id:          {Role: TargetNode, Node: id},
		id:                    {Role: TargetNode, Node: id},
		"slot=0":              {Role: TargetSlotMaster, Node: "0"},
		"slot=16383":          {Role: TargetSlotMaster, Node: "16383"},
	}
	for in, want := range cases {
		got, err := ParseTarget(in)
		if err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		wantStr := in
		switch {
		case in == "":
			wantStr = TargetHotMaster
		case got.Role == TargetNode && !strings.HasPrefix(in, "node="):
			wantStr = "node=" + in
		}
		if got.String() != wantStr {
			t.Errorf("String() = %q for %q, want %q", got.String(), in, wantStr)
		}
	}
	if got, err := ParseTarget(""); err != nil || got.Role != TargetHotMaster {
		t.Errorf("absent target: %+v %v", got, err)
	}
	for _, bad := range []string{"master", "node=", "node=abc", "slot=-1", "slot=16384", "slot=x", "127.0.0.1", id[:39]} {
		if _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), "target=") {
			t.Errorf("ParseTarget(%q) = %v: want an error naming target", bad, err)
		}
	}
}

func TestTargetResolve(t *testing.T) {
	clustertest.Need(t)
	needCluster(t)
	a := newActivitySpanning(t, 30)
	env := newEnv(t, a, nil)
	ctx := ctxT(t, 10*time.Second)
	hot, err := testCluster.MasterOfSlot(ctx, env.HotSlots[0])
	if err != nil {
		t.Fatal(err)
	}
	one := func(tg Target) string {
		t.Helper()
		n, err := tg.ResolveOne(ctx, env)
		if err != nil {
			t.Fatalf("%s: %v", tg, err)
		}
		return n.Addr
	}
	if got := one(Target{Role: TargetHotMaster}); got != hot.Addr {
		t.Errorf("hot-master = %s, want %s", got, hot.Addr)
	}
	rep, err := Target{Role: TargetHotReplica}.ResolveOne(ctx, env)
	if err != nil || rep.Role != "replica" || rep.MasterID != hot.ID {
		t.Errorf("hot-replica = %+v, %v; want a replica of %s", rep, err, hot.ID)
	}
	if got := one(Target{Role: TargetNode, Node: hot.ID}); got != hot.Addr {
		t.Errorf("node=<id> = %s", got)
	}
	if got := one(Target{Role: TargetNode, Node: rep.Addr}); got != rep.Addr {
		t.Errorf("node=<addr> = %s", got)
	}
	if got := one(Target{Role: TargetSlotMaster, Node: "0"}); got == "" {
		t.Errorf("slot=0 = %q", got)
	}
	all, err := Target{Role: TargetAllMasters}.Resolve(ctx, env)
	if err != nil || len(all) != 3 {
		t.Fatalf("all-masters = %v, %v", all, err)
	}
	if _, err := (Target{Role: TargetAllMasters}).ResolveOne(ctx, env); err == nil {
		t.Error("ResolveOne accepted all-masters")
	}
	if _, err := (Target{Role: TargetNode, Node: "127.0.0.1:1"}).Resolve(ctx, env); err == nil {
		t.Error("unknown node resolved")
	}
	if _, err := (Target{Role: TargetHotMaster}).Resolve(ctx, &Env{Cluster: testCluster}); err == nil || !strings.Contains(err.Error(), "HotSlots") {
		t.Errorf("hot-master without HotSlots: %v", err)
	}
	if _, err := (Target{Role: TargetHotMaster}).Resolve(ctx, &Env{}); err == nil {
		t.Error("resolved without a cluster")
	}
}
