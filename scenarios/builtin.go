package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"seckill-harness/internal/fileref"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Info describes a built-in scenario for listings.
type Info struct {
	Name     string
	Proves   string        // one line
	Suite    bool          // a suite of other built-ins
	Members  []string      // a suite's members
	Duration time.Duration // planned load time (a suite: the sum of its members')
	// Pipeline: the scenario runs the pipeline (a suite: some member does);
	// Drain is the longest it may then take after the load (a suite: the
	// sum of its members' drains).
	Pipeline bool
	Drain    time.Duration
}

// builtinNames lists the embedded scenarios, sorted.
func builtinNames() []string {
	entries, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok && !e.IsDir() {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Builtin returns the embedded scenario name (source "builtin:<name>").
// An unknown name's error lists the built-ins.
func Builtin(name string) (*Scenario, error) {
	data, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
	if err != nil || strings.ContainsAny(name, "/\\") {
		return nil, fmt.Errorf("no built-in scenario %q; built-ins: %s", name, strings.Join(builtinNames(), ", "))
	}
	return Parse("builtin:"+name, data)
}

// Builtins lists the embedded scenarios, sorted by name. A built-in that
// fails to parse is listed with its error as Proves (the tests forbid it).
func Builtins() []Info {
	var out []Info
	for _, n := range builtinNames() {
		s, err := Builtin(n)
		if err != nil {
			out = append(out, Info{Name: n, Proves: "INVALID: " + err.Error()})
			continue
		}
		in := Info{Name: n, Proves: s.Proves, Suite: s.IsSuite(), Members: s.Suite, Duration: s.Duration(),
			Pipeline: s.Pipeline != nil, Drain: s.Drain}
		if s.IsSuite() {
			if ms, err := s.Members(); err == nil {
				for _, m := range ms {
					in.Pipeline = in.Pipeline || m.Pipeline != nil
					in.Drain += m.Drain
				}
			}
		}
		out = append(out, in)
	}
	return out
}

// Resolve returns the built-in called nameOrFile, else loads the file at
// that path. When it is neither, the error lists the built-ins.
func Resolve(nameOrFile string) (*Scenario, error) {
	if isBuiltin(nameOrFile) {
		return Builtin(nameOrFile)
	}
	if st, err := os.Stat(nameOrFile); err == nil && !st.IsDir() {
		return Load(nameOrFile)
	}
	return nil, fmt.Errorf("scenario %q: neither a built-in nor a scenario file; built-ins: %s", nameOrFile, strings.Join(builtinNames(), ", "))
}

func isBuiltin(name string) bool { return slices.Contains(builtinNames(), name) }

func looksLikeFile(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml")
}

// member resolves a suite member: a built-in name, or a file path relative
// to the suite's own file. The suite's forwarded --set values are applied.
func (s *Scenario) member(name string) (*Scenario, error) {
	var m *Scenario
	var err error
	if isBuiltin(name) {
		if m, err = Builtin(name); err != nil {
			return nil, err
		}
	} else if looksLikeFile(name) {
		p := name
		if !strings.HasPrefix(s.Source, "builtin:") {
			if p, err = fileref.Resolve(s.Source, name); err != nil {
				return nil, err
			}
		}
		if _, statErr := os.Stat(p); statErr != nil {
			return nil, fmt.Errorf("unknown scenario %q: no such file %s; built-ins: %s", name, p, strings.Join(builtinNames(), ", "))
		}
		if m, err = Load(p); err != nil {
			return nil, err
		}
	} else {
		return nil, fmt.Errorf("unknown scenario %q; built-ins: %s (or a path to a .yaml file)", name, strings.Join(builtinNames(), ", "))
	}
	for _, kv := range s.parsed.sets {
		if err := m.Set(kv); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Members resolves a suite's members in order, with the suite's --set
// values applied to each (nil for a scenario that is not a suite). Run each
// as its own scenario (its own cluster, report and verdict); the suite
// passes when every member passes.
func (s *Scenario) Members() ([]*Scenario, error) {
	var out []*Scenario
	for _, name := range s.Suite {
		m, err := s.member(name)
		if err != nil {
			return nil, fmt.Errorf("%s: suite member %q: %w", s.Source, name, err)
		}
		out = append(out, m)
	}
	return out, nil
}
