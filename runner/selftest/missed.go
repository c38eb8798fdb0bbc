package selftest

import (
	"errors"
	"fmt"
	"time"

	"seckill-harness/faults"
)

// missedAttempts bounds how often one matrix run is made when its fault
// took effect only after the load had sent its last operation.
const missedAttempts = 3

// errMissedLoad is the error (wrapped) of a run whose fault reached no
// operation: the stand was too slow to apply it inside the load (slot-down
// makes the nodes rewrite their AOF before it kills them, which on a busy
// machine outlasted a short load). It says nothing about the path: the run
// is made again on a fresh activity, up to missedAttempts times.
var errMissedLoad = errors.New("the fault took effect only after the load ended")

// faultAfterLoad returns an error wrapping errMissedLoad, naming the
// fault and the times, for the first planned fault whose Inject returned
// at or after load (the plan's load length, from the same origin): its
// effect began when no operation was sent any more. nil when every fault
// took effect inside the load (or was not injected: reported apart).
func faultAfterLoad(planned []*faults.Planned, load time.Duration) error {
	for _, f := range planned {
		if w := f.Window(); w.Injected && w.InjectErr == nil && w.InjectDone >= load {
			return fmt.Errorf("%w: %s took effect at %.2fs of a %.2fs load", errMissedLoad, f.Spec, w.InjectDone.Seconds(), load.Seconds())
		}
	}
	return nil
}
