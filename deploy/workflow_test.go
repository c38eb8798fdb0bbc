package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// workflowFile is the GitHub Actions example of the split load.
const workflowFile = "../.github/workflows/generators.yml"

// ghWorkflow is the part of a GitHub Actions workflow the test reads.
type ghWorkflow struct {
	Env  map[string]any   `json:"env"`
	Jobs map[string]ghJob `json:"jobs"`
}

type ghJob struct {
	Needs    any    `json:"needs"` // a job id or a list of them
	If       string `json:"if"`
	Strategy struct {
		FailFast    *bool          `json:"fail-fast"`
		MaxParallel int            `json:"max-parallel"`
		Matrix      map[string]any `json:"matrix"`
	} `json:"strategy"`
	Steps []ghStep `json:"steps"`
}

type ghStep struct {
	Name string         `json:"name"`
	If   string         `json:"if"`
	Uses string         `json:"uses"`
	Run  string         `json:"run"`
	With map[string]any `json:"with"`
}

// parseWorkflow reads a workflow's YAML (a key given twice is an error).
func parseWorkflow(text string) (*ghWorkflow, error) {
	j, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		return nil, err
	}
	var wf ghWorkflow
	if err := json.Unmarshal(j, &wf); err != nil {
		return nil, err
	}
	return &wf, nil
}

// matrixIndex stands for ${{ matrix.index }} in the scripts and names the
// test reads, so that they split into words.
const matrixIndex = "@INDEX@"

var matrixIndexExpr = regexp.MustCompile(`\$\{\{\s*matrix\.index\s*\}\}`)

// scriptWords splits a step's shell script into words: continuation lines
// joined, quotes dropped, ${{ matrix.index }} as matrixIndex, comments
// removed. Enough for the flat command lines of the example.
func scriptWords(script string) []string {
	script = matrixIndexExpr.ReplaceAllString(script, matrixIndex)
	script = strings.ReplaceAll(script, "\\\n", " ")
	var words []string
	for _, line := range strings.Split(script, "\n") {
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ') {
			line = line[:i]
		}
		for _, w := range strings.Fields(line) {
			words = append(words, strings.Trim(w, `"'`))
		}
	}
	return words
}

// harnessCall returns the words after the seckill-harness binary in a
// script, when its subcommand is sub.
func harnessCall(script, sub string) []string {
	w := scriptWords(script)
	for i, x := range w {
		if strings.HasSuffix(x, "seckill-harness") && i+1 < len(w) && w[i+1] == sub {
			return w[i+1:]
		}
	}
	return nil
}

func withString(s ghStep, key string) string {
	v, _ := s.With[key].(string)
	return matrixIndexExpr.ReplaceAllString(v, matrixIndex)
}

// workflowProblems lists every way the workflow breaks the split-load
// contract: GENERATORS = N and matrix.index = 0..N-1; fail-fast off and
// no max-parallel below N (all N generators at once, none cancelled); the
// generator step runs `run … --generator ${{ matrix.index }}/N --activity
// (one name for all) --cluster … --out (per index)`; that --out is what
// the per-index artifact uploads (whatever happened); the verify job needs
// the matrix job, runs always, downloads every gen artifact and passes
// `verify` exactly the downloaded directories of 0..N-1 and the same
// --cluster.
func workflowProblems(wf *ghWorkflow) []string {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	n, err := strconv.Atoi(fmt.Sprint(wf.Env["GENERATORS"]))
	if err != nil || n < 1 {
		return append(p, fmt.Sprintf("env GENERATORS %v: want N, the number of generators", wf.Env["GENERATORS"]))
	}
	var genID, verifyID string
	var genRun, verifyRun []string
	var upload, download *ghStep
	for id, j := range wf.Jobs {
		for k, s := range j.Steps {
			if a := harnessCall(s.Run, "run"); a != nil && slices.Contains(a, "--generator") {
				genID, genRun = id, a
				for _, u := range j.Steps[k:] {
					if strings.HasPrefix(u.Uses, "actions/upload-artifact@") && upload == nil {
						upload = &u
					}
				}
			}
			if a := harnessCall(s.Run, "verify"); a != nil {
				verifyID, verifyRun = id, a
				for _, d := range j.Steps[:k] {
					if strings.HasPrefix(d.Uses, "actions/download-artifact@") {
						download = &d
					}
				}
			}
		}
	}
	if genID == "" || verifyID == "" || genID == verifyID {
		return append(p, fmt.Sprintf("want one job running `seckill-harness run … --generator` and another running `seckill-harness verify` (found %q, %q)", genID, verifyID))
	}
	gen, ver := wf.Jobs[genID], wf.Jobs[verifyID]

	var idx []int
	if l, ok := gen.Strategy.Matrix["index"].([]any); ok {
		for _, v := range l {
			i, err := strconv.Atoi(fmt.Sprint(v))
			if err != nil {
				bad("%s: matrix.index entry %v is not a number", genID, v)
			}
			idx = append(idx, i)
		}
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(idx, want) {
		bad("%s: matrix.index %v, want %v (0..GENERATORS-1)", genID, idx, want)
	}
	if gen.Strategy.FailFast == nil || *gen.Strategy.FailFast {
		bad("%s: fail-fast must be false: one failing generator would cancel the others", genID)
	}
	if mp := gen.Strategy.MaxParallel; mp != 0 && mp < n {
		bad("%s: max-parallel %d < %d: the generators must load the cluster at the same time", genID, mp, n)
	}

	_, gflags := cliArgs(genRun)
	switch g := gflags["--generator"]; g {
	case matrixIndex + "/$GENERATORS", matrixIndex + "/${GENERATORS}", matrixIndex + "/" + strconv.Itoa(n):
	default:
		bad("%s: --generator %q, want ${{ matrix.index }}/$GENERATORS (or /%d)", genID, strings.ReplaceAll(g, matrixIndex, "${{ matrix.index }}"), n)
	}
	if a := gflags["--activity"]; a == "" || strings.Contains(a, matrixIndex) {
		bad("%s: --activity %q: want one name for every generator", genID, a)
	}
	out := gflags["--out"]
	if !strings.Contains(out, matrixIndex) {
		bad("%s: --out %q does not depend on ${{ matrix.index }}", genID, out)
	}
	if upload == nil {
		bad("%s: no actions/upload-artifact step after the generator", genID)
	} else {
		if withString(*upload, "path") != out {
			bad("%s: the artifact uploads %q, not the generator's --out %q", genID, withString(*upload, "path"), out)
		}
		if !strings.Contains(withString(*upload, "name"), matrixIndex) {
			bad("%s: artifact name %q is the same for every index", genID, withString(*upload, "name"))
		}
		if !strings.Contains(upload.If, "always()") {
			bad("%s: the upload must run always(): a failed generator's run is what verify needs to name the failure", genID)
		}
	}

	var needs []string
	switch v := ver.Needs.(type) {
	case string:
		needs = []string{v}
	case []any:
		for _, x := range v {
			needs = append(needs, fmt.Sprint(x))
		}
	}
	if !slices.Contains(needs, genID) {
		bad("%s: needs %v, want %s (verify after every generator)", verifyID, needs, genID)
	}
	if !strings.Contains(ver.If, "always()") {
		bad("%s: if %q, want always(): a failed generator must still be merged and named", verifyID, ver.If)
	}
	vpos, vflags := cliArgs(verifyRun)
	if vflags["--cluster"] != gflags["--cluster"] || vflags["--cluster"] == "" {
		bad("%s: --cluster %q, want the generators' %q", verifyID, vflags["--cluster"], gflags["--cluster"])
	}
	if download == nil || upload == nil {
		bad("%s: no actions/download-artifact step before verify", verifyID)
		return p
	}
	pattern, root := withString(*download, "pattern"), withString(*download, "path")
	if withString(*download, "merge-multiple") == "true" {
		bad("%s: merge-multiple would put every generator into one directory", verifyID)
	}
	dirs := vpos[1:]
	for i := range n {
		name := strings.ReplaceAll(withString(*upload, "name"), matrixIndex, strconv.Itoa(i))
		if ok, _ := path.Match(pattern, name); !ok {
			bad("%s: download pattern %q misses artifact %s", verifyID, pattern, name)
		}
		dir := path.Join(root, name)
		matched := 0
		for _, d := range dirs {
			if ok, _ := path.Match(d, dir); ok {
				matched++
			}
		}
		if matched != 1 {
			bad("%s: verify's directories %q name %s %d times, want once", verifyID, dirs, dir, matched)
		}
	}
	return p
}

// TestKubeWorkflowMatrixMatchesGenerators checks the GitHub Actions
// example (parsed as YAML, no GitHub API) against the split contract
// (workflowProblems), then shows each check catching a broken copy.
// Named Kube* so that the deployment examples' tests run together.
func TestKubeWorkflowMatrixMatchesGenerators(t *testing.T) {
	b, err := os.ReadFile(workflowFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	wf, err := parseWorkflow(text)
	if err != nil {
		t.Fatal(err)
	}
	if p := workflowProblems(wf); len(p) > 0 {
		t.Fatalf("%s breaks the split contract:\n%s", workflowFile, strings.Join(p, "\n"))
	}
	for _, m := range []struct{ from, to, want string }{
		{"index: [0, 1, 2]", "index: [0, 1]", "matrix.index"},
		{"index: [0, 1, 2]", "index: [1, 2, 3]", "matrix.index"},
		{"  GENERATORS: 3\n", "  GENERATORS: 4\n", "matrix.index"},
		{"fail-fast: false", "fail-fast: true", "fail-fast"},
		{"      fail-fast: false\n", "      fail-fast: false\n      max-parallel: 1\n", "max-parallel"},
		{`--generator "${{ matrix.index }}/$GENERATORS"`, `--generator "${{ matrix.index }}/2"`, "--generator"},
		{`--activity "$ACTIVITY"`, `--activity "a-${{ matrix.index }}"`, "--activity"},
		{`--out "out/gen-${{ matrix.index }}"`, `--out "out/gen"`, "--out"},
		{"          path: out/gen-${{ matrix.index }}\n", "          path: out\n", "uploads"},
		{"          name: gen-${{ matrix.index }}\n", "          name: gen\n", "same for every index"},
		{"    needs: generate\n", "    needs: []\n", "needs"},
		{"    needs: generate\n    if: always()\n", "    needs: generate\n", "always()"},
		{"pattern: gen-*", "pattern: generator-*", "misses artifact"},
		{"--teardown gens/gen-*", "--teardown gens/gen-0 gens/gen-1", "gens/gen-2 0 times"},
		{`verify --cluster "$CLUSTER"`, `verify --cluster "redis://10.0.0.5:7000"`, "--cluster"},
		{"  GENERATORS: 3\n", "  GENERATORS: 3\n  GENERATORS: 4\n", "already set"},
	} {
		if c := strings.Count(text, m.from); c != 1 {
			t.Errorf("%s has %d of %q, want exactly one to break", workflowFile, c, m.from)
			continue
		}
		broken := strings.Replace(text, m.from, m.to, 1)
		bwf, err := parseWorkflow(broken)
		var p []string
		if err != nil {
			p = []string{err.Error()}
		} else {
			p = workflowProblems(bwf)
		}
		if !strings.Contains(strings.Join(p, "\n"), m.want) {
			t.Errorf("with %q for %q: problems %q, want one naming %q", m.to, m.from, p, m.want)
		}
	}
}
