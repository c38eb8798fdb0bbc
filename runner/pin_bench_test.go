package runner

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"seckill-harness/internal/benchkit"
)

// standPin is the fair stand's CPU split: the test cluster's redis-servers
// on the first CPU this process may run on, the generator (this process,
// and redis-benchmark, which inherits its mask) on the others, so the
// comparison is client against client with the servers' core their own.
type standPin struct {
	all, servers, gen unix.CPUSet
	pids              []int
	split             string
	procs             int // GOMAXPROCS before pin
}

// newStandPin reads the CPUs this process may use and the servers' PIDs;
// ok is false (with the reason) when the split is impossible.
func newStandPin(ctx context.Context) (p *standPin, why string) {
	p = &standPin{}
	if err := unix.SchedGetaffinity(0, &p.all); err != nil {
		return nil, fmt.Sprintf("sched_getaffinity: %v", err)
	}
	var cpus []int
	for c := 0; c < 1024 && len(cpus) < p.all.Count(); c++ {
		if p.all.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return nil, fmt.Sprintf("only %d CPU available: no split", len(cpus))
	}
	p.servers.Set(cpus[0])
	var gen []string
	for _, c := range cpus[1:] {
		p.gen.Set(c)
		gen = append(gen, strconv.Itoa(c))
	}
	nodes, err := testCluster.Nodes(ctx)
	if err != nil {
		return nil, fmt.Sprintf("cluster nodes: %v", err)
	}
	for _, n := range nodes {
		if n.PID > 0 {
			p.pids = append(p.pids, n.PID)
		}
	}
	p.split = fmt.Sprintf("redis-servers (%d) on CPU %d, generator on CPU %s", len(p.pids), cpus[0], strings.Join(gen, ","))
	return p, ""
}

// pin applies the split; unpin gives every process back all CPUs (and
// this process its GOMAXPROCS).
//
// pin also sets GOMAXPROCS to the generator's CPUs, as a harness started
// on them (taskset) would have it. Go would lower it by itself within a
// second of the new mask, but not in a benchmark: the testing package
// sets GOMAXPROCS explicitly, which turns the runtime's own updates off,
// and the pinned rounds ran with two Ps on one CPU until this was set.
func (p *standPin) pin() error {
	for _, pid := range p.pids {
		if err := setTasks(pid, &p.servers); err != nil {
			return err
		}
	}
	if err := setTasks(os.Getpid(), &p.gen); err != nil {
		return err
	}
	p.procs = runtime.GOMAXPROCS(p.gen.Count())
	return nil
}

func (p *standPin) unpin() error {
	if p.procs > 0 {
		runtime.GOMAXPROCS(p.procs)
		p.procs = 0
	}
	for _, pid := range append(p.pids, os.Getpid()) {
		if err := setTasks(pid, &p.all); err != nil {
			return err
		}
	}
	return nil
}

// onPinnedStand runs fn on the fair stand (the split passed to it) and
// unpins after; when the split is impossible it prints why, naming what,
// and does not call fn.
func onPinnedStand(ctx context.Context, b *testing.B, what string, fn func(split string)) {
	pin, why := newStandPin(ctx)
	if pin == nil {
		fmt.Printf("%s, pinned: not run (%s)\n", what, why)
		return
	}
	if err := pin.pin(); err != nil {
		_ = pin.unpin()
		b.Fatalf("pinning the stand (%s): %v", pin.split, err)
	}
	fn(pin.split)
	if err := pin.unpin(); err != nil {
		b.Fatal(err)
	}
}

// setTasks sets the affinity of every thread of pid (threads made later
// inherit the mask of the thread that makes them).
func setTasks(pid int, set *unix.CPUSet) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, _ := strconv.Atoi(t.Name())
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("sched_setaffinity %d/%d: %w", pid, tid, err)
		}
	}
	return nil
}

// loadAvg is /proc/loadavg's 1-minute figure, as printed ("?" unreadable).
func loadAvg() string { return benchkit.LoadAvg() }
