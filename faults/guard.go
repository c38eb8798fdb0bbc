package faults

// The safety guard: which planned faults may run against which cluster.
// Faults that change the cluster itself (who is master, which node owns a
// slot, CONFIG and DEBUG settings) are refused against a cluster the
// harness does not own unless the user says so; faults that signal node
// processes are refused whenever the harness has no hold on the processes.

import (
	"errors"
	"fmt"
	"strings"

	"seckill-harness/compose"
)

// classification of every registered kind: why it changes the cluster
// ("" = it does not). A kind missing here is treated as destructive (and a
// test fails until it is classified).
var destructiveWhy = map[string]string{
	"failover":       "it moves mastership (CLUSTER FAILOVER on a replica, or kills/pauses the master)",
	"slot-migration": "it moves slots and their keys between masters (CLUSTER SETSLOT, MIGRATE)",
	"slow-aof":       "it changes node configuration (CONFIG SET appendonly/appendfsync) and uses DEBUG AOF-FLUSH-SLEEP",
	// The harness's own pipeline, not the cluster.
	"dispatcher-crash": "",
	// Network faults act on the harness's own proxies only: the nodes, the
	// cluster bus and replication are untouched.
	"disconnect-before-reply": "",
	"latency":                 "",
	"bandwidth":               "",
	"slicer":                  "",
	"partition":               "",
}

// Destructive reports whether a fault of this kind with these parameters
// changes the cluster itself (topology, slot ownership, configuration), as
// opposed to the harness's own proxies or pipeline: failover (any mode),
// slot-migration and slow-aof are; dispatcher-crash and the network kinds
// are not. Unknown kinds count as destructive.
func Destructive(kind string, params map[string]string) bool {
	why, known := destructiveWhy[kind]
	return !known || why != ""
}

// NeedsProcessControl reports whether the fault signals a node's process
// (failover mode=kill or mode=pause), which only a cluster the harness
// started (local processes or its containers) allows.
func NeedsProcessControl(kind string, params map[string]string) bool {
	if kind != "failover" {
		return false
	}
	m := strings.TrimSpace(params["mode"])
	return m == FailoverKill || m == FailoverPause
}

// CheckAllowed refuses, before anything runs, the planned faults the
// cluster must not get: process-level faults (failover mode=kill|pause)
// whenever the cluster has no process control, whatever allowDestructive
// says; and destructive faults (see Destructive) against a cluster the
// harness does not own, unless allowDestructive. Every refused fault is
// named in the error, with the reason and the fix (--cluster local, or
// --allow-destructive). A nil cluster is an error.
func CheckAllowed(planned []*Planned, c compose.Cluster, allowDestructive bool) error {
	if isNil(c) {
		return errors.New("faults: no cluster to check the planned faults against")
	}
	var errs []error
	for _, p := range planned {
		if p == nil {
			continue
		}
		name := p.Spec
		if name == "" {
			name = p.Kind
		}
		if NeedsProcessControl(p.Kind, p.Params) && !c.HasProcessControl() {
			errs = append(errs, fmt.Errorf("fault %q refused: mode=%s signals the master's process, and the harness did not start the processes of this %s cluster (%w); "+
				"use a cluster the harness starts (--cluster local, or docker), or mode=graceful|force|takeover",
				name, p.Params["mode"], c.Provider(), compose.ErrNoProcessControl))
			continue
		}
		if Destructive(p.Kind, p.Params) && !c.Owned() && !allowDestructive {
			why := destructiveWhy[p.Kind]
			if why == "" {
				why = "its kind is not known to be harmless"
			}
			errs = append(errs, fmt.Errorf("fault %q refused: %s, and this %s cluster was not created by the harness (%w); "+
				"pass --allow-destructive to run it anyway, or use --cluster local",
				name, why, c.Provider(), compose.ErrNotOwned))
		}
	}
	return errors.Join(errs...)
}
