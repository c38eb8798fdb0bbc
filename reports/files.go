package reports

import (
	"errors"
	"io"
	"path/filepath"
)

// WriteRunFiles writes report.json, latency.hgrm, latency.hlog, summary.md
// and report.html of a finished run into dir from its Recorder, like
// WriteArtifacts without junit.xml, the history and stale-file removal.
//
// Deprecated: call WriteArtifacts(dir, &Inputs{Report: rep, Hists:
// rec.Histograms(), History: …}), which writes the whole set.
func WriteRunFiles(dir string, rep *Report, rec *Recorder) error {
	if rep == nil || rec == nil {
		return errors.New("reports: WriteRunFiles: nil report or recorder")
	}
	return WriteFiles(dir, rep, rec.Histograms())
}

// WriteFiles is WriteRunFiles from histograms.
//
// Deprecated: call WriteArtifacts(dir, &Inputs{Report: rep, Hists: h}).
func WriteFiles(dir string, rep *Report, h *Histograms) error {
	var legacy []Artifact
	for _, a := range artifactTable {
		if a.Name != JUnitFileName && a.Name != HistoryFileName {
			legacy = append(legacy, a)
		}
	}
	return writeArtifacts(dir, &Inputs{Report: rep, Hists: h}, legacy, false)
}

// WriteRendered writes summary.md and report.html into dir.
//
// Deprecated: call WriteViews, which also writes junit.xml.
func WriteRendered(dir string, rep *Report, h *Histograms) error {
	in := &Inputs{Report: rep, Hists: h}
	for _, a := range artifactTable {
		if a.Name == SummaryFile || a.Name == HTMLFileName {
			if err := WriteFileAtomicFunc(filepath.Join(dir, a.Name), func(w io.Writer) error { return a.Write(w, in) }); err != nil {
				return err
			}
		}
	}
	return nil
}
