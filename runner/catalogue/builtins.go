package catalogue

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"seckill-harness/scenarios"
)

// Builtins are the built-in scenarios and suites as catalogue entries:
// each suite with its members, each scenario with the invariants it
// declares it expects to fail.
func Builtins() ([]Entry, error) {
	var out []Entry
	for _, in := range scenarios.Builtins() {
		s, err := scenarios.Builtin(in.Name)
		if err != nil {
			return nil, err
		}
		e := Entry{Name: in.Name, Members: in.Members}
		for id := range s.Assertions.ExpectFail {
			e.ExpectFail = append(e.ExpectFail, id)
		}
		sort.Strings(e.ExpectFail)
		out = append(out, e)
	}
	return out, nil
}

// OpenOutput makes the output directory, checks the JUnit file can be
// written, and creates <out>/catalogue.log for the runs' logs, before
// anything runs: a bad path is a usage error naming the flag.
func OpenOutput(out, junit string) (*os.File, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: %w", out, err)
	}
	if err := os.WriteFile(junit, nil, 0o644); err != nil {
		return nil, fmt.Errorf("--junit %s cannot be written: %w", junit, err)
	}
	f, err := os.Create(filepath.Join(out, "catalogue.log"))
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", out, err)
	}
	return f, nil
}

// WriteJUnitFile writes WriteJUnit's document to path.
func WriteJUnitFile(path string, started time.Time, props map[string]string, reps [][]Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	err = WriteJUnit(f, started, props, reps)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	return nil
}

// Summary is catalogue --json's one object.
type Summary struct {
	Header      string     `json:"header"`
	Held        bool       `json:"held"` // every run of every built-in as expected
	ExitCode    int        `json:"exit_code"`
	ExitMeaning string     `json:"exit_meaning"`
	Repeat      int        `json:"repeat"`
	Stress      bool       `json:"stress"`
	Out         string     `json:"out"`
	JUnit       string     `json:"junit"`
	Rows        []Row      `json:"rows"`
	Runs        [][]Result `json:"runs"` // per repetition, per built-in
}
