package faults

// slot-migration: live resharding of the hot slot(s) while the load runs,
// exactly as redis-cli --cluster reshard does it: the destination IMPORTING,
// the source MIGRATING, MIGRATE … KEYS in batches, then SETSLOT NODE on
// every master. Multi-key scripts get TRYAGAIN (or ASK) for the whole window.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
)

var slotMigrationKind = Spec{
	Kind: "slot-migration",
	Help: "live-migrate the hot slot (or every activity slot) to another master while the load runs: " +
		"SETSLOT IMPORTING/MIGRATING, MIGRATE … KEYS in batches, SETSLOT NODE on every master; " +
		"Inject returns when the migration is done, heal finishes an interrupted one",
	Params: []Param{slotMigrationSlots.Param, slotMigrationTo.Param, slotMigrationBatch.Param, slotMigrationPause.Param, slotMigrationTimeout.Param},

	Build: newSlotMigration,
	Rules: Rules{
		Destructive:   DestructiveBecause("it moves slots and their keys between masters (CLUSTER SETSLOT, MIGRATE)"),
		Overlap:       Exclusive,
		OverlapTarget: slotMigrationTarget,
		Topology:      Topology{Masters: 2, MastersWhy: "another master to move the slot to"},
	},
}

// slotMigrationTarget is what a slot migration acts on, for the overlap
// rule: the master of the hot slot, every master (slots=all), or the
// master of the slot it names.
func slotMigrationTarget(params map[string]string) Acted {
	switch sl := strings.TrimSpace(params["slots"]); sl {
	case "", "hot":
		return Acted{Target: TargetHotMaster, Node: true}
	case "all":
		return Acted{Target: TargetAllMasters, Node: true}
	default:
		return Acted{Target: "slot=" + sl, Node: true}
	}
}

var (
	slotMigrationSlots = textParam("slots", "hot", "hot (the slot of bucket 0), all (every activity slot) or a slot number", func(v string) error {
		if v == "hot" || v == "all" {
			return nil
		}
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n >= compose.NumSlots {
			return fmt.Errorf("want hot, all or a slot number in [0,%d)", compose.NumSlots)
		}
		return nil
	})
	slotMigrationTo = textParam("to", "", "destination master: node id or host:port (default: the master after the owner, in start order)", func(v string) error {
		if !isNodeID(v) && !isHostPort(v) {
			return errors.New("want a 40-hex-char node id or host:port")
		}
		return nil
	}).doc("the next master")
	slotMigrationBatch   = intParam("batch", 100, 1, math.MaxInt64, "", "keys per CLUSTER GETKEYSINSLOT / MIGRATE round")
	slotMigrationPause   = durationParam("pause", 0, "sleep between batches, to widen the migration window")
	slotMigrationTimeout = durationParam("timeout", 5*time.Second, "MIGRATE timeout per batch")
)

func newSlotMigration(v Values) (Fault, error) {
	m := &SlotMigration{slots: slotMigrationSlots.Of(v), to: slotMigrationTo.Of(v), batch: int(slotMigrationBatch.Of(v)),
		pause: slotMigrationPause.Of(v), timeout: slotMigrationTimeout.Of(v)}
	if m.timeout < time.Millisecond {
		return nil, errors.New("timeout must be at least 1ms")
	}
	return m, nil
}

// SlotMigration is the "slot-migration" fault. Build it with Plan/Parse.
type SlotMigration struct {
	slots   string
	to      string
	batch   int
	pause   time.Duration
	timeout time.Duration

	healMu sync.Mutex // serialises Heal
	mu     sync.Mutex // guards the fields below
	plans  []*slotMove
	began  time.Time
	total  time.Duration
	healed bool
	notes  []string
}

// slotMove is the migration of one slot.
type slotMove struct {
	slot     int
	src, dst compose.Node
	// phase: planned → importing (dst marked) → migrating (src marked, keys
	// moving) → assigning (SETSLOT NODE under way) → done
	phase        string
	keysBefore   int64
	keysMoved    int
	batches      int
	replaced     int // keys re-sent with REPLACE after BUSYKEY
	ioRetries    int
	start, end   time.Time
	converged    time.Duration
	ownerAfter   compose.Node
	srcLeft      int64
	dstKeys      int64
	healFinished bool
	rolledBack   bool
	skipped      string
	stoppedAt    string     // the phase a failed Inject left it in ("": Inject did not stop on it)
	keysAtStop   int        // keysMoved when Inject stopped on it
	timing       moveTiming // how long the keys were in flight, and the clocks' skew
}

// moveTiming is when the keys of a moved slot were in flight and how far
// the two nodes' clocks disagree: what bounds how much later a moved
// key's expiry may fall.
type moveTiming struct {
	// The MIGRATE rounds that carried the slot's keys: the first's start,
	// the last's end, and the longest round (every attempt of one batch).
	// A key's expiry moves later by at most the round that carried it.
	migrateFirst, migrateLast time.Time
	longestRound              time.Duration
	// The destination's clock minus the source's (TIME on both), and the
	// uncertainty of that reading (half the two round trips).
	clockSkew, clockUncertainty time.Duration
	clockRead                   bool
}

var (
	_ Fault         = (*SlotMigration)(nil)
	_ ExpiryDrifter = (*SlotMigration)(nil)
	_ ActedAnyway   = (*SlotMigration)(nil)
)

// Kind implements Fault.
func (m *SlotMigration) Kind() string { return "slot-migration" }

// Target implements Fault.
func (m *SlotMigration) Target() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.plans) == 0 {
		return "slots=" + m.slots
	}
	var parts []string
	for _, p := range m.plans {
		parts = append(parts, fmt.Sprintf("slot %d %s→%s", p.slot, p.src.Addr, p.dst.Addr))
	}
	return strings.Join(parts, ", ")
}

// Inject implements Fault: it returns once every planned slot has moved.
func (m *SlotMigration) Inject(ctx context.Context, env *Env) error {
	plans, err := m.plan(ctx, env)
	if err != nil {
		return fmt.Errorf("slot-migration: %w", err)
	}
	m.mu.Lock()
	m.plans, m.began = plans, time.Now()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.total = time.Since(m.began)
		m.mu.Unlock()
	}()
	for _, p := range plans {
		if p.skipped != "" {
			continue
		}
		env.logf("slot-migration: slot %d %s (%s) → %s (%s), batch %d, pause %v",
			p.slot, p.src.Addr, shortID(p.src.ID), p.dst.Addr, shortID(p.dst.ID), m.batch, m.pause)
		if err := m.move(ctx, env, p, m.pause); err != nil {
			m.mu.Lock()
			p.stoppedAt, p.keysAtStop = p.phase, p.keysMoved
			m.mu.Unlock()
			return fmt.Errorf("slot-migration: slot %d: %w", p.slot, err)
		}
		m.mu.Lock()
		env.logf("slot-migration: slot %d moved: %d keys in %d batches, %v", p.slot, p.keysMoved, p.batches, p.end.Sub(p.start).Round(time.Millisecond))
		m.mu.Unlock()
	}
	return nil
}

// plan resolves slots, sources and destinations against the live topology.
func (m *SlotMigration) plan(ctx context.Context, env *Env) ([]*slotMove, error) {
	var slots []int
	switch m.slots {
	case "hot", "all":
		sale, err := env.saleSlots(ctx)
		if err != nil {
			return nil, err
		}
		if m.slots == "hot" {
			slots = []int{sale[0]}
		} else {
			for _, s := range sale {
				if !slices.Contains(slots, s) {
					slots = append(slots, s)
				}
			}
		}
	default:
		n, _ := strconv.Atoi(m.slots)
		slots = []int{n}
	}
	nodes, err := env.nodes(ctx)
	if err != nil {
		return nil, err
	}
	var masters []compose.Node
	for _, n := range nodes {
		if n.Role == "master" && healthy(n) {
			masters = append(masters, n)
		}
	}
	var to *compose.Node
	if m.to != "" {
		for i, n := range masters {
			if strings.EqualFold(n.ID, m.to) || n.Addr == m.to {
				to = &masters[i]
			}
		}
		if to == nil {
			return nil, fmt.Errorf("to=%s is not a healthy master of the cluster", m.to)
		}
	}
	var out []*slotMove
	for _, s := range slots {
		src := -1
		for i, n := range masters {
			if n.HasSlot(s) {
				src = i
			}
		}
		if src < 0 {
			return nil, fmt.Errorf("no healthy master owns slot %d", s)
		}
		p := &slotMove{slot: s, src: masters[src], phase: "planned"}
		switch {
		case to != nil:
			p.dst = *to
		case len(masters) < 2:
			return nil, errors.New("only one healthy master: nowhere to migrate to")
		default:
			p.dst = masters[(src+1)%len(masters)]
		}
		if p.dst.ID == p.src.ID {
			p.skipped = "already owned by the destination"
		}
		out = append(out, p)
	}
	return out, nil
}

// move migrates p.slot from p.src to p.dst, resuming wherever it stands.
func (m *SlotMigration) move(ctx context.Context, env *Env, p *slotMove, pause time.Duration) error {
	c := env.cluster()
	src, err := c.Admin(p.src.Addr)
	if err != nil {
		return fmt.Errorf("source %s: %w", p.src.Addr, err)
	}
	dst, err := c.Admin(p.dst.Addr)
	if err != nil {
		return fmt.Errorf("destination %s: %w", p.dst.Addr, err)
	}
	m.mu.Lock()
	if p.start.IsZero() {
		p.start = time.Now()
	}
	first := p.phase == "planned"
	m.mu.Unlock()
	if first {
		if n, err := src.ClusterCountKeysInSlot(ctx, p.slot).Result(); err == nil {
			m.mu.Lock()
			p.keysBefore = n
			m.mu.Unlock()
		}
		m.readClockSkew(ctx, p, src, dst)
	}
	m.mu.Lock()
	assigning := p.phase == "assigning"
	m.mu.Unlock()
	if !assigning {
		if err := m.moveKeys(ctx, env, p, src, dst, pause); err != nil {
			return err
		}
	}
	if err := m.assign(ctx, env, p, src, dst); err != nil {
		return err
	}
	m.afterMove(ctx, env, p, src, dst)
	return nil
}

// assign gives the slot to the destination: destination first (it stops
// answering ASK-only and bumps its epoch), then the source (it stops
// redirecting with ASK), then every other master, so that MOVED answers
// point at the new owner.
func (m *SlotMigration) assign(ctx context.Context, env *Env, p *slotMove, src, dst *redis.Client) error {
	c := env.cluster()
	m.setPhase(p, "assigning")
	if err := tpSetSlot(ctx, dst, p.slot, "NODE", p.dst.ID); err != nil {
		return fmt.Errorf("destination %s: %w", p.dst.Addr, err)
	}
	if err := tpSetSlot(ctx, src, p.slot, "NODE", p.dst.ID); err != nil {
		return fmt.Errorf("source %s: %w", p.src.Addr, err)
	}
	nodes, err := c.Nodes(ctx)
	if err == nil {
		for _, n := range nodes {
			if n.Role != "master" || n.ID == p.src.ID || n.ID == p.dst.ID || !healthy(n) {
				continue
			}
			if cl, err := c.Admin(n.Addr); err == nil {
				if err := tpSetSlot(ctx, cl, p.slot, "NODE", p.dst.ID); err != nil {
					m.note("SETSLOT %d NODE on %s: %v (gossip will tell it)", p.slot, n.Addr, err)
				}
			}
		}
	}
	m.mu.Lock()
	p.phase, p.end = "done", time.Now()
	m.mu.Unlock()
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	return nil
}

// afterMove records the evidence of a moved slot: who owns it now, whether
// everybody has heard, and the keys left on either side.
func (m *SlotMigration) afterMove(ctx context.Context, env *Env, p *slotMove, src, dst *redis.Client) {
	c := env.cluster()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := c.WaitSlotOwner(wctx, p.slot, p.dst.ID); err != nil {
		m.note("slot %d: not every node names the new owner yet: %v", p.slot, err)
	} else {
		m.mu.Lock()
		p.converged = time.Since(t0)
		m.mu.Unlock()
	}
	owner, _ := c.MasterOfSlot(ctx, p.slot)
	srcLeft, _ := src.ClusterCountKeysInSlot(ctx, p.slot).Result()
	dstKeys, _ := dst.ClusterCountKeysInSlot(ctx, p.slot).Result()
	m.mu.Lock()
	p.ownerAfter, p.srcLeft, p.dstKeys = owner, srcLeft, dstKeys
	m.mu.Unlock()
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
}

// moveKeys marks the slot on both sides and moves its keys in batches.
func (m *SlotMigration) moveKeys(ctx context.Context, env *Env, p *slotMove, src, dst *redis.Client, pause time.Duration) error {
	// The destination first, so that no ASK reaches a node that is not importing yet.
	if err := tpSetSlot(ctx, dst, p.slot, "IMPORTING", p.src.ID); err != nil {
		return fmt.Errorf("destination %s: %w", p.dst.Addr, err)
	}
	m.setPhase(p, "importing")
	if err := tpSetSlot(ctx, src, p.slot, "MIGRATING", p.dst.ID); err != nil {
		return fmt.Errorf("source %s: %w", p.src.Addr, err)
	}
	m.setPhase(p, "migrating")
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	host, port, _ := net.SplitHostPort(p.dst.Addr)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted (heal finishes the migration): %w", err)
		}
		keys, err := src.ClusterGetKeysInSlot(ctx, p.slot, m.batch).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER GETKEYSINSLOT %d %d on %s: %w", p.slot, m.batch, p.src.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		if err := m.migrateBatch(ctx, src, host, port, migrateAuth(env), keys, p); err != nil {
			return err
		}
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("interrupted (heal finishes the migration): %w", ctx.Err())
			case <-t.C:
			}
		}
	}
	return nil
}

// migrateBatch sends one MIGRATE … KEYS. BUSYKEY (the destination already
// holds one of the keys, e.g. after an earlier MIGRATE whose reply timed out)
// is resolved with REPLACE: the source still holds the key, so its copy is
// the current one. IOERR and timeouts are retried three times.
func (m *SlotMigration) migrateBatch(ctx context.Context, src *redis.Client, host, port string, auth []any, keys []string, p *slotMove) error {
	defer m.recordRound(p, time.Now())
	replace := false
	for attempt := 0; ; attempt++ {
		args := []any{"MIGRATE", host, port, "", 0, m.timeout.Milliseconds()}
		if replace {
			args = append(args, "REPLACE")
		}
		args = append(args, auth...) // AUTH/AUTH2 on clusters with credentials (never logged)
		args = append(args, "KEYS")
		for _, k := range keys {
			args = append(args, k)
		}
		cctx, cancel := context.WithTimeout(ctx, m.timeout+2*time.Second)
		err := src.Do(cctx, args...).Err()
		cancel()
		if err == nil || strings.HasPrefix(err.Error(), "NOKEY") {
			m.mu.Lock()
			p.keysMoved += len(keys)
			p.batches++
			if replace {
				p.replaced += len(keys)
			}
			m.mu.Unlock()
			return nil
		}
		msg := err.Error()
		switch {
		case isBusyKey(msg) && !replace:
			replace = true
			continue
		case (strings.HasPrefix(msg, "IOERR") || tpIsTimeout(err)) && attempt < 3 && ctx.Err() == nil:
			m.mu.Lock()
			p.ioRetries++
			m.mu.Unlock()
			time.Sleep(time.Duration(100*(attempt+1)) * time.Millisecond)
			continue
		}
		return fmt.Errorf("MIGRATE %d keys to %s:%s: %w", len(keys), host, port, err)
	}
}

// isBusyKey reports whether a MIGRATE error is the destination's BUSYKEY.
// Redis relays the destination's error inside its own: 7.0 answers
// "ERR Target instance replied with error: BUSYKEY Target key name
// already exists.", so BUSYKEY is matched where it stands, not as a
// prefix.
func isBusyKey(msg string) bool {
	return strings.HasPrefix(msg, "BUSYKEY") || strings.Contains(msg, "replied with error: BUSYKEY")
}

// recordRound records one MIGRATE round (every attempt of one batch, failed
// ones too: a timed-out MIGRATE may still have moved its keys) that began
// at start and ends now.
func (m *SlotMigration) recordRound(p *slotMove, start time.Time) {
	end := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.timing.migrateFirst.IsZero() {
		p.timing.migrateFirst = start
	}
	p.timing.migrateLast = end
	p.timing.longestRound = max(p.timing.longestRound, end.Sub(start))
}

// readClockSkew reads TIME on the source and the destination: a key's
// expiry moves later by the destination's clock minus the source's, on top
// of the transfer time. A failed read leaves it unmeasured (counted as 0,
// and the evidence says so).
func (m *SlotMigration) readClockSkew(ctx context.Context, p *slotMove, src, dst *redis.Client) {
	offSrc, rttSrc, err1 := clockOffset(ctx, src)
	offDst, rttDst, err2 := clockOffset(ctx, dst)
	if err1 != nil || err2 != nil {
		m.note("slot %d: clock skew not measured: %v", p.slot, errors.Join(err1, err2))
		return
	}
	m.mu.Lock()
	p.timing.clockSkew, p.timing.clockUncertainty, p.timing.clockRead = offDst-offSrc, (rttSrc+rttDst)/2, true
	m.mu.Unlock()
}

// clockOffset is the node's clock (TIME) minus the local clock at the
// midpoint of the call, and the call's round trip.
func clockOffset(ctx context.Context, cl *redis.Client) (time.Duration, time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	t0 := time.Now()
	at, err := cl.Time(cctx).Result()
	rtt := time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	return at.Sub(t0.Add(rtt / 2)), rtt, nil
}

// ExpiryDrifts implements ExpiryDrifter: MIGRATE sends each key's remaining
// TTL and the destination adds its own clock at RESTORE, so a moved key's
// absolute expiry lands later by the time between the source's read and
// the destination's write — at most the MIGRATE round that carried it
// (rounded up to the servers' whole milliseconds) — plus the destination's
// clock lead over the source's when TIME showed one beyond its reading
// error (on one machine there is none).
func (m *SlotMigration) ExpiryDrifts() []ExpiryDrift {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ExpiryDrift
	for _, p := range m.plans {
		if p.timing.migrateFirst.IsZero() {
			continue // no key of it was sent
		}
		round := ceilMs(p.timing.longestRound)
		out = append(out, ExpiryDrift{Slot: p.slot, Drift: round + p.clockLead(),
			Reason: fmt.Sprintf("slot-migration moved slot %d (%d keys in %d MIGRATE rounds over %s): a key's expiry moves later by at most its round, the longest took %s; destination clock lead %s",
				p.slot, p.keysMoved, p.batches, p.timing.migrateLast.Sub(p.timing.migrateFirst).Round(time.Millisecond), round, p.clockLead())})
	}
	return out
}

// clockLead is the destination's clock lead over the source's when the
// reading shows one beyond its uncertainty, else 0.
func (p *slotMove) clockLead() time.Duration {
	if !p.timing.clockRead || p.timing.clockSkew <= p.timing.clockUncertainty {
		return 0
	}
	return ceilMs(p.timing.clockSkew)
}

// ceilMs rounds d up to whole milliseconds: the servers keep expiries and
// their clocks in whole milliseconds, so a transfer of 0.2 ms can move an
// expiry by 1 ms.
func ceilMs(d time.Duration) time.Duration {
	if t := d.Truncate(time.Millisecond); t < d {
		return t + time.Millisecond
	}
	return d
}

func tpIsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

func tpSetSlot(ctx context.Context, cl *redis.Client, slot int, sub, id string) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	args := []any{"CLUSTER", "SETSLOT", slot, sub}
	if id != "" {
		args = append(args, id)
	}
	if err := cl.Do(cctx, args...).Err(); err != nil {
		return fmt.Errorf("CLUSTER SETSLOT %d %s %s: %w", slot, sub, shortID(id), err)
	}
	return nil
}

func (m *SlotMigration) setPhase(p *slotMove, phase string) {
	m.mu.Lock()
	p.phase = phase
	m.mu.Unlock()
}

func (m *SlotMigration) note(format string, args ...any) {
	m.mu.Lock()
	m.notes = append(m.notes, fmt.Sprintf(format, args...))
	m.mu.Unlock()
}

// Heal implements Fault: a migration that was interrupted is finished (keys
// may already sit on the destination, so going forward is the safe way) or,
// if the source was never marked MIGRATING, rolled back; then no touched
// slot may be left MIGRATING/IMPORTING and the cluster must be healthy.
func (m *SlotMigration) Heal(ctx context.Context, env *Env) error {
	m.healMu.Lock()
	defer m.healMu.Unlock()
	if env.cluster() == nil {
		return nil // nothing was injected: Inject refuses an Env without a cluster
	}
	m.mu.Lock()
	plans := append([]*slotMove(nil), m.plans...)
	m.mu.Unlock()
	var errs []error
	for _, p := range plans {
		if err := m.healSlot(ctx, env, p); err != nil {
			errs = append(errs, err)
		}
	}
	if env.Client != nil {
		env.Client.ReloadState(ctx)
	}
	if len(plans) > 0 {
		errs = append(errs, m.checkHealed(ctx, env, plans)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("slot-migration heal: %w", errors.Join(errs...))
	}
	m.mu.Lock()
	m.healed = true
	m.mu.Unlock()
	return nil
}

// healSlot finishes or rolls back the migration of one slot.
func (m *SlotMigration) healSlot(ctx context.Context, env *Env, p *slotMove) error {
	m.mu.Lock()
	phase, skipped := p.phase, p.skipped
	m.mu.Unlock()
	if skipped != "" || phase == "done" {
		return nil
	}
	if phase == "migrating" || phase == "assigning" || m.begunAnyway(ctx, env, p) {
		env.logf("slot-migration: heal finishes the migration of slot %d (phase %s)", p.slot, phase)
		if err := m.move(ctx, env, p, 0); err != nil {
			return fmt.Errorf("slot %d: finishing the migration: %w", p.slot, err)
		}
		m.mu.Lock()
		p.healFinished = true
		m.mu.Unlock()
		return nil
	}
	env.logf("slot-migration: heal rolls back slot %d (phase %s)", p.slot, phase)
	c := env.cluster()
	var rbErr error
	for _, n := range []compose.Node{p.dst, p.src} {
		cl, err := c.Admin(n.Addr)
		if err == nil {
			err = tpSetSlot(ctx, cl, p.slot, "STABLE", "")
		}
		if err != nil {
			rbErr = errors.Join(rbErr, fmt.Errorf("slot %d: SETSLOT STABLE on %s: %w", p.slot, n.Addr, err))
		}
	}
	if rbErr != nil {
		return rbErr
	}
	m.mu.Lock()
	p.rolledBack, p.phase = true, "rolled-back"
	m.mu.Unlock()
	return nil
}

// begunAnyway reports whether a slot whose source was not (knowingly)
// marked MIGRATING is migrating all the same (a lost reply) or has keys on
// the destination: heal then goes forward rather than rolling back.
func (m *SlotMigration) begunAnyway(ctx context.Context, env *Env, p *slotMove) bool {
	c := env.cluster()
	forward := false
	if open, err := c.OpenSlots(ctx); err == nil {
		for _, o := range open {
			if o.Slot == p.slot && o.NodeID == p.src.ID && o.State == "migrating" {
				forward = true
			}
		}
	}
	if dst, err := c.Admin(p.dst.Addr); err == nil {
		if n, err := dst.ClusterCountKeysInSlot(ctx, p.slot).Result(); err == nil && n > 0 {
			forward = true
		}
	}
	return forward
}

// checkHealed: no slot of plans left open, and the cluster healthy.
func (m *SlotMigration) checkHealed(ctx context.Context, env *Env, plans []*slotMove) []error {
	c := env.cluster()
	var errs []error
	if open, err := c.OpenSlots(ctx); err != nil {
		errs = append(errs, err)
	} else {
		var left []string
		for _, o := range open {
			for _, p := range plans {
				if o.Slot == p.slot {
					left = append(left, o.String())
				}
			}
		}
		if len(left) > 0 {
			errs = append(errs, fmt.Errorf("slots still open: %s", strings.Join(left, " ")))
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// Evidence implements Fault.
func (m *SlotMigration) Evidence() map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev := map[string]any{"slots_param": m.slots, "batch": m.batch, "pause_ms": tpMillis(m.pause)}
	if len(m.plans) == 0 {
		return ev
	}
	var per []map[string]any
	var slots []int
	keys, batches := 0, 0
	for _, p := range m.plans {
		slots = append(slots, p.slot)
		e := map[string]any{
			"slot":         p.slot,
			"owner_before": tpNodeRef(p.src),
			"destination":  tpNodeRef(p.dst),
			"phase":        p.phase,
		}
		if p.skipped != "" {
			e["skipped"] = p.skipped
			per = append(per, e)
			continue
		}
		e["keys_before"] = p.keysBefore
		e["keys_moved"] = p.keysMoved
		e["batches"] = p.batches
		e["busykey_replaced"] = p.replaced
		e["ioerr_retries"] = p.ioRetries
		if !p.end.IsZero() {
			e["duration_ms"] = tpMillis(p.end.Sub(p.start))
			e["owner_after"] = tpNodeRef(p.ownerAfter)
			e["owner_changed"] = p.ownerAfter.ID != "" && p.ownerAfter.ID != p.src.ID
			e["keys_left_on_source"] = p.srcLeft
			e["keys_on_destination"] = p.dstKeys
			if p.converged > 0 {
				e["converged_ms"] = tpMillis(p.converged)
			}
		}
		if !p.start.IsZero() {
			e["started_at"] = p.start.UTC().Format(time.RFC3339Nano)
		}
		if !p.timing.migrateFirst.IsZero() {
			e["migrate_window_ms"] = tpMillis(p.timing.migrateLast.Sub(p.timing.migrateFirst))
			e["longest_migrate_round_ms"] = tpMillis(p.timing.longestRound)
		}
		if p.timing.clockRead {
			e["clock_skew_ms"] = tpMillis(p.timing.clockSkew)
			e["clock_skew_uncertainty_ms"] = tpMillis(p.timing.clockUncertainty)
		}
		if p.healFinished {
			e["finished_by_heal"] = true
		}
		if p.rolledBack {
			e["rolled_back"] = true
		}
		keys += p.keysMoved
		batches += p.batches
		per = append(per, e)
	}
	ev["slots"] = slots
	ev["migrations"] = per
	ev["keys_moved"] = keys
	ev["batches"] = batches
	if m.total > 0 {
		ev["duration_ms"] = tpMillis(m.total)
	}
	if m.healed {
		ev["healed"] = true
	}
	if len(m.notes) > 0 {
		ev["notes"] = append([]string(nil), m.notes...)
	}
	return ev
}

// CompletesOnInject: the migration is over when Inject returns.
func (m *SlotMigration) CompletesOnInject() bool { return true }

// migrateAuth returns the AUTH / AUTH2 arguments MIGRATE needs to log in on
// the destination, when the cluster has credentials.
func migrateAuth(env *Env) []any {
	if ma, ok := env.cluster().(compose.MigrateAuther); ok {
		return ma.MigrateAuth()
	}
	return nil
}
