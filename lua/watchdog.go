package lua

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultScriptLimit is how long a script call of the path under test may
// take before the Watchdog sends SCRIPT KILL. A reserve, transition or
// compensate script runs in microseconds; a call that takes seconds is a
// script that loops (or a node that does not answer: then SCRIPT KILL
// finds nothing to kill and nothing is recorded).
const DefaultScriptLimit = 3 * time.Second

// killTimeout bounds one sweep of SCRIPT KILL over the nodes. A node
// running a script serves no command, SCRIPT KILL included, until the
// script has run busy-reply-threshold (5 s by default): a sweep keeps
// trying until then.
const killTimeout = 30 * time.Second

// AdminNodes is what the Watchdog needs of a cluster: the addresses of its
// nodes (masters and replicas; SCRIPT KILL on a node that runs no script
// answers NOTBUSY) and a direct admin connection to each, with the
// cluster's credentials. A compose.Cluster is one. Admin may fail for a
// node known to be down; the node is skipped.
type AdminNodes interface {
	Addrs() []string
	Admin(addr string) (*redis.Client, error)
}

// ScriptKill is one script the Watchdog stopped.
type ScriptKill struct {
	Node   string    `json:"node"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"` // what triggered the sweep: a slow call or a BUSY answer
}

// Watchdog stops scripts of the path under test that run too long, on any
// cluster (SCRIPT KILL only stops a script, which is allowed on a cluster
// the harness does not own). A script call that takes longer than the
// limit, or any call answered BUSY, starts a sweep: SCRIPT KILL on every
// node, each kill recorded (node, time, reason). EnsureNotBusy is the
// final step before the harness exits or tears down: it sweeps once more
// and reports every node still running a script.
//
// SCRIPT KILL cannot stop a script that has already written (Redis answers
// UNKILLABLE): only SHUTDOWN NOSAVE can, which loses the node's unsaved
// writes; the Watchdog never sends it and reports the node as an error
// instead. Safe for concurrent use.
type Watchdog struct {
	nodes AdminNodes
	limit time.Duration

	sweeping atomic.Bool
	// sweepsMu orders Trigger's sweeps.Add against EnsureNotBusy's
	// sweeps.Wait: a WaitGroup's Add from zero must not run concurrently
	// with its Wait (the race detector's finding: a slow call's timer
	// started a sweep while the final check waited).
	sweepsMu sync.Mutex
	sweeps   sync.WaitGroup
	slow     sync.Map // script name -> *slowTimers of its calls

	mu    sync.Mutex
	kills []ScriptKill
	errs  map[string]error // by node: the last failure to stop its script
}

// NewWatchdog watches calls on nodes with the given limit (<= 0:
// DefaultScriptLimit).
func NewWatchdog(nodes AdminNodes, limit time.Duration) *Watchdog {
	if limit <= 0 {
		limit = DefaultScriptLimit
	}
	return &Watchdog{nodes: nodes, limit: limit, errs: map[string]error{}}
}

// Limit is the time a call may take before a sweep starts.
func (w *Watchdog) Limit() time.Duration { return w.limit }

// watch starts watching one script call; call the returned function with
// the call's error when it returns. A nil Watchdog watches nothing.
func (w *Watchdog) watch(script string) watchedCall {
	if w == nil {
		return watchedCall{}
	}
	st := w.timersOf(script)
	t, _ := st.pool.Get().(*time.Timer)
	if t == nil {
		t = time.AfterFunc(w.limit, st.fire)
	} else {
		t.Reset(w.limit)
	}
	return watchedCall{w: w, script: script, t: t, st: st}
}

// watchedCall is one call under the watchdog (a value: no allocation;
// its timer is one of the script's, reused from call to call).
type watchedCall struct {
	w      *Watchdog
	script string
	t      *time.Timer
	st     *slowTimers
}

// done ends the watch of a call that answered err.
func (c watchedCall) done(err error) {
	if c.w == nil {
		return
	}
	c.t.Stop()
	// A timer that fired already (or is firing) goes back too: its
	// function only starts a sweep for a slow call, which this one was.
	c.st.pool.Put(c.t)
	if IsBusy(err) {
		c.w.Trigger(fmt.Sprintf("a %s call was answered BUSY", c.script))
	}
}

// slowTimers are the timers of one script's calls: each runs fire (a
// sweep for a call that ran longer than the limit) and is reused, stopped,
// by later calls.
type slowTimers struct {
	fire func()
	pool sync.Pool // of *time.Timer, stopped
}

// timersOf returns script's timers, made once per script.
func (w *Watchdog) timersOf(script string) *slowTimers {
	if st, ok := w.slow.Load(script); ok {
		return st.(*slowTimers)
	}
	st, _ := w.slow.LoadOrStore(script, &slowTimers{fire: func() {
		w.Trigger(fmt.Sprintf("a %s call ran longer than %s", script, w.limit))
	}})
	return st.(*slowTimers)
}

// IsBusy reports a BUSY answer: the node is running a script (its own or
// another client's) and serves nothing else until it ends or is killed.
func IsBusy(err error) bool {
	return err != nil && isRedisError(err) && redis.HasErrorPrefix(err, "BUSY")
}

// Trigger starts a sweep in the background unless one is running.
func (w *Watchdog) Trigger(reason string) {
	if !w.sweeping.CompareAndSwap(false, true) {
		return
	}
	w.sweepsMu.Lock()
	w.sweeps.Add(1)
	w.sweepsMu.Unlock()
	go func() {
		defer w.sweeps.Done()
		defer w.sweeping.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
		defer cancel()
		w.sweep(ctx, reason)
	}()
}

// sweep sends SCRIPT KILL to every node at once and records the outcome.
// It returns the nodes still running a script when it ends.
func (w *Watchdog) sweep(ctx context.Context, reason string) []string {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var busy []string
	for _, addr := range w.nodes.Addrs() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !w.killOn(ctx, addr, reason) {
				mu.Lock()
				busy = append(busy, addr)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Strings(busy)
	return busy
}

// killOn sends SCRIPT KILL to addr until it answers NOTBUSY (nothing runs,
// after a kill or not), UNKILLABLE, or ctx ends. It reports whether the
// node is known to run no script.
func (w *Watchdog) killOn(ctx context.Context, addr, reason string) bool {
	cl, err := w.nodes.Admin(addr)
	if err != nil {
		return true // down or paused: nothing it runs can answer anyone
	}
	// A SCRIPT KILL sent while the node is inside a script is served only
	// at busy-reply-threshold, and its reply may then be lost to this
	// client's read timeout: the next answer is NOTBUSY. Such a kill is
	// recorded too, saying its reply was lost.
	unanswered := false
	record := func(why string) {
		w.mu.Lock()
		w.kills = append(w.kills, ScriptKill{Node: addr, At: time.Now(), Reason: why})
		delete(w.errs, addr)
		w.mu.Unlock()
	}
	for {
		err := cl.ScriptKill(ctx).Err()
		switch {
		case err == nil:
			record(reason)
			unanswered = false
			continue // again, to see NOTBUSY
		case redis.HasErrorPrefix(err, "NOTBUSY"):
			if unanswered {
				record(reason + " (SCRIPT KILL's reply was lost; the node then answered NOTBUSY)")
			}
			return true
		case redis.HasErrorPrefix(err, "UNKILLABLE"):
			w.fail(addr, fmt.Errorf("node %s runs a script that has written (SCRIPT KILL answered %q): only SHUTDOWN NOSAVE stops it, losing the node's unsaved writes; the harness does not send that: stop the script by hand (redis-cli -h HOST -p PORT SHUTDOWN NOSAVE, then restart the node) and fix the script that never returns", addr, err.Error()))
			return false
		case isRedisError(err):
			// NOPERM and the like: this connection may not kill scripts.
			w.fail(addr, fmt.Errorf("node %s: SCRIPT KILL failed: %v (the harness's user needs the SCRIPT KILL command)", addr, err))
			return false
		}
		if ctx.Err() != nil {
			w.fail(addr, fmt.Errorf("node %s did not answer SCRIPT KILL before the sweep's deadline: %v", addr, err))
			return false
		}
		// A timeout: the node is inside a script and not yet serving SCRIPT
		// KILL (busy-reply-threshold), or it is unreachable. Try again.
		unanswered = true
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *Watchdog) fail(addr string, err error) {
	w.mu.Lock()
	w.errs[addr] = err
	w.mu.Unlock()
}

// KilledPastLimit is what a script call whose reply was lost tells when
// the watchdog then stopped a script: err (nil when it stopped none) says
// that the script ran past its limit and was killed, naming the limit and
// the nodes, and what to fix. It sweeps once more first (EnsureNotBusy on
// ctx), and looks at the kills made after kills[:since] (Kills' length
// before the call). A node still running a script is said so too.
func (w *Watchdog) KilledPastLimit(ctx context.Context, what string, since int) error {
	busy := w.EnsureNotBusy(ctx)
	kills := w.Kills()
	var nodes []string
	for _, k := range kills[min(since, len(kills)):] {
		if !slices.Contains(nodes, k.Node) {
			nodes = append(nodes, k.Node)
		}
	}
	switch {
	case len(nodes) > 0 && busy == nil:
		return fmt.Errorf("%s: the script ran past its limit of %s and was killed (SCRIPT KILL on %s): fix the script so that every path returns (a loop that never ends, or one over far too many keys)",
			what, w.limit, strings.Join(nodes, ", "))
	case busy != nil:
		return fmt.Errorf("%s: the script ran past its limit of %s and could not be killed: %w", what, w.limit, busy)
	}
	return nil
}

// Kills returns the scripts stopped so far, in order.
func (w *Watchdog) Kills() []ScriptKill {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]ScriptKill(nil), w.kills...)
}

// EnsureNotBusy is the last step before the harness exits or tears down:
// it waits for a sweep in progress, then sends SCRIPT KILL to every node
// until each answers NOTBUSY, and returns an error naming every node still
// running a script (UNKILLABLE, no permission, or no answer by ctx's
// deadline), nil when none is. Kills it makes are recorded as any other.
func (w *Watchdog) EnsureNotBusy(ctx context.Context) error {
	w.sweepsMu.Lock()
	w.sweeps.Wait()
	w.sweepsMu.Unlock()
	busy := w.sweep(ctx, "final check before exit")
	if len(busy) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, addr := range busy {
		if err := w.errs[addr]; err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, fmt.Errorf("node %s is still running a script", addr))
		}
	}
	return fmt.Errorf("a script of the path under test still runs on %s: %w", strings.Join(busy, ", "), errors.Join(errs...))
}
