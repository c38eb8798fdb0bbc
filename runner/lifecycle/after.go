package lifecycle

import (
	"context"
	"sync"
	"time"
)

// AfterLoadBudget bounds the steps from heal on (heal's checks of the
// nodes, check, assemble, write): their context ends this long after the
// heal step began, whatever the load's context did.
const AfterLoadBudget = 2 * time.Minute

// InterruptGrace is how long the steps from heal on may still go once the
// run's context is cancelled (the first SIGINT/SIGTERM): then their
// context ends too, so the partial report is written and the run exits
// within seconds of the signal even while the system under test never
// answers.
const InterruptGrace = 3 * time.Second

// afterLoad is the context of the steps from heal on: fresh (the load's
// may be cancelled), its clock started by the heal step (a long load does
// not eat its budget), and cut InterruptGrace after the run's context
// ends.
type afterLoad struct {
	run    context.Context
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	stopAF func() bool
	timer  *time.Timer
	mu     sync.Mutex
}

func newAfter(run context.Context) *afterLoad {
	a := &afterLoad{run: run}
	// Until the heal step starts the clock: an already ended context (a
	// step after heal never runs without heal having run).
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a
}

// start starts the budget's clock and the interrupt grace's watch.
func (a *afterLoad) start() {
	a.once.Do(func() {
		a.cancel()
		a.ctx, a.cancel = context.WithTimeout(context.WithoutCancel(a.run), AfterLoadBudget)
		cancel := a.cancel
		a.stopAF = context.AfterFunc(a.run, func() {
			a.mu.Lock()
			a.timer = time.AfterFunc(InterruptGrace, cancel)
			a.mu.Unlock()
		})
	})
}

// stop releases the context and its watches.
func (a *afterLoad) stop() {
	if a.stopAF != nil {
		a.stopAF()
	}
	a.mu.Lock()
	if a.timer != nil {
		a.timer.Stop()
	}
	a.mu.Unlock()
	a.cancel()
}
