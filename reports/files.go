package reports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteRunFiles writes the artifacts of a finished run into dir (created
// if missing): report.json, latency.hgrm (the overall latency distribution),
// latency.hlog (the per-second and per-phase interval histograms, see
// WriteHlog), summary.md (WriteMarkdown) and report.html (WriteHTML).
// rec is the Recorder the report was filled from. It sets rep.HGRMFile,
// HlogFile and HTMLFile to the file names when they are empty, before
// writing report.json. Each file is written to a temporary name and
// renamed, so a reader never sees half a file.
func WriteRunFiles(dir string, rep *Report, rec *Recorder) error {
	if rep == nil || rec == nil {
		return errors.New("reports: WriteRunFiles: nil report or recorder")
	}
	return WriteFiles(dir, rep, rec.Histograms())
}

// WriteFiles is WriteRunFiles from histograms (a merged run's, or a run
// read back with LoadRun). With nil or partial histograms, latency.hlog is
// written only when h has per-second histograms, and latency.hgrm only
// when it has the overall latency.
func WriteFiles(dir string, rep *Report, h *Histograms) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	hasHGRM := h != nil && h.Latency != nil
	hasHlog := h != nil && len(h.Seconds) > 0
	if hasHGRM && rep.HGRMFile == "" {
		rep.HGRMFile = HGRMFileName
	}
	if hasHlog && rep.HlogFile == "" {
		rep.HlogFile = HlogFileName
	}
	if rep.HTMLFile == "" {
		rep.HTMLFile = HTMLFileName
	}
	if err := rep.WriteJSON(filepath.Join(dir, ReportFile)); err != nil {
		return err
	}
	if hasHGRM {
		if err := writeFileAtomic(filepath.Join(dir, HGRMFileName), func(w io.Writer) error {
			return WriteHGRM(w, h.Latency)
		}); err != nil {
			return err
		}
	}
	if hasHlog {
		if err := writeFileAtomic(filepath.Join(dir, HlogFileName), func(w io.Writer) error {
			return WriteHlog(w, rep, h)
		}); err != nil {
			return err
		}
	}
	return WriteRendered(dir, rep, h)
}

// WriteRendered writes the views of a report into dir: summary.md and
// report.html (what `seckill-harness report` re-renders).
func WriteRendered(dir string, rep *Report, h *Histograms) error {
	if err := writeFileAtomic(filepath.Join(dir, SummaryFile), func(w io.Writer) error {
		return WriteMarkdown(w, rep)
	}); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, HTMLFileName), func(w io.Writer) error {
		return WriteHTML(w, rep, h)
	})
}

// writeFileAtomic writes path through a temporary file in the same
// directory, renamed into place when write succeeded.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("reports: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	bw := bufio.NewWriterSize(tmp, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("reports: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("reports: write %s: %w", path, err)
	}
	return nil
}
