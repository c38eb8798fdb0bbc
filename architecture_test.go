package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// packageMap is docs/ARCHITECTURE.md's package map, top to bottom, as
// import paths ("seckill-harness" for main.go, cmd_*.go).
func packageMap(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "## Packages")
	if i < 0 {
		t.Fatal(`docs/ARCHITECTURE.md has no "## Packages" section`)
	}
	block := doc[i:]
	start := strings.Index(block, "```\n")
	end := strings.Index(block[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("docs/ARCHITECTURE.md's package map is not a fenced block")
	}
	var order []string
	for _, line := range strings.Split(block[start+4:start+4+end], "\n") {
		if line == "" || line[0] == ' ' {
			continue
		}
		first := strings.TrimRight(strings.Fields(line)[0], ",/")
		if first == "main.go" {
			first = ""
		}
		order = append(order, strings.TrimSuffix("seckill-harness/"+first, "/"))
	}
	return order
}

// packageImports is every package of the module with the module's
// packages its non-test files import.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		deps[p.ImportPath] = nil
		for _, imp := range p.Imports {
			if imp == "seckill-harness" || strings.HasPrefix(imp, "seckill-harness/") {
				deps[p.ImportPath] = append(deps[p.ImportPath], imp)
			}
		}
	}
	return deps
}

// importProblems lists every import that does not point down the order
// (to a package listed below the importer), every package the order does
// not list and every listed package that does not exist.
func importProblems(order []string, deps map[string][]string) []string {
	pos := map[string]int{}
	var probs []string
	for i, p := range order {
		if _, dup := pos[p]; dup {
			probs = append(probs, p+" is listed twice")
		}
		pos[p] = i
		if _, ok := deps[p]; !ok {
			probs = append(probs, p+" is listed but is no package")
		}
	}
	for p, imps := range deps {
		at, ok := pos[p]
		if !ok {
			probs = append(probs, p+" is not in the map: add it where its imports put it")
			continue
		}
		for _, imp := range imps {
			if pos[imp] <= at {
				probs = append(probs, p+" imports "+imp+", listed above it")
			}
		}
	}
	return probs
}

// TestImportsPointDown: every package is in docs/ARCHITECTURE.md's map and
// imports only packages listed below it, so the map is the layering and
// an upward import (or a cycle between folders) fails here.
func TestImportsPointDown(t *testing.T) {
	for _, p := range importProblems(packageMap(t), packageImports(t)) {
		t.Error(p)
	}
}

// The rule itself catches an upward import, a package left out of the
// map and one the map names that does not exist.
func TestImportProblemsCatchesAnUpwardImport(t *testing.T) {
	order := []string{"m/top", "m/mid", "m/low"}
	deps := map[string][]string{"m/top": {"m/mid", "m/low"}, "m/mid": {"m/low"}, "m/low": nil}
	if p := importProblems(order, deps); len(p) != 0 {
		t.Fatalf("a layered graph: %v", p)
	}
	deps["m/low"] = []string{"m/mid"}
	deps["m/new"] = nil
	delete(deps, "m/top")
	got := strings.Join(importProblems(order, deps), "\n")
	for _, want := range []string{"m/low imports m/mid, listed above it", "m/new is not in the map", "m/top is listed but is no package"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q: want %q", got, want)
		}
	}
}
