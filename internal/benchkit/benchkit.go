// Package benchkit holds what the benchmarks of several packages measure
// the same way: the open-loop headroom search, the process's CPU time and
// the machine's load average. It imports nothing of the harness, so any
// package's tests may use it (runner's own included).
package benchkit

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxLate is the headroom's bound: a rate is paced when at most this share
// of its operations start more than 1 ms late (dropped ones count as late:
// runner.Observed.LateShare).
const MaxLate = 0.01

// Headroom is the highest rate meets accepts, found by a short search: the
// rate doubles from `from` (while at most limit) until meets refuses one,
// then bisect bisection steps between the last rate met and the first
// missed (between 0 and `from` when `from` itself is missed: 0 only when
// every rate tried was missed), and the last rate met when none up to
// limit is missed. meets runs one trial at the rate it is given.
func Headroom(from, limit float64, bisect int, meets func(rate float64) bool) float64 {
	met, missed := 0.0, 0.0
	for rate := from; rate <= limit; rate *= 2 {
		if !meets(rate) {
			missed = rate
			break
		}
		met = rate
	}
	if missed == 0 {
		return met
	}
	lo, hi := met, missed
	for i := 0; i < bisect; i++ {
		if mid := (lo + hi) / 2; meets(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// CPUTime is this process's CPU time so far (user + system, getrusage).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcCPUTime is process pid's CPU time so far (user + system, from
// /proc/PID/stat, in USER_HZ ticks of 10 ms); ok is false when unreadable.
func ProcCPUTime(pid int) (d time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces: count from after its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// LoadAvg is /proc/loadavg's 1-minute figure, as printed ("?" unreadable).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
