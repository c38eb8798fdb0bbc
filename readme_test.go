package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README is the front door: at most readmeMaxLines lines, the two
// set-up commands (`make run`, `make test`) as command lines within its
// first setupWithinLines, and a map naming every page of docs/ (a page
// the map omits is a page nobody finds). The rest lives in docs/.
const (
	readmeMaxLines   = 300
	setupWithinLines = 40
)

func TestREADMEIsAFrontDoor(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail into docs/ and link it", len(lines), readmeMaxLines)
	}
	for _, cmd := range []string{"make run", "make test"} {
		at := -1
		for i, l := range lines {
			if strings.HasPrefix(l, cmd+" ") || l == cmd {
				at = i + 1
				break
			}
		}
		if at < 0 || at > setupWithinLines {
			t.Errorf("README.md: the set-up command %q is a command line at line %d, want one within the first %d lines", cmd, at, setupWithinLines)
		}
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	for _, d := range docs {
		if !strings.Contains(string(raw), "]("+d+")") {
			t.Errorf("README.md's map of docs/ does not link %s: add a row naming what it holds", d)
		}
	}
}

// Every command line the README shows (`seckill-harness NAME …` in its
// code blocks) names a command of the CLI, and every --flag on it is one
// of that command's flags: a renamed or removed command or flag fails
// here before a newcomer meets it.
func TestREADMECommandsExist(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCmd()
	shown := regexp.MustCompile(`(?m)^seckill-harness ([^#\n]*)`).FindAllStringSubmatch(string(raw), -1)
	if len(shown) < 8 {
		t.Fatalf("README.md shows %d command lines, want the eight commands people use", len(shown))
	}
	for _, m := range shown {
		args := strings.Fields(m[1])
		cmd, rest, err := root.Find(args)
		if err != nil || cmd == root {
			t.Errorf("README.md shows `seckill-harness %s`, which is no command of the CLI (%v)", args[0], err)
			continue
		}
		for _, a := range rest {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !strings.HasPrefix(a, "--") || name == "" {
				continue
			}
			if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
				t.Errorf("README.md shows `%s --%s`, which is no flag of %q", cmd.CommandPath(), name, cmd.Name())
			}
		}
	}
}
