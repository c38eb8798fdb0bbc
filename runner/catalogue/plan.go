package catalogue

import (
	"fmt"
	"sort"
	"strings"
)

// Entry is one built-in as the catalogue sees it.
type Entry struct {
	Name string
	// Members are a suite's members in order; nil: a scenario.
	Members []string
	// ExpectFail lists the invariant ids the scenario declares it expects
	// to fail (assertions.expect_fail); nil: it is expected to pass.
	ExpectFail []string
}

// IsSuite says whether the entry is a suite.
func (e Entry) IsSuite() bool { return len(e.Members) > 0 }

// Expected is the outcome the entry is held to: ExpectedFail when it
// declares expected failures, else Pass (a suite passes when every member
// holds its own expectation, as `run SUITE` exits 0 then).
func (e Entry) Expected() Outcome {
	if len(e.ExpectFail) > 0 {
		return ExpectedFail
	}
	return Pass
}

// Schedule is what one repetition runs and where each row comes from.
type Schedule struct {
	// Entries are the selected built-ins, in the order of the table:
	// scenarios by name, then suites by name.
	Entries []Entry
	// Runs are the built-ins run (`run NAME` each): suites first, largest
	// first, then the scenarios no run suite covers.
	Runs []string
	// Via maps a scenario to the suite whose run gives its row.
	Via map[string]string
	// Composed maps a suite that is not run to the suite whose run holds
	// all its members (nightly-ci: nightly).
	Composed map[string]string
}

// Plan selects the built-ins named in only (all when empty; a suite
// brings its members, whose rows its run gives) and decides
// what runs: each suite through its own run unless a larger selected
// suite's run already covers every member, and on their own only the
// scenarios no run suite covers. An unknown name in only is an error
// listing the built-ins.
func Plan(all []Entry, only []string) (Schedule, error) {
	sel, err := selectEntries(all, only)
	if err != nil {
		return Schedule{}, err
	}
	s := Schedule{Via: map[string]string{}, Composed: map[string]string{}}
	var suites, scen []Entry
	for _, e := range sel {
		if e.IsSuite() {
			suites = append(suites, e)
		} else {
			scen = append(scen, e)
		}
	}
	sort.SliceStable(suites, func(i, j int) bool { return len(suites[i].Members) > len(suites[j].Members) })
	for _, su := range suites {
		if by := coveredBy(su.Members, s.Via); by != "" {
			s.Composed[su.Name] = by
			continue
		}
		s.Runs = append(s.Runs, su.Name)
		for _, m := range su.Members {
			if _, ok := s.Via[m]; !ok {
				s.Via[m] = su.Name
			}
		}
	}
	for _, e := range scen {
		if _, ok := s.Via[e.Name]; !ok {
			s.Runs = append(s.Runs, e.Name)
		}
	}
	sort.SliceStable(suites, func(i, j int) bool { return suites[i].Name < suites[j].Name })
	s.Entries = append(scen, suites...)
	return s, nil
}

// coveredBy returns the one suite whose run gives every member's row, or "".
func coveredBy(members []string, via map[string]string) string {
	by := ""
	for _, m := range members {
		v, ok := via[m]
		if !ok || by != "" && v != by {
			return ""
		}
		by = v
	}
	return by
}

// selectEntries returns the entries named in only (all when empty) and
// the members of the suites among them, sorted by name.
func selectEntries(all []Entry, only []string) ([]Entry, error) {
	byName := map[string]Entry{}
	var names []string
	for _, e := range all {
		byName[e.Name] = e
		names = append(names, e.Name)
	}
	sort.Strings(names)
	if len(only) == 0 {
		only = names
	}
	seen := map[string]bool{}
	var out []Entry
	add := func(n string) error {
		e, ok := byName[n]
		if !ok {
			return fmt.Errorf("--only %q: not a built-in; built-ins: %s", n, strings.Join(names, ", "))
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, e)
		}
		return nil
	}
	for _, n := range only {
		if err := add(strings.TrimSpace(n)); err != nil {
			return nil, err
		}
		for _, m := range byName[strings.TrimSpace(n)].Members {
			if err := add(m); err != nil {
				return nil, fmt.Errorf("suite %s: %w", n, err)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Header is the table's first line: what ran and where each row came from.
func (s Schedule) Header(repeat int, stress bool) string {
	var suites, alone []string
	for _, r := range s.Runs {
		if s.isSuite(r) {
			suites = append(suites, r)
		} else {
			alone = append(alone, r)
		}
	}
	h := fmt.Sprintf("catalogue: %d built-ins on the reference path, %d repetition(s)", len(s.Entries), repeat)
	if stress {
		h += ", under stress (a busy loop per core)"
	}
	h += fmt.Sprintf("; suites run as `run SUITE` does and give their members' rows: %s", orNone(suites))
	for _, su := range sortedKeys(s.Composed) {
		h += fmt.Sprintf("; %s not run again: its row is its members' rows from %s", su, s.Composed[su])
	}
	return h + "; run on their own: " + orNone(alone)
}

func (s Schedule) isSuite(name string) bool {
	for _, e := range s.Entries {
		if e.Name == name {
			return e.IsSuite()
		}
	}
	return false
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
