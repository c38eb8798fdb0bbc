package lifecycle

import (
	"fmt"
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

// docs/ARCHITECTURE.md's heal row states the heal's own bound
// (HealBudget) and that a signal does not cut it: what a SIGTERM mid-fault
// waits for before the process exits.
func TestArchitectureStatesTheHealsBoundUnderASignal(t *testing.T) {
	raw, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "| heal |") {
			row = line
		}
	}
	minutes := fmt.Sprintf("%d minutes", int(HealBudget.Minutes()))
	for _, want := range []string{"`lifecycle.HealBudget`", minutes, "a signal does not cut", fmt.Sprintf("cut %d s after a SIGINT/SIGTERM", int(InterruptGrace.Seconds()))} {
		if !strings.Contains(row, want) {
			t.Errorf("docs/ARCHITECTURE.md's heal row does not say %q:\n%s", want, row)
		}
	}
}
