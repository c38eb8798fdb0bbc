package lifecycle

import (
	"errors"
	"fmt"
	"testing"

	"seckill-harness/internal/exitcode"
)

// TestSuiteExitIsItsWorstMember: a suite exits as its worst member: a
// harness error over a failure, a failure over an inconclusive member,
// anything over a pass; the table names each member's verdict.
func TestSuiteExitIsItsWorstMember(t *testing.T) {
	boom := errors.New("redis-server not found")
	failed := fmt.Errorf("m: %w", exitcode.ErrChecksFailed)
	for _, c := range []struct {
		members []error
		want    error
	}{
		{[]error{nil, nil}, nil},
		{[]error{nil, exitcode.ErrInconclusive, nil}, exitcode.ErrInconclusive},
		{[]error{exitcode.ErrInconclusive, failed, exitcode.ErrInconclusive}, failed},
		{[]error{failed, boom, failed}, boom},
		{[]error{boom, failed, exitcode.ErrInconclusive}, boom},
	} {
		var worst error
		for _, err := range c.members {
			worst = worse(worst, err)
		}
		if worst != c.want {
			t.Errorf("members %v: suite error %v, want %v", c.members, worst, c.want)
		}
	}
	for err, want := range map[error]string{nil: "PASS", failed: "FAIL", exitcode.ErrInconclusive: "INCONCLUSIVE", boom: "ERROR: " + boom.Error()} {
		if got := memberVerdict(err); got != want {
			t.Errorf("memberVerdict(%v) = %q, want %q", err, got, want)
		}
	}
}
