package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File names of a run directory that are not declared in merge.go.
const (
	JUnitFileName   = "junit.xml"
	HistoryFileName = "history.jsonl"
	// LinearizabilityFileName is the linearizability check's drawing.
	LinearizabilityFileName = "linearizability.html"
)

// Inputs is what the artifacts of one run are written from.
type Inputs struct {
	// Report is the run's report (required). WriteArtifacts sets its
	// file-name fields (HGRMFile, HlogFile, HTMLFile, HistoryFile) to the
	// files it writes, and clears a field that names a file of the table it
	// does not write, before report.json is written.
	Report *Report
	// Hists are the run's histograms: Recorder.Histograms() for a live run,
	// Run.Hists for a saved one, MergeRuns' for a merge. nil or partial is
	// fine: latency.hgrm needs Hists.Latency, latency.hlog Hists.Seconds.
	Hists *Histograms
	// History, when set, writes the per-operation history as JSON lines
	// (the runner's History.WriteJSONL method value). nil: no history file.
	// A function, so that this package needs nothing from the runner.
	History func(io.Writer) error
	// HistoryPath is where History goes: relative to the run directory
	// unless absolute; "" is history.jsonl in the run directory. It is
	// written to report.json's history_file as given.
	HistoryPath string
	// Linearizability, when set, writes the drawing of the smallest
	// partition of the history no order explains (linearizability.html).
	// A function, so that this package needs nothing from the checks.
	Linearizability func(io.Writer) error
}

// A Writer writes one artifact of a run to w, from in. It is vegeta's
// Reporter (func(io.Writer) error) with the run passed in, so one table
// can list every format.
type Writer func(w io.Writer, in *Inputs) error

// Artifact is one file of a run directory: its name, its writer, and
// optional abilities (a nil ability is the common case).
type Artifact struct {
	// Name is the file name in the run directory. It is also how a stale
	// copy from an earlier run is recognised (see WriteArtifacts).
	Name string
	// Write renders the artifact.
	Write Writer
	// Produced reports whether this run has what the artifact needs
	// (nil: always produced). A run that does not produce it gets no such
	// file, and an earlier run's copy is removed.
	Produced func(in *Inputs) bool
	// Field returns the report.json field that names this file (nil: none).
	Field func(r *Report) *string
	// View marks an artifact rendered from report.json and the histograms
	// alone: `seckill-harness report DIR` re-renders it in place
	// (WriteViews).
	View bool
	// Path returns where this run writes the artifact when it is not
	// Name in the run directory (relative to it unless absolute; "" means
	// Name). nil: always Name in the run directory.
	Path func(in *Inputs) string
}

// artifactTable is the set of files of a run directory, in the order they
// are renamed into place. report.json comes last: it is the commit point
// (see WriteArtifacts).
var artifactTable = []Artifact{
	{
		Name:     HGRMFileName,
		Write:    func(w io.Writer, in *Inputs) error { return WriteHGRM(w, in.Hists.Latency) },
		Produced: func(in *Inputs) bool { return in.Hists != nil && in.Hists.Latency != nil },
		Field:    func(r *Report) *string { return &r.HGRMFile },
	},
	{
		Name:     HlogFileName,
		Write:    func(w io.Writer, in *Inputs) error { return WriteHlog(w, in.Report, in.Hists) },
		Produced: func(in *Inputs) bool { return in.Hists != nil && len(in.Hists.Seconds) > 0 },
		Field:    func(r *Report) *string { return &r.HlogFile },
	},
	{
		Name:     HistoryFileName,
		Write:    func(w io.Writer, in *Inputs) error { return in.History(w) },
		Produced: func(in *Inputs) bool { return in.History != nil },
		Field:    func(r *Report) *string { return &r.HistoryFile },
		Path:     func(in *Inputs) string { return in.HistoryPath },
	},
	{
		Name:     LinearizabilityFileName,
		Write:    func(w io.Writer, in *Inputs) error { return in.Linearizability(w) },
		Produced: func(in *Inputs) bool { return in.Linearizability != nil },
		Field:    func(r *Report) *string { return &r.LinearizabilityFile },
	},
	{
		Name:  SummaryFile,
		Write: func(w io.Writer, in *Inputs) error { return WriteMarkdown(w, in.Report) },
		View:  true,
	},
	{
		Name:  HTMLFileName,
		Write: func(w io.Writer, in *Inputs) error { return WriteHTML(w, in.Report, in.Hists) },
		Field: func(r *Report) *string { return &r.HTMLFile },
		View:  true,
	},
	{
		Name:  JUnitFileName,
		Write: func(w io.Writer, in *Inputs) error { return WriteJUnit(w, in.Report) },
		View:  true,
	},
	{
		Name:  ReportFile,
		Write: func(w io.Writer, in *Inputs) error { return in.Report.encodeJSON(w) },
	},
}

// Artifacts returns the artifact table: every file a run directory can
// hold, in the order WriteArtifacts renames them into place.
func Artifacts() []Artifact { return append([]Artifact(nil), artifactTable...) }

// ArtifactNames returns the file names of the table.
func ArtifactNames() []string {
	names := make([]string, len(artifactTable))
	for i, a := range artifactTable {
		names[i] = a.Name
	}
	return names
}

// WriteArtifacts writes the whole set of a run's files into dir (created
// if missing): every artifact of the table this run produces, each
// atomically (see WriteFileAtomic). It is what every command that writes a
// run's report calls.
//
//  1. Every produced artifact is rendered to a temporary file beside its
//     target. If any fails, every temporary file is removed and dir is
//     left exactly as it was.
//  2. Outputs of an earlier run are superseded by removal: report.json,
//     every table file this run does not write in dir (e.g. a
//     latency.hlog or history.jsonl that this run does not produce, or a
//     history.jsonl when this run's history goes to another path), and
//     leftover temporary files of table names. Files outside the table
//     (say an earlier run's history under a custom name) are left alone;
//     the new report.json does not name them.
//  3. The new files are renamed into place, report.json last, and the
//     directories fsynced. So a report.json in dir always describes the
//     files beside it; a run killed between 2 and 3 leaves no report.json
//     (LoadRun then fails clearly) rather than a mix of two runs.
func WriteArtifacts(dir string, in *Inputs) error {
	return writeArtifacts(dir, in, artifactTable, false)
}

// WriteViews re-renders, atomically, the View artifacts of a saved run
// (summary.md, report.html, junit.xml) into dir from its report and
// histograms; report.json and every other file are left as they are, and
// nothing is removed. It is `seckill-harness report DIR` without --out.
func WriteViews(dir string, in *Inputs) error {
	return writeArtifacts(dir, in, artifactTable, true)
}

// plannedArtifact is an artifact this write produces, with its target.
type plannedArtifact struct {
	Artifact
	target, tmp string
}

func writeArtifacts(dir string, in *Inputs, table []Artifact, viewsOnly bool) error {
	if in == nil || in.Report == nil {
		return errors.New("reports: no report to write")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: output directory: %w", err)
	}
	var plan []*plannedArtifact
	for _, a := range table {
		if viewsOnly && !a.View || a.Produced != nil && !a.Produced(in) {
			continue
		}
		target, err := artifactTarget(dir, a, in, table)
		if err != nil {
			return err
		}
		plan = append(plan, &plannedArtifact{Artifact: a, target: target})
	}
	if !viewsOnly {
		nameFiles(in, table, plan)
	}

	// 1. Render everything beside its target.
	discard := func() {
		for _, p := range plan {
			if p.tmp != "" {
				os.Remove(p.tmp)
			}
		}
	}
	for _, p := range plan {
		if err := os.MkdirAll(filepath.Dir(p.target), 0o755); err != nil {
			discard()
			return fmt.Errorf("reports: %s: %w", p.Name, err)
		}
		write := p.Write
		tmp, err := stageFile(p.target, func(w io.Writer) error { return write(w, in) })
		if err != nil {
			discard()
			return err
		}
		p.tmp = tmp
	}

	// 2. Supersede the earlier run's files.
	if !viewsOnly {
		if err := removeStale(dir, table, plan); err != nil {
			discard()
			return err
		}
	}

	// 3. Commit, report.json last (the table's order).
	dirs := map[string]bool{}
	for i, p := range plan {
		if err := os.Rename(p.tmp, p.target); err != nil {
			for _, q := range plan[i:] {
				os.Remove(q.tmp)
			}
			return fmt.Errorf("reports: write %s: %w", p.target, err)
		}
		dirs[filepath.Dir(p.target)] = true
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// artifactTarget is where a is written this run. A relocated artifact
// may not land on another artifact's file in dir.
func artifactTarget(dir string, a Artifact, in *Inputs, table []Artifact) (string, error) {
	target := filepath.Join(dir, a.Name)
	if a.Path != nil {
		if p := a.Path(in); p != "" {
			target = resolveOutput(dir, p)
		}
	}
	if other, ok := tableArtifactAt(dir, target, table); ok && other.Name != a.Name {
		return "", fmt.Errorf("reports: the %s path %s is the run's %s: choose another file name", a.Name, target, other.Name)
	}
	return target, nil
}

// resolveOutput resolves p relative to dir unless it is absolute.
func resolveOutput(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// tableArtifactAt returns the table artifact whose own file in dir is
// path (compared as absolute paths, so a relative dir and an absolute
// path to the same file match).
func tableArtifactAt(dir, path string, table []Artifact) (Artifact, bool) {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return filepath.Clean(p)
	}
	target := abs(path)
	for _, a := range table {
		if abs(filepath.Join(dir, a.Name)) == target {
			return a, true
		}
	}
	return Artifact{}, false
}

// nameFiles points report.json's file-name fields at the files written
// and clears those that name a table file in dir this run does not write.
func nameFiles(in *Inputs, table []Artifact, plan []*plannedArtifact) {
	produced := map[string]bool{}
	for _, p := range plan {
		produced[p.Name] = true
		if p.Field == nil {
			continue
		}
		name := p.Name
		if p.Path != nil && p.Path(in) != "" {
			name = p.Path(in)
		}
		*p.Field(in.Report) = name
	}
	for _, a := range table {
		if a.Field != nil && !produced[a.Name] && *a.Field(in.Report) == a.Name {
			*a.Field(in.Report) = ""
		}
	}
}

// removeStale removes from dir report.json, the table files this write
// does not put in dir, and leftover temporary files of table names.
func removeStale(dir string, table []Artifact, plan []*plannedArtifact) error {
	inDir, ours := map[string]bool{}, map[string]bool{}
	for _, p := range plan {
		inDir[p.target], ours[p.tmp] = true, true
	}
	for _, a := range table {
		own := filepath.Join(dir, a.Name)
		if err := removeLeftoverTemps(own, ours); err != nil {
			return err
		}
		if inDir[own] && a.Name != ReportFile {
			continue // replaced by the rename
		}
		if err := os.Remove(own); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reports: remove %s of an earlier run: %w (remove it or choose another output directory)", own, err)
		}
	}
	return nil
}

// Preflight checks, before a run starts, that its outputs can be written:
// dir can be created and a file created in it, no file of the artifact
// table in dir is a directory, and each of extraPaths (files written
// beside the table, such as the history; relative to dir unless absolute)
// has a creatable, writable parent directory, is not a directory and is
// not another artifact's file. It creates dir and the extra paths' parent
// directories (the run would) and leaves no file behind. The error names
// the path and what to change.
func Preflight(dir string, extraPaths ...string) error {
	if err := probeDir(dir); err != nil {
		return fmt.Errorf("output directory %s is not writable: %w (choose another output directory)", dir, err)
	}
	for _, a := range artifactTable {
		if err := notADirectory(filepath.Join(dir, a.Name)); err != nil {
			return err
		}
	}
	for _, p := range extraPaths {
		if p == "" {
			continue
		}
		target := resolveOutput(dir, p)
		// Only an artifact that can be relocated (the history) may be at
		// its own name; any other table file would be overwritten.
		if other, ok := tableArtifactAt(dir, target, artifactTable); ok && other.Path == nil {
			return fmt.Errorf("output file %s is the run's %s: choose another file name", target, other.Name)
		}
		if err := probeDir(filepath.Dir(target)); err != nil {
			return fmt.Errorf("output file %s cannot be written: %w (choose another path)", target, err)
		}
		if err := notADirectory(target); err != nil {
			return err
		}
	}
	return nil
}

// probeDir creates dir if missing and proves a file can be created in it.
func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".preflight"+tmpInfix+"*")
	if err != nil {
		return err
	}
	name := f.Name()
	err = f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}

func notADirectory(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("output file %s is a directory: remove it or choose another output path", path)
	}
	return nil
}

// encodeJSON writes the report as indented JSON with a trailing newline.
func (r *Report) encodeJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("reports: encode report.json: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
