package runner

import (
	"context"
	"errors"
	"testing"
	"time"
)

type callTestKey struct{}

// A worker's reusable send deadline behaves as context.WithTimeout: it
// expires (Done closed, DeadlineExceeded), the next send gets an open
// Done and a fresh deadline, and the parent's cancellation reaches it.
func TestCallCtxAsWithTimeout(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), callTestKey{}, "v"))
	wctx, release := withCallCtx(parent)
	defer release()

	c1, end1 := callTimeout(wctx, 20*time.Millisecond)
	if _, ok := c1.(*callCtx); !ok {
		t.Fatalf("a worker's send got %T, want its reusable *callCtx", c1)
	}
	if c1.Value(callTestKey{}) != "v" {
		t.Fatal("the send's context lost the parent's values")
	}
	if d, ok := c1.Deadline(); !ok || time.Until(d) > 20*time.Millisecond {
		t.Fatalf("deadline %v %v, want within 20ms", d, ok)
	}
	// A nested send while one is active gets a context of its own.
	if c, end := callTimeout(wctx, time.Second); c == c1 {
		t.Fatal("a second send while one is active shared its deadline")
	} else {
		end()
	}
	select {
	case <-c1.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Done not closed after the deadline")
	}
	if !errors.Is(c1.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err %v, want DeadlineExceeded", c1.Err())
	}
	end1()

	c2, end2 := callTimeout(wctx, time.Hour)
	if c2.Err() != nil {
		t.Fatalf("the next send starts with Err %v", c2.Err())
	}
	select {
	case <-c2.Done():
		t.Fatal("the next send's Done is already closed")
	case <-time.After(30 * time.Millisecond):
	}
	cancelParent()
	select {
	case <-c2.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the parent's cancellation did not close Done")
	}
	if !errors.Is(c2.Err(), context.Canceled) {
		t.Fatalf("Err %v, want Canceled", c2.Err())
	}
	end2()
	c3, end3 := callTimeout(wctx, time.Hour)
	defer end3()
	if !errors.Is(c3.Err(), context.Canceled) {
		t.Fatalf("a send after the parent's cancellation: Err %v, want Canceled", c3.Err())
	}
}

// A send that ends before its deadline is not expired later by its timer.
func TestCallCtxEndedSendStaysOpen(t *testing.T) {
	wctx, release := withCallCtx(context.Background())
	defer release()
	c, end := callTimeout(wctx, 10*time.Millisecond)
	end()
	c2, end2 := callTimeout(wctx, time.Hour)
	defer end2()
	time.Sleep(40 * time.Millisecond)
	if c2.Err() != nil || c.Err() != nil {
		t.Fatalf("an ended send's timer expired the next send: %v", c2.Err())
	}
}
