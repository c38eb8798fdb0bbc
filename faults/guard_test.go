package faults

import (
	"errors"
	"strings"
	"testing"

	"seckill-harness/compose"
)

// fakeCluster answers only what CheckAllowed asks; it has no process
// control.
type fakeCluster struct {
	compose.Cluster // nil: any other method panics
	provider        string
	owned           bool
}

func (f fakeCluster) Provider() string { return f.provider }
func (f fakeCluster) Owned() bool      { return f.owned }

// fakeControlled is a fakeCluster with process control (a nil
// compose.ProcessController: the guard only looks for it).
type fakeControlled struct {
	fakeCluster
	compose.ProcessController
}

func mustParse(t *testing.T, specs ...string) []*Planned {
	t.Helper()
	var out []*Planned
	for _, s := range specs {
		p, err := Parse(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		out = append(out, p)
	}
	return out
}

// The guard's answers for the kinds of today, as their registrations
// declare them (a kind added later declares its own; TestEveryKindDeclaresItsRules
// holds it to that).
func TestDestructiveClassifiesEveryKind(t *testing.T) {
	for kind, want := range map[string]bool{
		"failover": true, "slot-migration": true, "slow-aof": true,
		"dispatcher-crash": false, "disconnect-before-reply": false, "latency": false,
		"bandwidth": false, "slicer": false, "partition": false,
		"some-future-kind": true,
	} {
		if got := Destructive(kind, nil); got != want {
			t.Errorf("Destructive(%s) = %v, want %v", kind, got, want)
		}
	}
	for _, mode := range []string{"graceful", "force", "takeover", "kill", "pause"} {
		if !Destructive("failover", map[string]string{"mode": mode}) {
			t.Errorf("failover mode=%s not destructive", mode)
		}
		want := mode == "kill" || mode == "pause"
		if got := NeedsProcessControl("failover", map[string]string{"mode": mode}); got != want {
			t.Errorf("NeedsProcessControl(failover mode=%s) = %v", mode, got)
		}
	}
	if NeedsProcessControl("failover", nil) || NeedsProcessControl("partition", nil) || NeedsProcessControl("some-future-kind", nil) {
		t.Error("default failover / partition / unknown kind need process control")
	}
}

func TestCheckAllowed(t *testing.T) {
	all := mustParse(t,
		"failover:mode=graceful,at=1s", "failover:mode=kill,at=1s", "failover:mode=pause,at=1s",
		"slot-migration:at=1s", "slow-aof:at=1s", "dispatcher-crash:at=1s",
		"disconnect-before-reply:at=1s", "latency:latency=10,at=1s", "partition:at=1s",
	)
	local := fakeControlled{fakeCluster: fakeCluster{provider: "local", owned: true}}
	external := fakeCluster{provider: "external"}

	// Owned with process control: everything goes, flag or not.
	if err := CheckAllowed(all, local, false); err != nil {
		t.Errorf("local cluster: %v", err)
	}
	// Network faults and the pipeline crash run anywhere.
	safe := mustParse(t, "dispatcher-crash:at=1s", "disconnect-before-reply:at=1s", "latency:latency=10", "bandwidth:rate=10", "slicer", "partition")
	if err := CheckAllowed(safe, external, false); err != nil {
		t.Errorf("network faults on an external cluster: %v", err)
	}

	// External without the flag: every destructive fault refused, each
	// named with the reason and both fixes; kill/pause refused for the
	// missing process control.
	err := CheckAllowed(all, external, false)
	if err == nil {
		t.Fatal("destructive faults allowed on an external cluster")
	}
	msg := err.Error()
	t.Log(msg)
	for _, spec := range []string{"failover:mode=graceful,at=1s", "slot-migration:at=1s", "slow-aof:at=1s"} {
		line := lineWith(msg, `"`+spec+`"`)
		if line == "" || !strings.Contains(line, "--allow-destructive") || !strings.Contains(line, "--cluster local") || !strings.Contains(line, "not created by the harness") {
			t.Errorf("refusal of %s: %q", spec, line)
		}
	}
	for _, spec := range []string{"failover:mode=kill,at=1s", "failover:mode=pause,at=1s"} {
		line := lineWith(msg, `"`+spec+`"`)
		if line == "" || !strings.Contains(line, "--cluster local") || !strings.Contains(line, "did not start") {
			t.Errorf("refusal of %s: %q", spec, line)
		}
	}
	for _, spec := range []string{"dispatcher-crash", "disconnect-before-reply", "latency", "partition"} {
		if strings.Contains(msg, `"`+spec) {
			t.Errorf("%s refused: %s", spec, msg)
		}
	}
	if !errors.Is(err, compose.ErrNotOwned) || !errors.Is(err, compose.ErrNoProcessControl) {
		t.Errorf("error does not wrap ErrNotOwned and ErrNoProcessControl: %v", err)
	}

	// External with --allow-destructive: only kill/pause stay refused.
	err = CheckAllowed(all, external, true)
	if err == nil || !errors.Is(err, compose.ErrNoProcessControl) || errors.Is(err, compose.ErrNotOwned) {
		t.Fatalf("with allowDestructive: %v", err)
	}
	if n := strings.Count(err.Error(), "refused"); n != 2 {
		t.Errorf("with allowDestructive, %d refusals (want kill and pause): %v", n, err)
	}

	// Owned but without process control (not a combination the harness
	// builds today): kill/pause refused, the rest allowed.
	err = CheckAllowed(all, fakeCluster{provider: "docker", owned: true}, false)
	if err == nil || strings.Count(err.Error(), "refused") != 2 {
		t.Errorf("owned without process control: %v", err)
	}
	// A docker cluster (owned, process control) takes everything.
	if err := CheckAllowed(all, fakeControlled{fakeCluster: fakeCluster{provider: "docker", owned: true}}, false); err != nil {
		t.Errorf("docker: %v", err)
	}
	if err := CheckAllowed(all, nil, true); err == nil {
		t.Error("nil cluster accepted")
	}
	var typedNil *compose.LocalCluster
	if err := CheckAllowed(all, typedNil, true); err == nil {
		t.Error("typed nil cluster accepted")
	}
	if err := CheckAllowed(nil, external, false); err != nil {
		t.Errorf("no faults: %v", err)
	}
}

func lineWith(msg, sub string) string {
	for _, l := range strings.Split(msg, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// Replication kinds are refused before the run on a cluster without
// replication proxies, with the fix named, and allowed with them.
func TestAvailableRefusesReplicationKindsWithoutReplicationProxies(t *testing.T) {
	s := Setting{Provider: "local", Owned: true, ProcessControl: true, Masters: 3, Replicas: 1, Proxies: true}
	for _, spec := range []string{"replica-lag:latency=100", "replica-partition"} {
		err := Available(mustParse(t, spec)[0], s)
		if err == nil || !strings.Contains(err.Error(), "ReplicationProxies") {
			t.Fatalf("%s on a directly replicating cluster: %v, want a refusal naming ReplicationProxies", spec, err)
		}
		with := s
		with.ReplicationProxies = true
		if err := Available(mustParse(t, spec)[0], with); err != nil {
			t.Fatalf("%s with replication proxies: %v", spec, err)
		}
		noReplica := with
		noReplica.Replicas = 0
		if err := Available(mustParse(t, spec)[0], noReplica); err == nil {
			t.Fatalf("%s without replicas: allowed", spec)
		}
	}
}
