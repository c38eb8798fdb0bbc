package pipeline

import (
	"strings"
	"testing"
)

// A stage's worker count is capped with its reason: a scenario asking
// for a million order workers is refused, naming the field and the cap;
// the defaults pass.
func TestWorkerCountsAreCapped(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	c.Order.Workers = 1_000_000
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "order.workers = 1000000: at most 1024") {
		t.Fatalf("a million order workers: %v, want refused at the cap", err)
	}
}
