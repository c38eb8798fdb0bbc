//go:build !linux

package sleep

import (
	"errors"
	"os"
	"time"
)

func openTimer() (*os.File, int, error) {
	return nil, -1, errors.New("no timerfd on this system (the pacer uses Go timers, about 1 ms grained)")
}

func (s *Sleeper) sleepPrecise(time.Duration) error { return errors.New("unreachable") }
