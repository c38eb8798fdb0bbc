package adapter

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every example of docs/adapters loads; only keys-from-argv has static
// cluster findings, and they name the keys its script builds.
func TestExamplesValidate(t *testing.T) {
	files, _ := filepath.Glob("../../docs/adapters/*.yaml")
	if len(files) < 5 {
		t.Fatalf("want reference.yaml and four shapes in docs/adapters, found %v", files)
	}
	for _, path := range files {
		summary, findings, err := Validate(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if !strings.HasPrefix(summary, "ok  "+path+": adapter ") {
			t.Errorf("%s: summary %q", path, summary)
		}
		if strings.HasSuffix(path, "keys-from-argv.yaml") {
			if len(findings) == 0 {
				t.Errorf("%s: no static finding for the keys its script builds", path)
			}
			for _, x := range findings {
				if x.Kind != "key-built-in-script" || !strings.Contains(x.Where, "keys-from-argv.lua:") {
					t.Errorf("%s: finding %v", path, x)
				}
			}
			continue
		}
		if len(findings) > 0 {
			t.Errorf("%s: false findings: %v", path, findings)
		}
	}
}

var wantLine = regexp.MustCompile(`^# want: (\d+): (.*)$`)

// Each broken file says on its first line where the error is and what it
// says: the loader must name file:line and the problem.
func TestBrokenFilesNameFileLine(t *testing.T) {
	files, _ := filepath.Glob("testdata/broken/*.yaml")
	if len(files) < 20 {
		t.Fatalf("broken corpus too small: %d files", len(files))
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := wantLine.FindStringSubmatch(strings.SplitN(string(data), "\n", 2)[0])
		if m == nil {
			t.Fatalf("%s: first line is not '# want: LINE: text'", path)
		}
		_, err = Load(path)
		if err == nil {
			t.Errorf("%s: loaded, want an error at line %s", path, m[1])
			continue
		}
		if prefix := path + ":" + m[1] + ":"; !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%s: error %q does not start with %q", path, err, prefix)
		}
		if !strings.Contains(err.Error(), m[2]) {
			t.Errorf("%s: error %q does not say %q", path, err, m[2])
		}
	}
}

func TestMissingFileNamesTheFix(t *testing.T) {
	_, err := Load("testdata/no-such-file.yaml")
	if err == nil || !strings.Contains(err.Error(), "no-such-file.yaml") || !strings.Contains(err.Error(), "give the path") {
		t.Fatalf("got %v", err)
	}
}

// docs/ADAPTERS.md's table lists every template value.
func TestDocsListEveryValue(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ADAPTERS.md")
	if err != nil {
		t.Fatal(err)
	}
	for n := range valueNames {
		if !strings.Contains(string(doc), "`${"+n+"}`") {
			t.Errorf("docs/ADAPTERS.md does not list ${%s}", n)
		}
	}
}
