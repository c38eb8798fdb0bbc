package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"seckill-harness/faults"
	"seckill-harness/internal/clustertest"
	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
	"seckill-harness/scenarios"
)

// cliSplit runs the CLI with stdout and stderr apart.
func cliSplit(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestVersionNamesTheBuildGoRedisAndTheLocalRedisServer(t *testing.T) {
	clustertest.Need(t)
	code, out, errOut := cliSplit(t, "version", "--json")
	if code != exitPass {
		t.Fatalf("version --json: exit %d\n%s", code, errOut)
	}
	var v struct {
		Harness struct {
			Version   string `json:"version"`
			GoVersion string `json:"go_version"`
			GoRedis   string `json:"go_redis_version"`
		} `json:"harness"`
		LocalRedis struct{ Path, Version, Error string } `json:"local_redis_server"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version --json does not parse: %v\n%s", err, out)
	}
	if v.Harness.GoVersion != runtime.Version() || v.Harness.Version == "" {
		t.Fatalf("harness %+v, want go %s and a version", v.Harness, runtime.Version())
	}
	if !strings.HasPrefix(v.Harness.GoRedis, "v9.") {
		t.Fatalf("go-redis version %q: want the v9 module's version from the build info", v.Harness.GoRedis)
	}
	// The local binary's own words, read independently of the harness.
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on PATH")
	}
	raw, err := exec.Command(path, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if v.LocalRedis.Path != path || v.LocalRedis.Version == "" || !strings.Contains(string(raw), "v="+v.LocalRedis.Version+" ") {
		t.Fatalf("local redis-server %+v, but %s --version says %q", v.LocalRedis, path, raw)
	}
	// --version prints the same facts as text, the local binary labelled as such.
	code, text, _ := cliSplit(t, "--version")
	for _, want := range []string{"go:           " + runtime.Version(), "go-redis:     " + v.Harness.GoRedis,
		"local redis-server (PATH, used by --cluster local): " + v.LocalRedis.Version} {
		if code != exitPass || !strings.Contains(text, want) {
			t.Fatalf("--version: exit %d, no %q in\n%s", code, want, text)
		}
	}
}

func TestListAndFaultsJSONCoverEveryBuiltinAndKind(t *testing.T) {
	code, out, errOut := cliSplit(t, "list", "--json")
	var list []scenarioListEntry
	if err := json.Unmarshal([]byte(out), &list); code != exitPass || err != nil {
		t.Fatalf("list --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	var names []string
	for _, in := range scenarios.Builtins() {
		names = append(names, in.Name)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Name)
		if e.Proves == "" || (!e.Suite && e.LoadS <= 0) || (e.Suite && len(e.Members) == 0) {
			t.Errorf("list --json entry %+v: no description, load time or members", e)
		}
	}
	if !slices.Equal(got, names) {
		t.Fatalf("list --json names %v, built-ins %v", got, names)
	}

	code, out, errOut = cliSplit(t, "faults", "--json")
	var kinds []faults.KindDoc
	if err := json.Unmarshal([]byte(out), &kinds); code != exitPass || err != nil {
		t.Fatalf("faults --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	byKind := map[string]faults.KindDoc{}
	for _, k := range kinds {
		byKind[k.Kind] = k
	}
	for _, s := range faults.Kinds() {
		k, ok := byKind[s.Kind]
		if !ok {
			t.Fatalf("faults --json lacks kind %s", s.Kind)
		}
		if len(k.Params) != len(s.Params)+2 || k.Params[0].Name != "at" || k.Params[1].Name != "for" {
			t.Errorf("%s: params %+v, want at, for and its %d own", s.Kind, k.Params, len(s.Params))
		}
		if k.Rules.Overlap != "stacks" && k.Rules.Overlap != "exclusive" {
			t.Errorf("%s: overlap %q", s.Kind, k.Rules.Overlap)
		}
		if slices.Contains(faults.DestructiveKinds(), s.Kind) != k.Rules.MayBeDestructive {
			t.Errorf("%s: may_be_destructive %v disagrees with the registry", s.Kind, k.Rules.MayBeDestructive)
		}
	}
	fo := byKind["failover"].Rules
	if !fo.Destructive || fo.DestructiveWhy == "" || !slices.Equal(fo.SignalsProcessWhen, []string{"mode=kill", "mode=pause"}) || fo.MinReplicas != 1 {
		t.Errorf("failover rules %+v: want destructive with why, signals_process_when mode=kill and mode=pause, a replica", fo)
	}
	if lat := byKind["latency"].Rules; lat.NeedsProxies == "" || lat.Destructive || lat.Overlap != "stacks" {
		t.Errorf("latency rules %+v: want needs_proxies, not destructive, stacks", lat)
	}
	if dc := byKind["dispatcher-crash"].Rules; dc.NeedsPipeline == "" {
		t.Errorf("dispatcher-crash rules %+v: want needs_pipeline", dc)
	}
}

// completions asks cobra's hidden __complete command what the shell
// would offer for args (the last one is the word being completed).
func completions(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := cliSplit(t, append([]string{"__complete"}, args...)...)
	if code != exitPass {
		t.Fatalf("__complete %v: exit %d\n%s", args, code, errOut)
	}
	var offered []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, ":") { // the directive
			continue
		}
		name, _, _ := strings.Cut(line, "\t")
		offered = append(offered, name)
	}
	return offered
}

func TestCompletionOffersScenariosFaultKindsAndEnumValues(t *testing.T) {
	var builtins []string
	for _, in := range scenarios.Builtins() {
		builtins = append(builtins, in.Name)
	}
	for _, cmd := range []string{"run", "compare", "capacity"} {
		if got := completions(t, cmd, ""); !slices.Equal(got, builtins) {
			t.Errorf("%s <TAB>: %v, want the built-ins %v", cmd, got, builtins)
		}
	}
	var kinds []string
	for _, k := range faults.Kinds() {
		kinds = append(kinds, k.Kind+":")
	}
	if got := completions(t, "run", "--fault", ""); !slices.Equal(got, kinds) {
		t.Errorf("--fault <TAB>: %v, want %v", got, kinds)
	}
	if got := completions(t, "run", "--fault", "failover:at=1s,mode="); !slices.Equal(got, []string{
		"failover:at=1s,mode=graceful", "failover:at=1s,mode=force", "failover:at=1s,mode=takeover", "failover:at=1s,mode=kill", "failover:at=1s,mode=pause"}) {
		t.Errorf("--fault failover:at=1s,mode=<TAB>: %v", got)
	}
	if got := completions(t, "run", "--fault", "latency:"); !slices.Contains(got, "latency:latency=") || !slices.Contains(got, "latency:at=") {
		t.Errorf("--fault latency:<TAB>: %v, want its parameters", got)
	}
	enums := []struct {
		args []string
		want []string
	}{
		{[]string{"compare", "smoke", "--cluster", ""}, []string{"local", "docker", "redis://", "rediss://"}},
		{[]string{"run", "--cluster", ""}, []string{"local", "docker", "redis://", "rediss://"}},
		{[]string{"run", "--mode", ""}, []string{"open", "closed"}},
		{[]string{"run", "--shape", ""}, []string{"constant", "linear", "sine", "spike"}},
		{[]string{"run", "--progress", ""}, []string{"auto", "tty", "plain", "off"}},
		{[]string{"capacity", "smoke", "--path-mix", ""}, []string{"scenario", "accept", "sold-out", "both"}},
		{[]string{"faults", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
	}
	for _, e := range enums {
		if got := completions(t, e.args...); !slices.Equal(got, e.want) {
			t.Errorf("%v<TAB>: %v, want %v", e.args, got, e.want)
		}
	}
	if got := completions(t, "run", "--path", ""); len(got) < 2 || got[0] != "reference" {
		t.Errorf("--path <TAB>: %v, want reference and the bad paths", got)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, _ := cliSplit(t, "completion", shell)
		if code != exitPass || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d, no script calling __complete", shell, code)
		}
	}
}

// --json: stdout is exactly one JSON object whose figures are report.json's;
// the human summary and the log lines are on stderr; --log-level filters them.
func TestRunJSONPrintsOneObjectAndLogsGoToStderr(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir()
	code, stdout, stderr := cliSplit(t, "run", "testdata/quick.yaml", "--json", "--out", out, "--progress", "off")
	var v runJSON
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
	if code != exitPass || v.ExitCode != code || v.Verdict != "PASS" || v.ExitMeaning != exitcode.Meaning(code) || len(v.Runs) != 1 {
		t.Fatalf("exit %d, JSON %+v\nstderr:\n%s", code, v, stderr)
	}
	rep, err := reports.ReadJSON(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := v.Runs[0]
	if r.Ops != rep.Totals.Ops || r.Ops == 0 || r.LatencyMs != rep.LatencyMs || r.Verdict != rep.Verdict() || r.HottestNode == "" {
		t.Fatalf("summary %+v disagrees with report.json (ops %d, latency %+v)", r, rep.Totals.Ops, rep.LatencyMs)
	}
	for _, name := range []string{reports.ReportFile, reports.HTMLFileName, reports.SummaryFile, reports.JUnitFileName} {
		if p := r.Files[name]; p != filepath.Join(out, name) {
			t.Errorf("files[%s] = %q", name, p)
		} else if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	for _, want := range []string{"== seckill-harness: scenario quick", `level=INFO msg="cluster: 2 masters x 0 replicas`, `level=INFO msg="cluster: stopped and removed"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	// A usage error still gives one object, exit 2, with the error.
	code, stdout, _ = cliSplit(t, "run", "no-such-scenario", "--json", "--out", t.TempDir())
	v = runJSON{}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != exitHarnessError || v.ExitCode != 2 || v.Verdict != "ERROR" || !strings.Contains(v.Error, "no-such-scenario") {
		t.Fatalf("usage error: exit %d, %v, JSON %+v\n%s", code, err, v, stdout)
	}

	// --log-level warn keeps the info lines out; a bad level is a usage error.
	code, _, stderr = cliSplit(t, "run", "testdata/quick.yaml", "--log-level", "warn", "--out", t.TempDir(), "--progress", "off")
	if code != exitPass || strings.Contains(stderr, "level=INFO") {
		t.Fatalf("--log-level warn: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = cliSplit(t, "list", "--log-level", "loud")
	if code != exitHarnessError || !strings.Contains(stderr, "--log-level \"loud\"") {
		t.Fatalf("--log-level loud: exit %d, %s", code, stderr)
	}
}

// The README states the Go version go.mod asks for, next to the set-up
// commands (a go.mod bump without the README fails here).
func TestREADMEStatesTheGoVersionOfGoMod(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, setup, _ := strings.Cut(string(readme), "## Set-up")
	setup, _, _ = strings.Cut(setup, "\n## ")
	if !strings.Contains(setup, "Go "+string(m[1])+" or newer") || !strings.Contains(setup, "`go "+string(m[1])+"`") {
		t.Fatalf("the README's set-up does not state go.mod's Go %s", m[1])
	}
}
