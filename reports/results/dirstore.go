package results

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"seckill-harness/internal/fileref"
)

// lockName is the file under the directory that appends lock (flock).
const lockName = ".lock"

// DirStore is a directory of JSON lines, one file per scenario
// (FileOf); see the package doc for its append and rotation contract.
type DirStore struct {
	dir  string
	keep int
	warn func(string)
}

// OpenDir opens (creating it if missing) the history directory o.Dir.
func OpenDir(o Options) (*DirStore, error) {
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("results history %s: %w (give --results-history a writable directory)", o.Dir, err)
	}
	if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("results history %s: not a directory (give --results-history a directory)", o.Dir)
	}
	return &DirStore{dir: o.Dir, keep: o.Keep, warn: o.Warn}, nil
}

// Where is the directory.
func (s *DirStore) Where() string { return s.dir }

// Close does nothing: every append closes its file.
func (s *DirStore) Close() error { return nil }

// FileOf is the file of a scenario's records: its name with every byte
// outside [A-Za-z0-9._-] as '_', ".jsonl" added.
func (s *DirStore) FileOf(scenario string) string {
	name := strings.Map(func(r rune) rune {
		if r < 128 && (r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, scenario)
	if name == "" || strings.Trim(name, ".") == "" {
		name = "_" + name
	}
	return filepath.Join(s.dir, name+".jsonl")
}

// lock takes the directory's exclusive append lock; the returned func
// releases it.
func (s *DirStore) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results history %s: lock: %w", s.dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("results history %s: lock: %w", s.dir, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// Append writes r as one line of its scenario's file, under the lock;
// over Keep records the file is rewritten with the newest Keep.
func (s *DirStore) Append(_ context.Context, r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("results history: %w", err)
	}
	line = append(line, '\n')
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	path := s.FileOf(r.Scenario)
	var old []byte
	if rf, err := s.open(path, os.O_RDONLY); err == nil {
		old, err = io.ReadAll(rf)
		rf.Close()
		if err != nil {
			return fmt.Errorf("results history %s: %w", path, err)
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	if bytes.Count(old, []byte{'\n'})+1 > s.keep {
		return s.rotate(path, old, line)
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		line = append([]byte{'\n'}, line...) // end a line a crash cut short
	}
	f, err := s.open(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("results history %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("results history %s: %w", path, err)
	}
	return f.Close()
}

// rotate rewrites path with the newest keep-1 readable lines of old and
// line, through a synced temporary file renamed over it.
func (s *DirStore) rotate(path string, old, line []byte) error {
	var lines [][]byte
	for i, l := range bytes.Split(old, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if !json.Valid(l) {
			s.warn(fmt.Sprintf("%s:%d: not a JSON record; dropped by the rotation", path, i+1))
			continue
		}
		lines = append(lines, l)
	}
	if n := len(lines) - (s.keep - 1); n > 0 {
		lines = lines[n:]
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	b.Write(line)
	// Under the lock no other rotation runs: a temporary file left is a
	// crashed rotation's, whose file was never replaced.
	if stale, _ := filepath.Glob(filepath.Join(s.dir, ".rotate-*")); len(stale) > 0 {
		for _, f := range stale {
			_ = os.Remove(f)
		}
	}
	tmp, err := os.CreateTemp(s.dir, ".rotate-*")
	if err != nil {
		return fmt.Errorf("results history %s: rotate: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // nothing left after the rename
	if _, err := tmp.Write(b.Bytes()); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("results history %s: rotate: %w", path, err)
	}
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync() // the rename is durable
		d.Close()
	}
	return nil
}

// Records reads the scenario's file ("" : every *.jsonl file of the
// directory), skipping a line that does not parse with a warning naming
// file:line.
func (s *DirStore) Records(_ context.Context, scenario string) ([]Record, error) {
	files := []string{s.FileOf(scenario)}
	if scenario == "" {
		var err error
		if files, err = filepath.Glob(filepath.Join(s.dir, "*.jsonl")); err != nil {
			return nil, err
		}
	}
	var out []Record
	for _, path := range files {
		rs, err := s.readFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	sortByAt(out)
	return out, nil
}

func (s *DirStore) readFile(path string) ([]Record, error) {
	f, err := s.open(path, os.O_RDONLY)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(l, &r); err != nil {
			s.warn(fmt.Sprintf("%s:%d: skipped, not a record: %v", path, n, err))
			continue
		}
		if r.Scenario == "" || r.At.IsZero() {
			s.warn(fmt.Sprintf("%s:%d: skipped, a record without scenario or at", path, n))
			continue
		}
		out = append(out, r)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("results history %s: a line over %d MiB, far longer than any record: the file is not a results history; move it out of the directory", path, maxLine>>20)
	} else if err != nil {
		return nil, fmt.Errorf("results history %s: %w", path, err)
	}
	return out, nil
}

// maxLine is the longest line readFile reads: a record is a few KiB.
const maxLine = 16 << 20

// open opens the history file path (a file of the directory) through an
// os.Root on the directory: a symlink that leads out of it is refused, and
// so is anything but a regular file (before it is opened: a FIFO would
// block). A file that does not exist gives an error os.IsNotExist knows.
func (s *DirStore) open(path string, flag int) (*os.File, error) {
	const fix = "a results history holds only its own regular .jsonl files: remove the symlink or the file, or give --results-history another directory"
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("results history %s: %w (give --results-history a directory)", s.dir, err)
	}
	defer root.Close()
	name := filepath.Base(path)
	st, err := root.Stat(name)
	switch {
	case os.IsNotExist(err) && flag&os.O_CREATE == 0:
		return nil, err
	case os.IsNotExist(err):
	case err != nil:
		return nil, fmt.Errorf("results history %s: %v: %s", path, fileref.Cause(err), fix)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("results history %s is not a regular file (%s): %s", path, fileref.Kind(st.Mode()), fix)
	}
	f, err := root.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results history %s: %v: %s", path, fileref.Cause(err), fix)
	}
	return f, nil
}
