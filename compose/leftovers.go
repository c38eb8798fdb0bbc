package compose

// Temporary directories of the harness (node data dirs, PostgreSQL data
// dirs) carry the identity of the process that made them, so that a run
// can remove the ones a killed earlier run (SIGKILL, a crash) left behind —
// and only those: a directory whose owner still runs, or that carries no
// owner mark, is never touched.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ownerFile names, inside a harness temp dir, the process that created it:
// "<pid> <start time in clock ticks since boot>" (the start time tells a
// reused PID from the original process).
const ownerFile = ".seckill-owner"

// makeOwnedTempDir is os.MkdirTemp plus the owner mark of this process.
func makeOwnedTempDir(base, pattern string) (string, error) {
	dir, err := os.MkdirTemp(base, pattern)
	if err != nil {
		return "", err
	}
	if id, err := processIdentity(os.Getpid()); err == nil {
		_ = os.WriteFile(filepath.Join(dir, ownerFile), []byte(id), 0o644)
	}
	return dir, nil
}

// processIdentity is "<pid> <starttime>" of a running process (from
// /proc/<pid>/stat), or an error when no such process runs.
func processIdentity(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start past the last ')'. starttime is field 22.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return fmt.Sprintf("%d %s", pid, fields[19]), nil
}

// RemoveLeftovers removes the directories under base (os.TempDir() when
// "") whose name starts with prefix and whose owner mark names a process
// that no longer runs. It returns the directories it removed.
func RemoveLeftovers(base, prefix string) []string {
	if base == "" {
		base = os.TempDir()
	}
	matches, _ := filepath.Glob(filepath.Join(base, prefix+"*"))
	var removed []string
	for _, dir := range matches {
		mark, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // no mark: not ours to judge
		}
		var pid int
		if _, err := fmt.Sscanf(string(mark), "%d", &pid); err != nil || pid <= 0 {
			continue
		}
		if id, err := processIdentity(pid); err == nil && id == strings.TrimSpace(string(mark)) {
			continue // its owner still runs
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}
