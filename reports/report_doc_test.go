package reports

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// docs/REPORT.md holds the one copy of report.json's contract: every key it
// lists as parsed by CI jobs is a top-level JSON name of Report (a renamed
// field fails here), and no other doc repeats the list (a second copy
// would drift).
func TestReportDocListsReportsKeysOnce(t *testing.T) {
	doc, err := os.ReadFile("../docs/REPORT.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("Keys CI jobs parse \\(more may be added, none renamed\\): `([^`]+)`").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/REPORT.md has no \"Keys CI jobs parse (more may be added, none renamed): `…`\" list")
	}
	names := map[string]bool{}
	rt := reflect.TypeOf(Report{})
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		names[name] = true
	}
	keys := strings.Fields(string(m[1]))
	if len(keys) < 10 {
		t.Fatalf("docs/REPORT.md lists %d keys CI jobs parse, want the whole list", len(keys))
	}
	for _, k := range keys {
		if !names[k] {
			t.Errorf("docs/REPORT.md lists report.json key %q, which Report does not have: fix the doc or restore the field's JSON name", k)
		}
	}
	// The list's opening keys, in order, are what a copy would repeat.
	copyMark := strings.Join(keys[:4], " ")
	others, _ := filepath.Glob("../docs/*.md")
	for _, p := range append(others, "../README.md") {
		if filepath.Base(p) == "REPORT.md" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.Join(strings.Fields(string(b)), " "), copyMark) {
			t.Errorf("%s repeats report.json's key list (%q …): keep the one copy in docs/REPORT.md and point to it", p, copyMark)
		}
	}
}
