package lua

import (
	"strings"
	"testing"
	"time"
)

// The history stores a bucket index in 16 bits: an activity with more
// buckets is refused where it is validated, naming the limit.
func TestActivityRefusesMoreBucketsThanTheHistoryStores(t *testing.T) {
	ok := NewActivity("a1", "sku1", MaxBuckets, MaxBuckets, time.Hour)
	if err := ok.Validate(); err != nil {
		t.Fatalf("%d buckets: %v", MaxBuckets, err)
	}
	for _, n := range []uint32{MaxBuckets + 1, 70_000} {
		a := NewActivity("a1", "sku1", int64(n), n, time.Hour)
		err := a.Validate()
		if err == nil || !strings.Contains(err.Error(), "at most 65536 buckets") {
			t.Fatalf("%d buckets: %v", n, err)
		}
	}
}
