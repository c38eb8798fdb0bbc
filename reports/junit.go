package reports

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
)

// JUnit XML (the de-facto schema CI systems read: testsuites > testsuite >
// testcase with failure / skipped children).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       float64         `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML: one test case per invariant
// (classname "<scenario>.invariants") and per assertion ("<scenario>.assertions");
// a failed one carries its detail as the message and its evidence (JSON) as
// the body; skipped ones are marked skipped, and so are inconclusive ones
// (message "inconclusive: …" with the rule).
func WriteJUnit(w io.Writer, r *Report) error {
	s := junitSuite{Name: r.Scenario, Time: r.DurationS, Timestamp: r.StartedAt.UTC().Format("2006-01-02T15:04:05")}
	s.Properties = []junitProperty{
		{"seed", fmt.Sprint(r.Seed)},
		{"harness", r.Versions.Harness}, {"redis", r.Versions.Redis}, {"go_redis", r.Versions.GoRedis},
		{"ops", fmt.Sprint(r.Totals.Ops)}, {"throughput_ops_per_s", fmt.Sprintf("%.1f", r.ThroughputOpsPerS)},
		{"latency_p99_ms", fmt.Sprintf("%.3f", r.LatencyMs.P99)}, {"verdict", r.Verdict()},
	}
	add := func(class, name string, st Status, detail string, evidence any) {
		c := junitCase{Name: name, Classname: r.Scenario + "." + class}
		switch st {
		case StatusFail:
			body, _ := json.MarshalIndent(evidence, "", "  ")
			c.Failure = &junitFailure{Message: detail, Type: "CheckFailed", Body: string(body)}
			s.Failures++
		case StatusSkip:
			c.Skipped = &junitSkipped{Message: detail}
			s.Skipped++
		case StatusInconclusive:
			// Neither a pass nor a finding: skipped, with why (a starved
			// stand's detail ends in its evidence; a missed fault's is the miss).
			c.Skipped = &junitSkipped{Message: "inconclusive: " + detail}
			s.Skipped++
		default:
			c.SystemOut = detail
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	for _, inv := range r.Invariants {
		add("invariants", inv.ID+" "+inv.Name, inv.Status, inv.Detail, inv.Evidence)
	}
	for _, a := range r.Assertions {
		ev := map[string]any{"observed": a.Observed}
		if a.Threshold != nil {
			ev["threshold"] = *a.Threshold
		}
		detail := a.Detail
		if detail == "" {
			detail = fmt.Sprintf("observed %g", a.Observed)
		}
		if a.Inconclusive != nil {
			detail = fmt.Sprintf("observed %g; %s", a.Observed, a.Inconclusive.Rule)
		}
		add("assertions", a.Name, a.Status, detail, ev)
	}
	if !r.Passed && s.Failures == 0 && !r.IsInconclusive() {
		// A run that did not pass with no failed check is a harness problem: say so.
		add("run", "run completed", StatusFail, "the report says passed=false with no failed check", map[string]any{"verdict": r.Verdict()})
	}
	s.SystemOut = r.Verdict()
	out := junitSuites{Name: "seckill-harness", Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Time: s.Time, Suites: []junitSuite{s}}
	return writeJUnit(w, out)
}

// writeJUnit writes suites as an indented JUnit XML document to w.
func writeJUnit(w io.Writer, suites junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(suites); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
