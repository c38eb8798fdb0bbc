package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

// TestOfMapsEveryErrorToItsCode: the two verdict errors keep their codes
// when wrapped; any other error is a harness error.
func TestOfMapsEveryErrorToItsCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, Pass},
		{ErrChecksFailed, CheckFailed},
		{fmt.Errorf("member x: %w", ErrChecksFailed), CheckFailed},
		{fmt.Errorf("member x: %w", ErrInconclusive), Inconclusive},
		{errors.New("--users: want a positive number"), HarnessError},
	} {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %d, want %d", c.err, got, c.want)
		}
		if Meaning(c.want) == "" || Verdict(c.want) == "" {
			t.Errorf("code %d has no meaning or verdict", c.want)
		}
	}
}

// TestCatalogueReadsFailuresFromTheReport: a run that failed or was
// inconclusive is judged from its report (catalogue.Classify), not counted
// as a harness error: an inconclusive member of nightly was an "error" row.
func TestCatalogueReadsFailuresFromTheReport(t *testing.T) {
	for _, err := range []error{nil, ErrChecksFailed, ErrInconclusive, fmt.Errorf("suite x: %w", ErrInconclusive)} {
		if got := Judged(err); got != nil {
			t.Errorf("Judged(%v) = %v, want nil", err, got)
		}
	}
	if boom := errors.New("redis-server not found"); Judged(boom) != boom {
		t.Error("a harness error was dropped")
	}
}
