package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

func TestJUnitCarriesEveryCheckAndFailureEvidence(t *testing.T) {
	r := &Report{Scenario: "smoke", Seed: 7, Passed: false,
		Invariants: []Invariant{
			{ID: "I1", Name: "stock_conservation", Status: StatusPass, Detail: "ok"},
			{ID: "I3", Name: "no_oversell", Status: StatusFail, Detail: "oversold by 3", Evidence: map[string]any{"violations": []string{"bucket 0"}}},
			{ID: "I7", Name: "unknowns_resolved", Status: StatusSkip, Detail: "no unknowns"},
		},
		Assertions: []Assertion{{Name: "p99 < 20ms in baseline", Status: StatusFail, Observed: 31.5}},
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	s := got.Suites[0]
	if s.Tests != 4 || s.Failures != 2 || s.Skipped != 1 || got.Failures != 2 {
		t.Fatalf("counts: tests %d failures %d skipped %d", s.Tests, s.Failures, s.Skipped)
	}
	if c := s.Cases[1]; c.Failure == nil || c.Failure.Message != "oversold by 3" || !strings.Contains(c.Failure.Body, "bucket 0") {
		t.Fatalf("failed invariant case %+v", c)
	}
	if s.Cases[2].Skipped == nil || s.Cases[0].Failure != nil {
		t.Fatal("pass/skip cases wrong")
	}
	if !strings.Contains(s.Cases[3].Failure.Body, "31.5") {
		t.Fatalf("assertion evidence: %+v", s.Cases[3].Failure)
	}
}
