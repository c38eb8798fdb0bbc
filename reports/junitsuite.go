package reports

import (
	"io"
	"sort"
	"time"
)

// JUnitCase is one test case of a suite written by WriteJUnitSuite.
type JUnitCase struct {
	Name      string
	Classname string
	Seconds   float64
	// Failure, when not "", fails the case with this message;
	// FailureBody is the failure's text (evidence, a command to re-run).
	Failure, FailureBody string
	// Skipped, when not "", marks the case skipped with this message.
	Skipped string
	// Output is the case's system-out.
	Output string
}

// WriteJUnitSuite writes a JUnit XML file of one test suite named name
// (properties sorted by name), for commands that run many checks of their
// own (explore: one case per run) rather than one report.
func WriteJUnitSuite(w io.Writer, name string, started time.Time, props map[string]string, cases []JUnitCase) error {
	s := junitSuite{Name: name, Timestamp: started.UTC().Format("2006-01-02T15:04:05")}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.Properties = append(s.Properties, junitProperty{k, props[k]})
	}
	for _, c := range cases {
		jc := junitCase{Name: c.Name, Classname: c.Classname, Time: c.Seconds, SystemOut: c.Output}
		switch {
		case c.Failure != "":
			jc.Failure = &junitFailure{Message: c.Failure, Type: "CheckFailed", Body: c.FailureBody}
			s.Failures++
		case c.Skipped != "":
			jc.Skipped = &junitSkipped{Message: c.Skipped}
			s.Skipped++
		}
		s.Tests++
		s.Time += c.Seconds
		s.Cases = append(s.Cases, jc)
	}
	out := junitSuites{Name: "seckill-harness", Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Time: s.Time, Suites: []junitSuite{s}}
	return writeJUnit(w, out)
}
