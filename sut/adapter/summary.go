package adapter

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Summary is `adapter validate`'s line for a loaded file: the scripts and
// their SHA1s, the KEYS/ARGV counts of each call, the facts the file
// exposes and the checks that will skip for lack of facts.
func (f *File) Summary() string {
	var calls []string
	for _, op := range []Op{OpReserve, OpRelease} {
		if s := f.Script(op); s != nil {
			calls = append(calls, fmt.Sprintf("%s %s sha1 %s (KEYS %d, ARGV %d)", op, filepath.Base(s.Path), s.SHA1, f.KeysCount(op), f.ArgsCount(op)))
		}
	}
	facts := make([]string, 0, 4)
	for _, x := range f.Facts() {
		facts = append(facts, string(x))
	}
	var skips []string
	for _, s := range f.Skips() {
		skips = append(skips, s.ID)
	}
	skipped := "none"
	if len(skips) > 0 {
		skipped = strings.Join(skips, " ")
	}
	return fmt.Sprintf("ok  %s: adapter %s; %s; exposes %s; checks that will skip: %s",
		f.Path, f.Name, strings.Join(calls, "; "), strings.Join(facts, "; "), skipped)
}

// Validate loads the adapter file at path and returns its summary line
// and its static findings (not an error: a file can be well formed and
// its script still unsafe on a cluster).
func Validate(path string) (string, []Finding, error) {
	f, err := Load(path)
	if err != nil {
		return "", nil, err
	}
	return f.Summary(), f.StaticFindings(), nil
}

// WriteValidation is `adapter validate FILE`: the summary line of the file
// at path and one "finding:" line per static finding, to w; the load error
// (file:line, problem, fix) otherwise.
func WriteValidation(w io.Writer, path string) error {
	summary, findings, err := Validate(path)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, summary)
	for _, x := range findings {
		fmt.Fprintln(w, "finding:", x)
	}
	return nil
}
