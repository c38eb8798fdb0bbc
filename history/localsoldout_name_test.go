package history

import (
	"testing"

	"seckill-harness/sut"
)

// The local answer round-trips through the history's JSONL names.
func TestLocalSoldOutOutcomeName(t *testing.T) {
	o := Op{Kind: KindFresh, Outcome: OutcomeLocalSoldOut}
	if o.OutcomeName() != sut.LocalSoldOutName {
		t.Fatal(o.OutcomeName())
	}
	if got, err := outcomeOf(KindFresh, sut.LocalSoldOutName); err != nil || got != OutcomeLocalSoldOut {
		t.Fatal(got, err)
	}
}
