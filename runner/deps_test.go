package runner

import (
	"os/exec"
	"strings"
	"testing"
)

// The load engine judges nothing and drives no pipeline: it must not
// import the checker, the pipeline (and so PostgreSQL's driver) or the run
// lifecycle (docs/ARCHITECTURE.md's dependency direction).
func TestEngineImportsNoCheckerNorPipeline(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "seckill-harness/runner").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"seckill-harness/checks", "seckill-harness/sut/pipeline",
			"seckill-harness/runner/lifecycle", "github.com/jackc/pgx"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("the engine (seckill-harness/runner) depends on %s", dep)
			}
		}
	}
}
