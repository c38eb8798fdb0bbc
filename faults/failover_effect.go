package faults

import "fmt"

// setActed records what Inject did that took (the first action only).
func (f *Failover) setActed(what string) {
	f.mu.Lock()
	if f.act.acted == "" {
		f.act.acted = what
	}
	f.mu.Unlock()
}

// ActedDespiteError implements ActedAnyway: a failover whose Inject failed
// after it had signalled the master (SIGKILL, SIGSTOP) or had a replica
// accept CLUSTER FAILOVER took effect: the master was down or stopped, or
// the takeover under way, whether or not a replica owned the slot before
// Inject gave up (an interrupted load, wait= spent). The outcome says what
// was done to which master, whether a replica took the slot over, and
// whether the heal has run.
func (f *Failover) ActedDespiteError() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.act.acted == "" {
		return "", false
	}
	s := fmt.Sprintf("mode=%s: %s on master %s (slot %d)", f.cfg.mode, f.act.acted, f.aim.old.Addr, f.aim.slot)
	if f.act.acted != "SIGKILL" && f.act.acted != "SIGSTOP" {
		s = fmt.Sprintf("mode=%s: %s accepted by replica %s of master %s (slot %d)", f.cfg.mode, f.act.acted, f.aim.candidate.Addr, f.aim.old.Addr, f.aim.slot)
	}
	if f.seen.recovered {
		s += fmt.Sprintf("; %s took the slot over", f.seen.newMaster.Addr)
	} else {
		s += "; no replica had taken the slot over when inject gave up"
	}
	if f.act.healed {
		s += "; the heal restored the cluster"
	}
	return s, true
}
