package faults

// What replica-lag and replica-partition share: the replication link they
// act on (the target's master, its replicas, and the proxy the master's
// stream runs through) and the watch that turns offsets into evidence.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"seckill-harness/compose"
	"seckill-harness/internal/sleep"
)

// replicationRules are the rules both replication kinds declare: they act
// on the replication proxies the harness put on the master→replica stream
// (no node, slot or setting changes), stack with other faults (a failover
// during a cut stream is the loss they exist to show), and need a replica
// and a cluster whose replication runs through those proxies.
func replicationRules() Rules {
	return Rules{
		Destructive:             NotDestructive(),
		Overlap:                 Stacks,
		Topology:                Topology{Replicas: 1, ReplicasWhy: "a replica of the target's master (the replication stream to act on)"},
		NeedsReplicationProxies: "acts on the master→replica stream",
	}
}

// hasReplicationProxies reports whether c's replication runs through
// proxies of the harness.
func hasReplicationProxies(c compose.Cluster) bool {
	rl, ok := c.(compose.ReplicationLinks)
	if !ok {
		return false
	}
	_, on := rl.ReplicationToxics()
	return on
}

// replWatchEvery is how often a replication fault reads the offsets of
// the link it acts on.
const replWatchEvery = 100 * time.Millisecond

// replCatchUpTimeout bounds how long Heal waits for the replicas to be
// linked again and caught up with the master's offset at the heal.
const replCatchUpTimeout = 30 * time.Second

// replLink is the master→replica stream a replication fault acts on.
type replLink struct {
	master   compose.Node
	replicas []compose.Node
	toxics   compose.Toxics // the cluster's replication proxies, by sending node
}

// resolveReplLink finds the link of target: the target itself when it is
// a master, else the master it replicates; the link carries the stream to
// every replica of that master. It fails when the cluster's replication is
// not proxied or the master has no replica.
func resolveReplLink(ctx context.Context, env *Env, target Target, kind string) (replLink, error) {
	var link replLink
	if env.cluster() == nil {
		return link, fmt.Errorf("fault %s: no cluster", kind)
	}
	rl, ok := env.cluster().(compose.ReplicationLinks)
	if ok {
		link.toxics, ok = rl.ReplicationToxics()
	}
	if !ok {
		return link, fmt.Errorf("fault %s needs a cluster whose replication runs through proxies of the harness: "+
			"a local cluster started with replication proxies (compose.Options.ReplicationProxies); this %s cluster replicates directly", kind, env.cluster().Provider())
	}
	n, err := target.ResolveOne(ctx, env)
	if err != nil {
		return link, fmt.Errorf("fault %s: %w", kind, err)
	}
	link.master = n
	if n.Role == "replica" {
		if link.master, err = env.cluster().NodeByID(ctx, n.MasterID); err != nil {
			return link, fmt.Errorf("fault %s: the master of replica %s: %w", kind, n.Addr, err)
		}
	}
	if link.replicas, err = env.cluster().ReplicasOf(ctx, link.master.ID); err != nil {
		return link, fmt.Errorf("fault %s: replicas of %s: %w", kind, link.master.Addr, err)
	}
	if len(link.replicas) == 0 {
		return link, fmt.Errorf("fault %s: master %s (%s) has no replica: there is no replication link to act on", kind, link.master.Addr, shortID(link.master.ID))
	}
	return link, nil
}

// lagOf reads the link's replicas' lag (only those still replicating the
// link's master).
func (l replLink) lagOf(ctx context.Context, env *Env) []compose.ReplicaLag {
	all, err := compose.ReadReplicationLag(ctx, env.cluster())
	if err != nil {
		return nil
	}
	var out []compose.ReplicaLag
	for _, r := range all {
		if r.Master == l.master.Addr {
			out = append(out, r)
		}
	}
	return out
}

// replWatch records the link's offsets from Inject to the replicas'
// catching up after Heal.
type replWatch struct {
	mu          sync.Mutex
	link        replLink
	injectedAt  time.Time
	atInject    []compose.ReplicaLag
	maxLag      int64
	statuses    []string
	healedAt    time.Time
	atHeal      []compose.ReplicaLag
	caughtUpAt  time.Time
	catchUpErr  string
	stop        context.CancelFunc
	stopped     chan struct{}
	samples     int
	injected    bool
	healStarted bool
}

// start records the state at inject and samples the offsets every
// replWatchEvery until finish.
func (w *replWatch) start(env *Env, link replLink) {
	w.mu.Lock()
	w.link, w.injectedAt, w.injected = link, time.Now(), true
	w.mu.Unlock()
	w.observe(link.lagOf(context.Background(), env), true)
	ctx, cancel := context.WithCancel(context.Background())
	w.stop, w.stopped = cancel, make(chan struct{})
	go func() {
		defer close(w.stopped)
		for sleep.For(ctx, replWatchEvery) {
			rctx, c := context.WithTimeout(ctx, time.Second)
			lags := link.lagOf(rctx, env)
			c()
			w.observe(lags, false)
		}
	}()
}

func (w *replWatch) observe(lags []compose.ReplicaLag, first bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if first {
		w.atInject = lags
	}
	w.samples++
	for _, r := range lags {
		if r.LagBytes != nil && *r.LagBytes > w.maxLag {
			w.maxLag = *r.LagBytes
		}
		if r.LinkStatus != "" && !slices.Contains(w.statuses, r.LinkStatus) {
			w.statuses = append(w.statuses, r.LinkStatus)
		}
	}
}

// healed waits until every replica still replicating the link's master is
// linked ("up") and has received everything the master had produced when
// the heal began, then stops the sampling. It records when that happened
// (or why it did not); the error says so too.
func (w *replWatch) healed(ctx context.Context, env *Env, kind string) error {
	w.mu.Lock()
	if !w.injected || w.healStarted {
		w.mu.Unlock()
		return nil
	}
	w.healStarted, w.healedAt = true, time.Now()
	link := w.link
	w.mu.Unlock()
	defer func() {
		w.stop()
		<-w.stopped
	}()
	atHeal := link.lagOf(ctx, env)
	want := map[string]int64{}
	for _, r := range atHeal {
		if r.MasterOffset != nil {
			want[r.Replica] = *r.MasterOffset
		}
	}
	w.mu.Lock()
	w.atHeal = atHeal
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, replCatchUpTimeout)
	defer cancel()
	var last []compose.ReplicaLag
	for {
		last = link.lagOf(ctx, env)
		if caughtUp(last, want) {
			w.mu.Lock()
			w.caughtUpAt = time.Now()
			w.mu.Unlock()
			env.logf("fault %s: replicas of %s linked and caught up %v after the heal", kind, link.master.Addr, time.Since(w.healedAt).Round(time.Millisecond))
			return nil
		}
		if !sleep.For(ctx, replWatchEvery) {
			err := fmt.Errorf("fault %s: replicas of %s not linked and caught up within %v of the heal: %s", kind, link.master.Addr, replCatchUpTimeout, describeLags(last))
			w.mu.Lock()
			w.catchUpErr = err.Error()
			w.mu.Unlock()
			return err
		}
	}
}

// caughtUp: every replica is up and at or past the offset it had to reach
// (a replica that was failed over or moved away is no longer listed).
func caughtUp(lags []compose.ReplicaLag, want map[string]int64) bool {
	for _, r := range lags {
		if r.LinkStatus != "up" || r.ReplicaOffset == nil || *r.ReplicaOffset < want[r.Replica] {
			return false
		}
	}
	return true
}

func describeLags(lags []compose.ReplicaLag) string {
	if len(lags) == 0 {
		return "no replica answered"
	}
	var errs []error
	for _, r := range lags {
		lag := "?"
		if r.LagBytes != nil {
			lag = fmt.Sprint(*r.LagBytes)
		}
		errs = append(errs, fmt.Errorf("%s link %q lag %s bytes", r.Replica, r.LinkStatus, lag))
	}
	return errors.Join(errs...).Error()
}

// evidence renders what the watch saw.
func (w *replWatch) evidence(ev map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.injected {
		return
	}
	ev["master"] = w.link.master.Addr
	ev["master_id"] = w.link.master.ID
	ev["replicas"] = nodeAddrs(w.link.replicas)
	ev["at_inject"] = w.atInject
	ev["max_lag_bytes"] = w.maxLag
	ev["link_status_seen"] = slices.Clone(w.statuses)
	ev["offset_samples"] = w.samples
	ev["injected_at"] = w.injectedAt.Format(time.RFC3339Nano)
	if !w.healedAt.IsZero() {
		ev["healed_at"] = w.healedAt.Format(time.RFC3339Nano)
		ev["at_heal"] = w.atHeal
	}
	if !w.caughtUpAt.IsZero() {
		ev["caught_up_after_heal_ms"] = w.caughtUpAt.Sub(w.healedAt).Milliseconds()
	}
	if w.catchUpErr != "" {
		ev["catch_up_error"] = w.catchUpErr
	}
}

// replFault is what both replication kinds keep: their kind and target,
// the watch of the link, and the errors met on the way.
type replFault struct {
	kind   string
	target Target

	mu    sync.Mutex // guards errs and the kinds' own state
	errs  []string
	watch replWatch
}

func (f *replFault) Kind() string { return f.kind }

func (f *replFault) Target() string {
	f.watch.mu.Lock()
	defer f.watch.mu.Unlock()
	if f.watch.injected {
		return f.target.String() + " (stream from " + f.watch.link.master.Addr + ")"
	}
	return f.target.String()
}

// begin resolves the link of the target and starts watching it.
func (f *replFault) begin(ctx context.Context, env *Env) (replLink, error) {
	link, err := resolveReplLink(ctx, env, f.target, f.kind)
	if err != nil {
		return link, err
	}
	f.watch.start(env, link)
	return link, nil
}

// failed records err (f.mu held) and returns it wrapped with the kind.
func (f *replFault) failed(what string, err error) error {
	f.errs = append(f.errs, err.Error())
	return fmt.Errorf("fault %s: %s%w", f.kind, what, err)
}

// evidence adds the watch's figures and the errors to ev.
func (f *replFault) evidence(ev map[string]any) map[string]any {
	ev["target"] = f.target.String()
	f.watch.evidence(ev)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) > 0 {
		ev["errors"] = append([]string(nil), f.errs...)
	}
	return ev
}
