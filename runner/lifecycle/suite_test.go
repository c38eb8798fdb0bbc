package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// A skipped member is in the suite's table with its reason and in its own
// junit.xml as a skipped case; it does not fail the suite.
func TestSuiteListsSkippedMembers(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	s := Suite{Name: "nightly-ci", Skipped: []SkippedMember{{Name: "dispatcher-crash", Reason: "it runs a pipeline"}}}
	if err := s.Run(context.Background(), Output{Dir: dir, Log: &log}, nil); err != nil {
		t.Fatalf("a suite whose only member was skipped: %v", err)
	}
	if !strings.Contains(log.String(), "dispatcher-crash") || !strings.Contains(log.String(), "SKIPPED: it runs a pipeline") {
		t.Errorf("table:\n%s", log.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "dispatcher-crash", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `<skipped message="it runs a pipeline"`) || !strings.Contains(string(b), `skipped="1"`) {
		t.Errorf("junit.xml:\n%s", b)
	}
}
