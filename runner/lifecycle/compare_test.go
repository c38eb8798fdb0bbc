package lifecycle

import (
	"slices"
	"testing"

	"seckill-harness/scenarios"
)

// The compare defaults include the 32-bucket split a pre-sale test must
// try, and every built-in scenario with stock to split can be compared at
// them (each bucket needs a unit).
func TestCompareDefaultsIncludeThirtyTwoBuckets(t *testing.T) {
	counts, err := ParseBuckets(DefaultCompareBuckets)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(counts, 1) || !slices.Contains(counts, 32) {
		t.Fatalf("compare defaults %v: want the single slot (1) and 32 buckets", counts)
	}
	if _, err := ParseBuckets("1,,32"); err == nil {
		t.Fatal("ParseBuckets accepted an empty count")
	}
	s, err := scenarios.Builtin("sold-out-90")
	if err != nil {
		t.Fatal(err)
	}
	if s.Activity.Stock < int64(slices.Max(counts)) {
		t.Fatalf("sold-out-90 has stock %d: too little for %d buckets", s.Activity.Stock, slices.Max(counts))
	}
}
