package sleep

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func openTimer() (*os.File, int, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, -1, fmt.Errorf("timerfd_create: %w (the pacer falls back to Go timers, about 1 ms grained)", err)
	}
	// Non-blocking: os.NewFile registers it with the runtime's poller, so
	// a read parks the goroutine instead of blocking a thread.
	return os.NewFile(uintptr(fd), "hrsleep-timerfd"), fd, nil
}

// sleepPrecise arms the timer once for d and reads its expiry count.
func (s *Sleeper) sleepPrecise(d time.Duration) error {
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	if err := unix.TimerfdSettime(s.fd, 0, &its, nil); err != nil {
		return err
	}
	n, err := s.f.Read(s.buf[:])
	if err != nil {
		return err
	}
	if n != len(s.buf) {
		return errShortRead
	}
	return nil
}
