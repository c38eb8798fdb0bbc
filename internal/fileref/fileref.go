// Package fileref keeps the harness's input files from reaching other
// files and from leaking into its messages.
//
// A path written inside a file (a scenario's adapter: and
// service.mapping:, a suite's members, an adapter file's script:, a
// generator.json's history) is
// resolved against that file's directory and must stay inside it, or
// inside the directory the user names with --files-root (SetRoot); a
// symlink that leads out is refused, and so is anything but a regular
// file. A path the user gives on the command line is the user's choice
// and is not checked here.
//
// Errors about a file's content quote at most MaxToken bytes of any one
// token (Clip), name a file that is not text or not a YAML mapping
// without quoting it (CheckText, NotMapping), and never echo the rest.
package fileref

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"seckill-harness/internal/boundedread"
)

// Flag is the command-line flag that names the root (SetRoot).
const Flag = "--files-root"

var (
	mu   sync.RWMutex
	root string // absolute, symlinks resolved; "": each file's own directory
)

// SetRoot makes dir the directory every path written inside a file must
// stay in ("" : each file's own directory, the default). It is process-
// wide: the CLI sets it once per command from --files-root. dir must be
// an existing directory.
func SetRoot(dir string) error {
	if dir == "" {
		mu.Lock()
		root = ""
		mu.Unlock()
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %v: give an existing directory that holds the scenario, adapter and mapping files and every file they name", Flag, dir, Cause(err))
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return fmt.Errorf("%s %s is not a directory: give the directory that holds the scenario, adapter and mapping files and every file they name", Flag, dir)
	}
	mu.Lock()
	root = abs
	mu.Unlock()
	return nil
}

// Root is the directory SetRoot set ("" : none).
func Root() string {
	mu.RLock()
	defer mu.RUnlock()
	return root
}

// Resolve returns the path that written, a path written inside the file
// referrer (relative to referrer's directory, or absolute), names. It
// refuses a path that leaves the boundary (referrer's directory, or Root
// when set), lexically or through a symlink, and one that names anything
// but a regular file; the error names both files and the fix. A path
// that does not exist is returned unchecked further: nothing can be read
// through it, and its reader says it is missing.
func Resolve(referrer, written string) (string, error) {
	dir := filepath.Dir(referrer)
	full := written
	if !filepath.IsAbs(full) {
		full = filepath.Join(dir, written)
	}
	bound, where := Root(), Flag+" "+Root()
	if bound == "" {
		bound, where = dir, referrer+"'s directory"
	}
	absBound, err := filepath.Abs(bound)
	if err != nil {
		return "", err
	}
	realBound := absBound
	if r, err := filepath.EvalSymlinks(absBound); err == nil {
		realBound = r
	}
	absFull, err := filepath.Abs(full)
	if err != nil {
		return "", err
	}
	fix := fmt.Sprintf("keep the files a file names beside it (or below its directory) and write their relative paths, or name a directory that holds them all with %s DIR", Flag)
	if Root() != "" {
		fix = fmt.Sprintf("move the file under %s, or give %s a directory that holds it", Root(), Flag)
	}
	if !Within(absBound, absFull) && !Within(realBound, absFull) {
		return "", fmt.Errorf("%s leaves %s (%s): a path written in a file stays inside it; %s", written, where, realBound, fix)
	}
	real, err := filepath.EvalSymlinks(absFull)
	if errors.Is(err, fs.ErrNotExist) {
		return full, nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v; %s", written, Cause(err), fix)
	}
	if !Within(realBound, real) {
		return "", fmt.Errorf("%s is a symlink that leads out of %s (%s): a path written in a file stays inside it; %s", written, where, realBound, fix)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%s: %v; %s", written, Cause(err), fix)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s): the harness reads only regular files; give a file", written, Kind(st.Mode()))
	}
	return full, nil
}

// Within reports whether path is dir or below it (both absolute and
// clean).
func Within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Cause drops a *PathError's operation and path (the caller names the
// path): "no such file or directory", "path escapes from parent".
func Cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Kind names the kind of a file that is not a regular one: "a directory",
// "a named pipe", …; it is boundedread.Kind, the one classifier of paths
// the harness refuses to read.
func Kind(m fs.FileMode) string { return boundedread.Kind(m) }
