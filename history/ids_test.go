package history

import (
	"testing"
	"time"

	"seckill-harness/lua"
)

// TestIDHelpersAgree: the allocation-saving forms give the plain ones'
// values (a difference would route users to other buckets or derive other
// reservation ids than the checks recompute).
func TestIDHelpersAgree(t *testing.T) {
	a := lua.NewActivity("ids", "sku1", 100, 7, time.Hour)
	for _, n := range []uint32{0, 1, 9, 10, 12345, 1<<32 - 1} {
		for _, m := range []uint32{0, 7, 100000, 1<<32 - 1} {
			u, r := UserAndRequestID(n, m)
			if u != UserID(n) || r != RequestID(m) {
				t.Fatalf("UserAndRequestID(%d, %d) = %q, %q; want %q, %q", n, m, u, r, UserID(n), RequestID(m))
			}
		}
		if got, want := UserBucket(a, n), a.BucketOf(UserID(n)); got != want {
			t.Fatalf("UserBucket(%d) = %d, want %d", n, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = UserBucket(a, 123456) }); n != 0 {
		t.Errorf("UserBucket allocates %.0f times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = UserAndRequestID(123456, 654321) }); n != 1 {
		t.Errorf("UserAndRequestID allocates %.0f times, want 1", n)
	}
}
