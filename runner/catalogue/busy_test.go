package catalogue

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ownChild says whether pid is a live (not zombie) process whose parent
// is this test binary.
func ownChild(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(os.Getpid())
}

func startLoops(t *testing.T, ctx context.Context) *BusyLoops {
	t.Helper()
	b, err := StartBusyLoops(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	pids := b.PIDs()
	if len(pids) != 2 {
		t.Fatalf("PIDs %v, want 2", pids)
	}
	for _, p := range pids {
		if !ownChild(p) {
			t.Fatalf("busy loop %d is not a running child of this process", p)
		}
	}
	return b
}

func TestBusyLoopsEndByPIDOnStop(t *testing.T) {
	b := startLoops(t, context.Background())
	b.Stop()
	b.Stop() // a second Stop (the deferred one after an error path) is harmless
	for _, p := range b.PIDs() {
		if ownChild(p) {
			t.Errorf("busy loop %d still running after Stop", p)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil {
			t.Errorf("busy loop %d not reaped after Stop", p)
		}
	}
}

func TestBusyLoopsEndWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := startLoops(t, ctx)
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range b.PIDs() {
		for ownChild(p) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if ownChild(p) {
			t.Errorf("busy loop %d still running 5 s after the context ended", p)
		}
	}
}
