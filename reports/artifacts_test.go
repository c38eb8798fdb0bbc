package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// historyOf is an Inputs.History that writes lines.
func historyOf(lines ...string) func(io.Writer) error {
	return func(w io.Writer) error {
		for _, l := range lines {
			if _, err := io.WriteString(w, l+"\n"); err != nil {
				return err
			}
		}
		return nil
	}
}

// fullInputs is a run that produces every artifact of the table.
func fullInputs(history ...string) *Inputs {
	rep, rec := syntheticFailoverRun()
	return &Inputs{Report: rep, Hists: rec.Histograms(), History: historyOf(history...),
		Linearizability: func(w io.Writer) error { _, err := io.WriteString(w, "<html>a drawing</html>"); return err }}
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// snapshot returns the content of every regular file in dir by name
// (other entries by a marker).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, n := range listDir(t, dir) {
		if fi, err := os.Lstat(filepath.Join(dir, n)); err != nil || !fi.Mode().IsRegular() {
			m[n] = "not a regular file"
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		m[n] = string(b)
	}
	return m
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	for _, n := range listDir(t, dir) {
		if strings.Contains(n, tmpInfix) {
			t.Errorf("temporary file left in %s: %s", dir, n)
		}
	}
}

var generatedAt = regexp.MustCompile(`Generated \S+`)

func TestWriteArtifactsWritesEveryArtifactOfTheTable(t *testing.T) {
	in := fullInputs(`{"op":1}`, `{"op":2}`)
	dir := filepath.Join(t.TempDir(), "new", "run")
	if err := WriteArtifacts(dir, in); err != nil {
		t.Fatal(err)
	}
	want := []string{"history.jsonl", "junit.xml", "latency.hgrm", "latency.hlog", "linearizability.html", "report.html", "report.json", "summary.md"}
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files: %v, want %v", got, want)
	}
	// Each file is its writer's output (report.json with the file names).
	for _, a := range Artifacts() {
		var buf bytes.Buffer
		if err := a.Write(&buf, in); err != nil {
			t.Fatal(a.Name, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, a.Name))
		if err != nil {
			t.Fatal(err)
		}
		// report.html says when it was generated.
		got, want := generatedAt.ReplaceAll(got, nil), generatedAt.ReplaceAll(buf.Bytes(), nil)
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes on disk, its writer renders %d", a.Name, len(got), len(want))
		}
		if fi, _ := os.Stat(filepath.Join(dir, a.Name)); fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v", a.Name, fi.Mode())
		}
	}
	rep, err := ReadJSON(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if rep.HGRMFile != HGRMFileName || rep.HlogFile != HlogFileName || rep.HTMLFile != HTMLFileName || rep.HistoryFile != HistoryFileName {
		t.Errorf("file names in report.json: %q %q %q %q", rep.HGRMFile, rep.HlogFile, rep.HTMLFile, rep.HistoryFile)
	}
	if h, _ := os.ReadFile(filepath.Join(dir, HistoryFileName)); string(h) != "{\"op\":1}\n{\"op\":2}\n" {
		t.Errorf("history.jsonl: %q", h)
	}
	var junit junitSuites
	b, _ := os.ReadFile(filepath.Join(dir, JUnitFileName))
	if err := xml.Unmarshal(b, &junit); err != nil || junit.Tests == 0 {
		t.Errorf("junit.xml: %v, %d tests", err, junit.Tests)
	}
	run, err := LoadRun(dir)
	if err != nil || run.HistSource != HlogFileName {
		t.Errorf("LoadRun: %v, histograms from %q", err, run.HistSource)
	}
	if err := WriteArtifacts(dir, &Inputs{}); err == nil {
		t.Error("no report must fail")
	}
}

func TestWriteArtifactsHistoryPath(t *testing.T) {
	dir := t.TempDir()
	if err := WriteArtifacts(dir, fullInputs("first")); err != nil {
		t.Fatal(err)
	}
	// Relative to dir, in a new subdirectory: dir/history.jsonl is stale.
	in := fullInputs("second")
	in.HistoryPath = filepath.Join("h", "ops.jsonl")
	if err := WriteArtifacts(dir, in); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "h", "ops.jsonl")); err != nil || string(b) != "second\n" {
		t.Errorf("history at its path: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, HistoryFileName)); !os.IsNotExist(err) {
		t.Errorf("the earlier run's history.jsonl must be gone: %v", err)
	}
	if rep, _ := ReadJSON(filepath.Join(dir, ReportFile)); rep.HistoryFile != in.HistoryPath {
		t.Errorf("history_file %q, want %q as given", rep.HistoryFile, in.HistoryPath)
	}
	// Absolute.
	abs := filepath.Join(t.TempDir(), "abs.jsonl")
	in = fullInputs("third")
	in.HistoryPath = abs
	if err := WriteArtifacts(dir, in); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(abs); string(b) != "third\n" {
		t.Errorf("absolute history: %q", b)
	}
	// Onto another artifact: refused before anything is touched.
	before := snapshot(t, dir)
	for _, p := range []string{ReportFile, HlogFileName, filepath.Join(dir, JUnitFileName)} {
		in = fullInputs("fourth")
		in.HistoryPath = p
		err := WriteArtifacts(dir, in)
		if err == nil || !strings.Contains(err.Error(), "choose another file name") {
			t.Errorf("history at %s: %v", p, err)
		}
	}
	if after := snapshot(t, dir); !mapsEqual(before, after) {
		t.Error("a refused write changed the directory")
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestSymlinkAtAnOutputIsReplacedNotFollowed(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	victims := map[string]string{}
	for _, name := range append(ArtifactNames(), "single.txt") {
		victim := filepath.Join(elsewhere, name+".victim")
		if err := os.WriteFile(victim, []byte("victim "+name), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		victims[victim] = "victim " + name
	}
	if err := WriteArtifacts(dir, fullInputs("x")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "single.txt"), []byte("mine\n")); err != nil {
		t.Fatal(err)
	}
	for victim, content := range victims {
		if b, err := os.ReadFile(victim); err != nil || string(b) != content {
			t.Errorf("symlink target %s was written through: %q %v", victim, b, err)
		}
	}
	for _, name := range append(ArtifactNames(), "single.txt") {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s is not a regular file now: %v %v", name, fi.Mode(), err)
		}
	}
	// The views of `report DIR` too.
	if err := os.Remove(filepath.Join(dir, JUnitFileName)); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(elsewhere, "junit-again")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Symlink(victim, filepath.Join(dir, JUnitFileName))
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteViews(dir, &Inputs{Report: run.Report, Hists: run.Hists}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("WriteViews wrote through a symlink: %q", b)
	}
}

func TestFailedWriteLeavesTheOldFilesAndNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	if err := WriteArtifacts(dir, fullInputs("old 1", "old 2")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	// The history fails half way: earlier artifacts were already rendered.
	in := fullInputs()
	in.Report.Scenario = "the new run"
	in.History = func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("new op\n", 20000)) // past the write buffer
		return errors.New("disk full")
	}
	err := WriteArtifacts(dir, in)
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), HistoryFileName) {
		t.Fatalf("error %v, want the writer's, naming the file", err)
	}
	if after := snapshot(t, dir); !mapsEqual(before, after) {
		t.Errorf("a failed write changed the directory: %v", listDir(t, dir))
	}
	noTempFiles(t, dir)

	// One file.
	path := filepath.Join(dir, "compare.json")
	if err := WriteFileAtomic(path, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	err = WriteFileAtomicFunc(path, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte("x"), 100<<10))
		return errors.New("encoder broke")
	})
	if err == nil {
		t.Fatal("a failing writer must fail the write")
	}
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Errorf("old content lost: %d bytes", len(b))
	}
	noTempFiles(t, dir)
}

func TestStaleArtifactsOfAnEarlierRunAreRemoved(t *testing.T) {
	dir := t.TempDir()
	if err := WriteArtifacts(dir, fullInputs("earlier")); err != nil {
		t.Fatal(err)
	}
	// A killed earlier write's temporary files, and files that are not ours.
	for _, n := range []string{".report.json.tmp-123", ".latency.hlog.tmp-9", "notes.txt", ".notes.txt.tmp-1"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A run with no histograms and no history (a summary, or an early
	// interrupted run), whose loaded report still names the earlier files.
	rep, _ := syntheticFailoverRun()
	rep.HGRMFile, rep.HlogFile, rep.HistoryFile = HGRMFileName, HlogFileName, HistoryFileName
	if err := WriteArtifacts(dir, &Inputs{Report: rep}); err != nil {
		t.Fatal(err)
	}
	want := []string{".notes.txt.tmp-1", "junit.xml", "notes.txt", "report.html", "report.json", "summary.md"}
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Errorf("files: %v, want %v", got, want)
	}
	got, err := ReadJSON(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if got.HGRMFile != "" || got.HlogFile != "" || got.HistoryFile != "" || got.HTMLFile != HTMLFileName {
		t.Errorf("report.json names files that are not there: %q %q %q %q", got.HGRMFile, got.HlogFile, got.HistoryFile, got.HTMLFile)
	}
	if run, err := LoadRun(dir); err != nil || run.Hists != nil {
		t.Errorf("LoadRun read histograms of the earlier run: %v %v", run.HistSource, err)
	}
	// A history kept outside dir is not named by its default name: kept.
	abs := filepath.Join(t.TempDir(), "ops.jsonl")
	rep.HistoryFile = abs
	if err := WriteArtifacts(dir, &Inputs{Report: rep}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadJSON(filepath.Join(dir, ReportFile)); got.HistoryFile != abs {
		t.Errorf("history_file %q cleared", got.HistoryFile)
	}
}

func TestWriteViewsRerendersInPlace(t *testing.T) {
	dir := t.TempDir()
	if err := WriteArtifacts(dir, fullInputs("kept")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{JUnitFileName, SummaryFile, HTMLFileName} {
		os.Remove(filepath.Join(dir, n))
	}
	before := map[string]os.FileInfo{}
	for _, n := range listDir(t, dir) {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		before[n] = fi
	}
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	run.Report.Scenario = "re-rendered"
	if err := WriteViews(dir, &Inputs{Report: run.Report, Hists: run.Hists}); err != nil {
		t.Fatal(err)
	}
	for n, fi := range before {
		now, err := os.Stat(filepath.Join(dir, n))
		if err != nil || !os.SameFile(fi, now) {
			t.Errorf("%s was rewritten or removed (%v)", n, err)
		}
	}
	for _, n := range []string{JUnitFileName, SummaryFile, HTMLFileName} {
		if b, _ := os.ReadFile(filepath.Join(dir, n)); !strings.Contains(string(b), "re-rendered") {
			t.Errorf("%s not rendered from the report", n)
		}
	}
	noTempFiles(t, dir)
}

func TestPreflight(t *testing.T) {
	root := t.TempDir()
	ok := filepath.Join(root, "new", "out")
	if err := Preflight(ok, "history.jsonl", filepath.Join("sub", "ops.jsonl"), filepath.Join(root, "abs.jsonl")); err != nil {
		t.Fatal(err)
	}
	if names := listDir(t, ok); !slices.Equal(names, []string{"sub"}) {
		t.Errorf("Preflight left %v", names)
	}
	if names := listDir(t, root); !slices.Equal(names, []string{"new"}) {
		t.Errorf("Preflight left %v in the history's directory", names)
	}

	relOut, err := filepath.Rel(mustGetwd(t), ok)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name, dir string
		extra     []string
		want      string
	}{
		// Root ignores permission bits: these fail for root too.
		{"out under a regular file", filepath.Join(file, "out"), nil, "not writable"},
		{"out that exists but takes no files", "/proc/self", nil, "not writable"},
		{"out is a regular file", file, nil, "not writable"},
		{"history under a regular file", ok, []string{filepath.Join(file, "h.jsonl")}, "cannot be written"},
		{"history in a directory that takes no files", ok, []string{"/proc/self/h.jsonl"}, "cannot be written"},
		{"history onto report.json", ok, []string{"report.json"}, "is the run's report.json"},
		{"history onto latency.hlog", ok, []string{filepath.Join(ok, "latency.hlog")}, "is the run's latency.hlog"},
		{"relative out, history onto its junit.xml by absolute path", relOut, []string{filepath.Join(ok, "junit.xml")}, "is the run's junit.xml"},
		{"history is a directory", ok, []string{"sub"}, "is a directory"},
	}
	for _, c := range bad {
		err := Preflight(c.dir, c.extra...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := os.Mkdir(filepath.Join(ok, ReportFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Preflight(ok); err == nil || !strings.Contains(err.Error(), "report.json is a directory") {
		t.Errorf("report.json a directory: %v", err)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
