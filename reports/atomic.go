package reports

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Every file this package writes is written safely:
//
//   - Atomically: to a temporary file in the target's own directory (named
//     ".<name>.tmp-<random>", created with O_EXCL so it never follows or
//     reuses anything already there), flushed and fsynced, then renamed
//     onto the target and the directory fsynced. A reader, or a process
//     killed at any moment, sees the old file or the new one, never half.
//   - Never through a symlink: rename replaces whatever entry is at the
//     target path; a symlink there is replaced by the new regular file and
//     the file it pointed to is left untouched.
//   - Without leftovers: on any error the temporary file is removed and the
//     target keeps its previous content. Temporary files that a killed
//     earlier write left in a run directory are removed by the next
//     WriteArtifacts into it.

// tmpInfix separates a target's name from the random part of its
// temporary file's name: ".report.json.tmp-123".
const tmpInfix = ".tmp-"

// outputMode is the permission of every written file (before umask).
const outputMode = 0o644

// WriteFileAtomic writes data to path atomically (see the package's
// file-safety rules above: temporary file beside the target, fsync,
// rename, never through a symlink, no leftovers on error). The directory
// must exist.
func WriteFileAtomic(path string, data []byte) error {
	return WriteFileAtomicFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileAtomicFunc is WriteFileAtomic for content produced by write
// (buffered; write's error aborts the write and leaves the old file).
func WriteFileAtomicFunc(path string, write func(io.Writer) error) error {
	tmp, err := stageFile(path, write)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("reports: write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// stageFile writes the content of target to a new temporary file beside
// it, fsynced and closed, and returns its path; the caller renames it onto
// target (or removes it). On error nothing is left behind.
func stageFile(target string, write func(io.Writer) error) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+tmpInfix+"*")
	if err != nil {
		return "", fmt.Errorf("reports: write %s: %w", target, err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(outputMode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("reports: write %s: %w", target, err)
	}
	return f.Name(), nil
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("reports: sync %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("reports: sync %s: %w", dir, err)
	}
	return nil
}

// removeLeftoverTemps removes the temporary files of target that an
// earlier write killed before its rename left in target's directory
// (only names of the form ".<base of target>.tmp-*"), except those in
// keep (this write's own, by path).
func removeLeftoverTemps(target string, keep map[string]bool) error {
	prefix := "." + filepath.Base(target) + tmpInfix
	entries, err := os.ReadDir(filepath.Dir(target))
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(filepath.Dir(target), e.Name())
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) && !keep[path] {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("reports: remove leftover %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}
