package lifecycle

import (
	"context"
	"sync"
	"time"
)

// AfterLoadBudget bounds each step from heal on (heal's checks of the
// nodes, the drain's reconciliation, check, assemble, write): each gets a
// context of its own that ends this long after that step began, whatever
// the load's context did. A step's budget starts with the step, not with
// the run or the heal: a long load or a long drain (it may run 30x its
// timeout while reservations keep finishing) leaves the checks their
// whole budget.
const AfterLoadBudget = 2 * time.Minute

// InterruptGrace is how long the steps from heal on may still go once the
// run's context is cancelled (the first SIGINT/SIGTERM): then their
// contexts end too, so the partial report is written and the run exits
// within seconds of the signal even while the system under test never
// answers. The grace is one for all the steps together, counted from the
// signal.
const InterruptGrace = 3 * time.Second

// HealBudget bounds the heal of every fault together (the context of
// Timeline.HealAll), and nothing else does: a signal does not cut it,
// because a fault is never left in force. After a SIGINT/SIGTERM the run
// exits once the heal is done (each kind bounds its own waits too: a
// failover's wait for a healthy cluster is max(wait=, 30 s)), the steps
// after it have had what is left of InterruptGrace, and the stand is
// closed. Measured on 2 cores at a load average of 20, SIGTERM 0.2 to
// 3.5 s into the fault of failover-kill, master-pause and slot-down (11
// runs): the heal took 2.0 to 2.3 s (restart or resume, then the cluster
// healthy again), the exit came 1.7 to 3.5 s after the signal.
const HealBudget = 2 * time.Minute

// afterLoad hands the steps from heal on their contexts: fresh (the
// load's may be cancelled), each with its own AfterLoadBudget (begin),
// and all cut InterruptGrace after the run's context ends.
type afterLoad struct {
	run    context.Context
	stopAF func() bool

	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	cutAt  time.Time   // zero until the run's context ends; then the signal + InterruptGrace
	timer  *time.Timer // cuts the context current at the signal
}

func newAfter(run context.Context) *afterLoad {
	a := &afterLoad{run: run}
	// Until a step begins: an already ended context (a step after heal
	// never runs without heal having run).
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.cancel()
	a.stopAF = context.AfterFunc(run, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.cutAt = time.Now().Add(InterruptGrace)
		a.timer = time.AfterFunc(InterruptGrace, a.cancel)
	})
	return a
}

// begin ends the previous step's context and returns a fresh one for the
// next: AfterLoadBudget from now, never past the interrupt's cut.
func (a *afterLoad) begin() context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancel()
	deadline := time.Now().Add(AfterLoadBudget)
	if !a.cutAt.IsZero() && a.cutAt.Before(deadline) {
		deadline = a.cutAt
	}
	a.ctx, a.cancel = context.WithDeadline(context.WithoutCancel(a.run), deadline)
	return a.ctx
}

// stop releases the context and its watches.
func (a *afterLoad) stop() {
	if a.stopAF != nil {
		a.stopAF()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
	}
	a.cancel()
}
