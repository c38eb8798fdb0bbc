package faults

// The safety guard: which planned faults may run against which cluster.
// Faults that change the cluster itself (who is master, which node owns a
// slot, CONFIG and DEBUG settings) are refused against a cluster the
// harness does not own unless the user says so; faults that signal node
// processes are refused whenever the harness has no hold on the processes.
// Which faults those are, and why, each kind declares in its Rules.

import (
	"errors"
	"fmt"

	"seckill-harness/compose"
)

// Destructive reports whether a fault of this kind with these parameters
// changes the cluster itself (topology, slot ownership, configuration), as
// opposed to the harness's own proxies or pipeline, as its kind declares
// (Rules.Destructive). Unknown kinds count as destructive.
func Destructive(kind string, params map[string]string) bool {
	return destructiveWhy(kind, params) != ""
}

// NeedsProcessControl reports whether the fault signals a node's process
// (as its kind declares in Rules.SignalsProcess: failover mode=kill or
// mode=pause), which only a cluster the harness started (local processes or
// its containers) allows. Unknown kinds do not.
func NeedsProcessControl(kind string, params map[string]string) bool {
	why, _ := signalsProcess(kind, params)
	return why != ""
}

// signalsProcess is the kind's SignalsProcess answer, "" when it has none.
func signalsProcess(kind string, params map[string]string) (why, instead string) {
	r, ok := rulesOf(kind)
	if !ok || r.SignalsProcess == nil {
		return "", ""
	}
	return r.SignalsProcess(params)
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
	s := Setting{Provider: c.Provider(), Owned: c.Owned(), ProcessControl: compose.HasProcessControl(c), AllowDestructive: allowDestructive}
	var errs []error
	for _, p := range planned {
		if err := allowed(p, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// allowed is the guard for one planned fault in setting s (only its
// Provider, Owned, ProcessControl and AllowDestructive are read).
func allowed(p *Planned, s Setting) error {
	if p == nil {
		return nil
	}
	name := p.name()
	if why, instead := signalsProcess(p.Kind, p.Params); why != "" && !s.ProcessControl {
		fix := "use a cluster the harness starts (--cluster local, or docker)"
		if instead != "" {
			fix += ", or " + instead
		}
		return fmt.Errorf("fault %q refused: %s, and the harness did not start the processes of this %s cluster (%w); %s",
			name, why, s.Provider, compose.ErrNoProcessControl, fix)
	}
	if why := destructiveWhy(p.Kind, p.Params); why != "" && !s.Owned && !s.AllowDestructive {
		return fmt.Errorf("fault %q refused: %s, and this %s cluster was not created by the harness (%w); "+
			"pass --allow-destructive to run it anyway, or use --cluster local",
			name, why, s.Provider, compose.ErrNotOwned)
	}
	return nil
}
