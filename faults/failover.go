package faults

// failover: move the hot slot's master to one of its replicas, the polite
// way (CLUSTER FAILOVER, FORCE, TAKEOVER sent to a replica) or the hard way
// (SIGKILL or SIGSTOP of the master process, the cluster elects a replica
// itself after cluster-node-timeout).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"seckill-harness/compose"
)

// Failover modes.
const (
	FailoverGraceful = "graceful"
	FailoverForce    = "force"
	FailoverTakeover = "takeover"
	FailoverKill     = "kill"
	FailoverPause    = "pause"
)

var failoverKind = Spec{
	Kind: "failover",
	Help: "fail the target master over to a replica: CLUSTER FAILOVER [FORCE|TAKEOVER] sent to a replica, " +
		"SIGKILL of the master process (healed by restarting it: it rejoins as a replica), or SIGSTOP " +
		"(healed by SIGCONT; a pause longer than cluster-node-timeout makes the cluster fail it over by itself)",
	Params: []Param{TargetParam, failoverMode.Param, failoverPause.Param, failoverWait.Param, failoverFailback.Param},

	Build: newFailover,
	Rules: Rules{
		Destructive:    DestructiveBecause("it moves mastership (CLUSTER FAILOVER on a replica, or kills/pauses the master)"),
		SignalsProcess: failoverSignalsProcess,
		Overlap:        Exclusive,
		Topology:       Topology{Replicas: 1, ReplicasWhy: "a replica per master"},
	},
}

// failoverSignalsProcess: mode=kill and mode=pause signal the master's
// process; the CLUSTER FAILOVER modes do not.
func failoverSignalsProcess(params map[string]string) (why, instead string) {
	switch m := strings.TrimSpace(params["mode"]); m {
	case FailoverKill, FailoverPause:
		return "mode=" + m + " signals the master's process", "mode=graceful|force|takeover"
	}
	return "", ""
}

var (
	failoverMode = enumParam("mode", FailoverGraceful, "graceful | force | takeover (CLUSTER FAILOVER sent to a replica) | kill (SIGKILL the master) | pause (SIGSTOP the master)",
		FailoverGraceful, FailoverForce, FailoverTakeover, FailoverKill, FailoverPause)
	failoverPause    = durationParam("pause", 0, "mode=pause: how long the master stays stopped; Inject returns after it was resumed").doc("0 (until heal)")
	failoverWait     = durationParam("wait", 15*time.Second, "how long to wait for the new master of the hot slot (and, at heal, for a healthy cluster)")
	failoverFailback = boolParam("failback", false, "at heal, make the old master master again (graceful CLUSTER FAILOVER sent to it)")
)

func newFailover(v Values) (Fault, error) {
	f := &Failover{cfg: failoverConfig{target: v.Target(), mode: failoverMode.Of(v), pause: failoverPause.Of(v), wait: failoverWait.Of(v), failback: failoverFailback.Of(v)}}
	if raw, given := v.Given(failoverPause.Param); given && f.cfg.mode != FailoverPause {
		return nil, fmt.Errorf("pause=%s only applies to mode=pause", raw)
	}
	if f.cfg.wait <= 0 {
		return nil, errors.New("wait must be positive")
	}
	return f, nil
}

// Failover is the "failover" fault. Build it with Plan/Parse.
type Failover struct {
	cfg failoverConfig // from the scenario; fixed after Build

	healMu sync.Mutex // serialises Heal
	mu     sync.Mutex // guards aim, act and seen
	aim    failoverAim
	act    failoverActs
	seen   failoverSeen
}

// failoverConfig is the fault's parameters, as the scenario gave them.
type failoverConfig struct {
	target   Target
	mode     string
	pause    time.Duration
	wait     time.Duration
	failback bool
}

// failoverAim is what the failover acts on, resolved at Inject.
type failoverAim struct {
	resolved  string // the old master's address
	slot      int    // the slot whose owner is watched (the hot slot when the master owns it)
	old       compose.Node
	candidate compose.Node // the replica told to take over (FAILOVER modes) or expected to be elected
	replicas  []string
}

// failoverActs is what the fault did to the cluster, and when.
type failoverActs struct {
	started    bool   // something was done to the cluster
	acted      string // what Inject did that took: "SIGKILL", "SIGSTOP", "CLUSTER FAILOVER" ("": nothing yet)
	injectedAt time.Time
	killed     bool
	paused     bool
	resumedAt  time.Time
	watchStop  chan struct{} // closed to stop the pause watcher
	watchDone  chan struct{} // closed by the pause watcher when it returns
	requests   int           // CLUSTER FAILOVER requests sent
	restarted  bool
	failedBack bool
	healed     bool
	healDur    time.Duration
}

// failoverSeen is what the cluster was observed to do: the evidence.
type failoverSeen struct {
	newMaster   compose.Node
	recovered   bool          // a new master of the slot was seen
	recovery    time.Duration // from injectedAt to the new master
	converged   time.Duration // from injectedAt to every node agreeing
	auto        bool          // the cluster elected the new master itself
	roleAfter   string        // the old master's role after heal
	masterAfter string        // the slot's owner after heal
	healthy     bool          // the cluster was healthy after heal
	notes       []string
	logLines    []string
}

var (
	_ Fault       = (*Failover)(nil)
	_ ActedAnyway = (*Failover)(nil)
)

// Kind implements Fault.
func (f *Failover) Kind() string { return "failover" }

// Target implements Fault: the old master's address once injected.
func (f *Failover) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.aim.resolved != "" {
		return f.aim.resolved
	}
	return f.cfg.target.String()
}

func (f *Failover) note(format string, args ...any) {
	f.mu.Lock()
	f.seen.notes = append(f.seen.notes, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

// Inject implements Fault.
func (f *Failover) Inject(ctx context.Context, env *Env) error {
	n, err := f.cfg.target.ResolveOne(ctx, env) // refuses an Env without a cluster
	if err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	signals := f.cfg.mode == FailoverKill || f.cfg.mode == FailoverPause
	var pc compose.ProcessController
	if signals {
		if pc, err = env.processControl("failover: mode=" + f.cfg.mode + " signals the master's process"); err != nil {
			return err
		}
	}
	if n.Role == "replica" && signals {
		return fmt.Errorf("failover: mode=%s acts on a master, target %s is a replica", f.cfg.mode, n.Addr)
	}
	master, cand, err := f.resolveMaster(ctx, env, n)
	if err != nil {
		return err
	}
	switch f.cfg.mode {
	case FailoverGraceful, FailoverForce, FailoverTakeover:
		return f.injectManual(ctx, env, master, cand)
	case FailoverKill:
		return f.injectKill(ctx, env, pc, master)
	case FailoverPause:
		return f.injectPause(ctx, env, pc, master)
	}
	return fmt.Errorf("failover: unknown mode %q", f.cfg.mode)
}

// resolveMaster finds the master the failover acts on from the resolved
// node n (a replica names its master and is the candidate), the slot it
// watches (the hot slot when the master owns it) and a healthy replica to
// promote, and records them.
func (f *Failover) resolveMaster(ctx context.Context, env *Env, n compose.Node) (master, cand compose.Node, err error) {
	c := env.cluster()
	master = n
	if n.Role == "replica" {
		cand = n
		if master, err = c.NodeByID(ctx, n.MasterID); err != nil {
			return master, cand, fmt.Errorf("failover: master of replica %s: %w", n.Addr, err)
		}
	}
	if master.Role != "master" || len(master.Slots) == 0 {
		return master, cand, fmt.Errorf("failover: target %s is not a master owning slots", master.Addr)
	}
	slot := master.Slots[0][0]
	if len(env.HotSlots) > 0 && master.HasSlot(env.HotSlots[0]) {
		slot = env.HotSlots[0]
	}
	reps, err := c.ReplicasOf(ctx, master.ID)
	if err != nil {
		return master, cand, fmt.Errorf("failover: replicas of %s: %w", master.Addr, err)
	}
	var repAddrs []string
	for _, r := range reps {
		repAddrs = append(repAddrs, r.Addr)
		if cand.ID == "" && healthy(r) {
			cand = r
		}
	}
	f.mu.Lock()
	f.aim.resolved, f.aim.slot, f.aim.old, f.aim.candidate, f.aim.replicas = master.Addr, slot, master, cand, repAddrs
	f.mu.Unlock()
	env.logf("failover: mode=%s master %s (%s) slot %d, replicas %v", f.cfg.mode, master.Addr, shortID(master.ID), slot, repAddrs)
	return master, cand, nil
}

// begin marks the moment the failover was set off.
func (f *Failover) begin() {
	f.mu.Lock()
	f.act.started, f.act.injectedAt = true, time.Now()
	f.mu.Unlock()
}

// injectManual sends CLUSTER FAILOVER [FORCE|TAKEOVER] to cand and waits
// for it to own the slot, re-sending the request when it stalls.
func (f *Failover) injectManual(ctx context.Context, env *Env, master, cand compose.Node) error {
	if cand.ID == "" {
		return fmt.Errorf("failover: master %s has no healthy replica to fail over to", master.Addr)
	}
	adm, err := env.cluster().Admin(cand.Addr)
	if err != nil {
		return fmt.Errorf("failover: replica %s: %w", cand.Addr, err)
	}
	args := []any{"CLUSTER", "FAILOVER"}
	if f.cfg.mode != FailoverGraceful {
		args = append(args, strings.ToUpper(f.cfg.mode))
	}
	send := func() error {
		f.mu.Lock()
		f.act.requests++
		f.mu.Unlock()
		if err := adm.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("failover: %s on replica %s: %w", strings.Join(tpArgs(args), " "), cand.Addr, err)
		}
		f.setActed(strings.Join(tpArgs(args), " "))
		return nil
	}
	f.begin()
	if err := send(); err != nil {
		return err
	}
	return f.awaitNewMaster(ctx, env, func(m compose.Node) bool { return m.ID == cand.ID }, send)
}

// injectKill SIGKILLs the master and waits for the cluster to promote one
// of its replicas.
func (f *Failover) injectKill(ctx context.Context, env *Env, pc compose.ProcessController, master compose.Node) error {
	f.begin()
	f.mu.Lock()
	f.act.killed = true
	repAddrs, slot := f.aim.replicas, f.aim.slot
	f.mu.Unlock()
	if err := pc.Kill(master.Addr); err != nil {
		return fmt.Errorf("failover: SIGKILL %s: %w", master.Addr, err)
	}
	f.setActed("SIGKILL")
	if len(repAddrs) == 0 {
		return fmt.Errorf("failover: killed master %s has no replica: slot %d stays down until heal", master.Addr, slot)
	}
	return f.awaitNewMaster(ctx, env, func(m compose.Node) bool { return m.ID != master.ID }, nil)
}

// injectPause SIGSTOPs the master and watches for the cluster's own
// failover; with pause > 0 it resumes the master after pause.
func (f *Failover) injectPause(ctx context.Context, env *Env, pc compose.ProcessController, master compose.Node) error {
	f.begin()
	if err := pc.Pause(master.Addr); err != nil {
		return fmt.Errorf("failover: SIGSTOP %s: %w", master.Addr, err)
	}
	f.setActed("SIGSTOP")
	f.mu.Lock()
	f.act.paused = true
	f.act.watchStop, f.act.watchDone = make(chan struct{}), make(chan struct{})
	stop, done := f.act.watchStop, f.act.watchDone
	f.mu.Unlock()
	go f.watch(context.WithoutCancel(ctx), env, stop, done)
	if f.cfg.pause <= 0 {
		return nil // stopped until Heal
	}
	t := time.NewTimer(f.cfg.pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("failover: pause interrupted (heal resumes the node): %w", ctx.Err())
	case <-t.C:
	}
	if err := pc.Resume(master.Addr); err != nil {
		return fmt.Errorf("failover: SIGCONT %s: %w", master.Addr, err)
	}
	f.mu.Lock()
	f.act.paused, f.act.resumedAt = false, time.Now()
	f.mu.Unlock()
	env.logf("failover: %s resumed after %v", master.Addr, f.cfg.pause)
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	return nil
}

// manualFailoverRetry is how long a CLUSTER FAILOVER is given before it is
// sent again: Redis aborts a manual failover after 5s (CLUSTER_MF_TIMEOUT),
// e.g. when the masters refuse to vote because they voted for a replica of
// the same master less than 2 × node-timeout ago.
const manualFailoverRetry = 5500 * time.Millisecond

// awaitNewMaster polls until the hot slot's owner satisfies ok, records the
// recovery time, reloads the load client's slot map and waits (within the
// same budget) until every running node agrees on the new owner. resend, if
// not nil, re-sends the CLUSTER FAILOVER request when it has not succeeded
// within manualFailoverRetry.
func (f *Failover) awaitNewMaster(ctx context.Context, env *Env, ok func(compose.Node) bool, resend func() error) error {
	f.mu.Lock()
	slot, t0 := f.aim.slot, f.act.injectedAt
	f.mu.Unlock()
	wctx, cancel := context.WithDeadline(ctx, t0.Add(f.cfg.wait))
	defer cancel()
	var last error
	lastSend := t0
	for {
		if resend != nil && time.Since(lastSend) > manualFailoverRetry {
			env.logf("failover: no new master after %v: sending the request again", time.Since(lastSend).Round(time.Millisecond))
			lastSend = time.Now()
			if err := resend(); err != nil {
				return err
			}
		}
		m, err := env.cluster().MasterOfSlot(wctx, slot)
		if err == nil && ok(m) {
			f.mu.Lock()
			f.seen.newMaster, f.seen.recovered, f.seen.recovery = m, true, time.Since(t0)
			if f.cfg.mode == FailoverKill || f.cfg.mode == FailoverPause {
				f.seen.auto = true
			}
			f.mu.Unlock()
			env.logf("failover: slot %d now owned by %s (%s) after %v", slot, m.Addr, shortID(m.ID), time.Since(t0).Round(time.Millisecond))
			break
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("slot %d still owned by %s (%s)", slot, m.Addr, shortID(m.ID))
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("failover: no new master for slot %d within wait=%v: %v", slot, f.cfg.wait, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	f.mu.Lock()
	id := f.seen.newMaster.ID
	f.mu.Unlock()
	if err := env.cluster().WaitSlotOwner(wctx, slot, id); err != nil {
		f.note("not every node agreed on the new owner within wait: %v", err)
		return nil
	}
	f.mu.Lock()
	f.seen.converged = time.Since(t0)
	f.mu.Unlock()
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	return nil
}

// watch follows the hot slot's owner while the master is paused and records
// an automatic failover.
func (f *Failover) watch(ctx context.Context, env *Env, stop, done chan struct{}) {
	defer close(done)
	f.mu.Lock()
	slot, oldID, t0 := f.aim.slot, f.aim.old.ID, f.act.injectedAt
	f.mu.Unlock()
	for {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := env.cluster().MasterOfSlot(cctx, slot)
		cancel()
		if err == nil && m.ID != oldID {
			f.mu.Lock()
			f.seen.newMaster, f.seen.recovered, f.seen.recovery, f.seen.auto = m, true, time.Since(t0), true
			f.mu.Unlock()
			env.logf("failover: automatic failover of paused master: slot %d now owned by %s after %v", slot, m.Addr, time.Since(t0).Round(time.Millisecond))
			if env.Client != nil {
				env.Client.ReloadState(ctx)
			}
			return
		}
	}
}

// Heal implements Fault: resume a paused master, restart a killed one (it
// rejoins as a replica), optionally fail back, and wait for a healthy cluster.
func (f *Failover) Heal(ctx context.Context, env *Env) error {
	f.healMu.Lock()
	defer f.healMu.Unlock()
	f.mu.Lock()
	started, old := f.act.started, f.aim.old
	stop, done := f.act.watchStop, f.act.watchDone
	f.act.watchStop = nil
	f.mu.Unlock()
	if !started || env.cluster() == nil {
		return nil
	}
	c := env.cluster()
	t0 := time.Now()
	var errs []error

	switch f.cfg.mode {
	case FailoverPause:
		errs = append(errs, f.healPause(env, old, stop, done)...)
	case FailoverKill:
		errs = append(errs, f.healKill(ctx, env, old)...)
	}

	budget := max(f.cfg.wait, 30*time.Second)
	hctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	if err := c.WaitHealthy(hctx); err != nil {
		errs = append(errs, err)
	}

	// Anything the watcher missed: did the slot move while the master was stopped?
	f.mu.Lock()
	slot := f.aim.slot
	f.mu.Unlock()
	if m, err := c.MasterOfSlot(hctx, slot); err == nil {
		f.mu.Lock()
		if m.ID != old.ID && !f.seen.recovered {
			f.seen.newMaster, f.seen.recovered, f.seen.auto = m, true, true
			f.seen.notes = append(f.seen.notes, "the failover was noticed only at heal (recovery time unknown)")
		}
		f.mu.Unlock()
	}

	if f.cfg.failback && len(errs) == 0 {
		if err := f.failBack(hctx, env); err != nil {
			errs = append(errs, err)
		}
	}

	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	f.afterHeal(hctx, env, old, slot, len(errs) == 0, t0)
	if len(errs) > 0 {
		return fmt.Errorf("failover heal: %w", errors.Join(errs...))
	}
	return nil
}

// healPause resumes the paused master and stops the watcher.
func (f *Failover) healPause(env *Env, old compose.Node, stop chan struct{}, done <-chan struct{}) []error {
	var errs []error
	pc, err := env.processControl("resuming " + old.Addr)
	if err == nil {
		err = pc.Resume(old.Addr)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("SIGCONT %s: %w", old.Addr, err))
	} else {
		f.mu.Lock()
		if f.act.paused {
			f.act.paused, f.act.resumedAt = false, time.Now()
		}
		f.mu.Unlock()
	}
	if stop != nil {
		close(stop)
		<-done
	}
	return errs
}

// healKill restarts the killed master if it is still down (it rejoins as
// a replica).
func (f *Failover) healKill(ctx context.Context, env *Env, old compose.Node) []error {
	c := env.cluster()
	n, ok := c.NodeByAddr(old.Addr)
	if !ok || !n.Down {
		return nil
	}
	pc, err := env.processControl("restarting " + old.Addr)
	if err == nil {
		err = pc.Restart(ctx, old.Addr)
	}
	if err != nil {
		return []error{fmt.Errorf("restart %s: %w", old.Addr, err)}
	}
	f.mu.Lock()
	f.act.restarted = true
	f.mu.Unlock()
	env.logf("failover: restarted %s", old.Addr)
	return nil
}

// afterHeal records the evidence of the heal (the old master's role, the
// slot's owner, how long it took, whether it succeeded) and collects the
// log of the node that took over.
func (f *Failover) afterHeal(ctx context.Context, env *Env, old compose.Node, slot int, ok bool, t0 time.Time) {
	c := env.cluster()
	n, _ := c.NodeByAddr(old.Addr)
	owner, _ := c.MasterOfSlot(ctx, slot)
	f.mu.Lock()
	f.seen.roleAfter = n.Role
	f.seen.masterAfter = owner.Addr
	f.seen.healthy = ok
	f.act.healDur = time.Since(t0)
	if ok {
		f.act.healed = true
	}
	cand := f.seen.newMaster.Addr
	if cand == "" {
		cand = f.aim.candidate.Addr
	}
	f.mu.Unlock()
	if cand != "" {
		f.collectLog(c, cand)
	}
}

// failBack makes the old master master again with a graceful CLUSTER FAILOVER.
func (f *Failover) failBack(ctx context.Context, env *Env) error {
	c := env.cluster()
	f.mu.Lock()
	old, slot := f.aim.old, f.aim.slot
	f.mu.Unlock()
	if m, err := c.MasterOfSlot(ctx, slot); err == nil && m.ID == old.ID {
		return nil // nothing to fail back
	}
	n, ok := c.NodeByAddr(old.Addr)
	if !ok || n.Role != "replica" {
		return fmt.Errorf("failback: %s is %q, not a replica", old.Addr, n.Role)
	}
	adm, err := c.Admin(old.Addr)
	if err != nil {
		return fmt.Errorf("failback: %w", err)
	}
	for attempt := 1; ; attempt++ {
		if err := adm.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
			return fmt.Errorf("failback: CLUSTER FAILOVER on %s: %w", old.Addr, err)
		}
		wctx, cancel := context.WithTimeout(ctx, manualFailoverRetry)
		err := c.WaitSlotOwner(wctx, slot, old.ID)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("failback (%d requests): %w", attempt, err)
		}
		env.logf("failover: failback to %s not done after %v, requesting again", old.Addr, manualFailoverRetry)
	}
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	f.mu.Lock()
	f.act.failedBack = true
	f.mu.Unlock()
	return c.WaitHealthy(ctx)
}

// collectLog keeps the failover-related lines of the promoted node's log.
func (f *Failover) collectLog(c compose.Cluster, addr string) {
	lt, ok := c.(compose.LogTailer)
	if !ok {
		return // an external cluster's logs are not ours to read
	}
	f.mu.Lock()
	since := f.act.injectedAt.Add(-50 * time.Millisecond)
	f.mu.Unlock()
	var keep []string
	for _, l := range strings.Split(lt.NodeLogTail(addr, 300), "\n") {
		ll := strings.ToLower(l)
		if !strings.Contains(ll, "failover") && !strings.Contains(ll, "election") && !strings.Contains(ll, "marking node") {
			continue
		}
		// "pid:R 29 Nov 2026 09:20:51.567 # text": keep this fault's lines only.
		if _, rest, ok := strings.Cut(l, " "); ok && len(rest) >= 24 {
			if ts, err := time.ParseInLocation("02 Jan 2006 15:04:05.000", rest[:24], time.Local); err == nil && ts.Before(since) {
				continue
			}
		}
		keep = append(keep, strings.TrimSpace(l))
	}
	if len(keep) > 12 {
		keep = keep[len(keep)-12:]
	}
	f.mu.Lock()
	f.seen.logLines = keep
	f.mu.Unlock()
}

// Evidence implements Fault.
func (f *Failover) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{"mode": f.cfg.mode, "target": f.cfg.target.String()}
	if f.aim.resolved == "" {
		return ev
	}
	ev["slot"] = f.aim.slot
	ev["old_master"] = tpNodeRef(f.aim.old)
	ev["replicas"] = f.aim.replicas
	if f.aim.candidate.ID != "" {
		ev["candidate"] = tpNodeRef(f.aim.candidate)
	}
	if !f.act.started {
		return ev
	}
	ev["injected_at"] = f.act.injectedAt.UTC().Format(time.RFC3339Nano)
	ev["new_master_seen"] = f.seen.recovered
	if f.seen.recovered {
		ev["new_master"] = tpNodeRef(f.seen.newMaster)
		ev["recovery_ms"] = tpMillis(f.seen.recovery)
	}
	if f.seen.converged > 0 {
		ev["converged_ms"] = tpMillis(f.seen.converged)
	}
	ev["automatic_failover"] = f.seen.auto
	if f.act.requests > 0 {
		ev["failover_requests"] = f.act.requests
	}
	if f.cfg.mode == FailoverPause {
		if !f.act.resumedAt.IsZero() {
			ev["paused_ms"] = tpMillis(f.act.resumedAt.Sub(f.act.injectedAt))
		} else {
			ev["paused_ms"] = nil // still paused
		}
	}
	if f.cfg.mode == FailoverKill {
		ev["restarted"] = f.act.restarted
	}
	if f.act.healed {
		ev["healed"] = true
		ev["heal_ms"] = tpMillis(f.act.healDur)
		ev["old_master_role_after"] = f.seen.roleAfter
		ev["slot_owner_after"] = f.seen.masterAfter
		ev["cluster_healthy_after_heal"] = f.seen.healthy
		if f.cfg.mode == FailoverKill && f.act.restarted {
			ev["restarted_as_replica"] = f.seen.roleAfter == "replica"
		}
	}
	if f.cfg.failback {
		ev["failed_back"] = f.act.failedBack
	}
	if len(f.seen.notes) > 0 {
		ev["notes"] = append([]string(nil), f.seen.notes...)
	}
	if len(f.seen.logLines) > 0 {
		ev["log"] = append([]string(nil), f.seen.logLines...)
	}
	return ev
}

// ---- small helpers shared by this package's kinds ----

func tpNodeRef(n compose.Node) map[string]any {
	return map[string]any{"addr": n.Addr, "id": n.ID}
}

func tpMillis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

func tpArgs(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = fmt.Sprint(a)
	}
	return out
}
