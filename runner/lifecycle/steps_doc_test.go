package lifecycle

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// docs/ARCHITECTURE.md's step table names Execute's steps, in Execute's
// order: a step added, removed or moved in the code without the table (or
// the other way round) fails here.
func TestArchitectureStepTableIsExecutesSteps(t *testing.T) {
	raw, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	from := strings.Index(doc, "## The life of one run")
	if from < 0 {
		t.Fatal(`docs/ARCHITECTURE.md has no "## The life of one run" section`)
	}
	section := doc[from+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var table []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			continue
		}
		name := strings.TrimSpace(cells[1])
		if name == "step" || strings.HasPrefix(name, "---") {
			continue
		}
		table = append(table, name)
	}
	if got := Steps(); !slices.Equal(table, got) {
		t.Fatalf("docs/ARCHITECTURE.md's step table:\n  %s\nExecute's steps (lifecycle.Steps):\n  %s", strings.Join(table, " → "), strings.Join(got, " → "))
	}
}
