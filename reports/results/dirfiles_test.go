package results_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"seckill-harness/reports/results"
)

// A history directory holds only its own regular files: a *.jsonl that is
// a symlink out of the directory is neither read (trend, the baseline)
// nor appended to, and a FIFO is refused without blocking; each error
// names the file and the fix.
func TestDirStoreRefusesFilesThatLeaveTheDirectory(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "history")
	outside := filepath.Join(base, "outside.jsonl")
	line, _ := json.Marshal(rec("secret", t0, 7))
	if err := os.WriteFile(outside, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := results.OpenDir(results.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, st.FileOf("secret")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, scenario := range []string{"", "secret"} {
		rs, err := st.Records(ctx, scenario)
		if err == nil || !strings.Contains(err.Error(), "secret.jsonl") || !strings.Contains(err.Error(), "remove the symlink") {
			t.Errorf("Records(%q) through a symlink out of the directory: %d records, %v; want an error naming the file and the fix", scenario, len(rs), err)
		}
	}
	if err := st.Append(ctx, rec("secret", t0.Add(time.Hour), 8)); err == nil {
		t.Errorf("Append through a symlink out of the directory succeeded")
	}
	if b, _ := os.ReadFile(outside); string(b) != string(line)+"\n" {
		t.Errorf("the file outside the directory was written: %q", b)
	}
	if err := os.Remove(st.FileOf("secret")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(st.FileOf("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := st.Records(ctx, "fifo"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is not a regular file (a named pipe)") {
			t.Errorf("a FIFO in the directory: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO in the history directory blocked")
	}
}

// A line longer than any record (over 16 MiB) is named with the fix, not
// as bufio's "token too long".
func TestDirStoreNamesALineTooLong(t *testing.T) {
	dir := t.TempDir()
	st, err := results.OpenDir(results.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.FileOf("big"), []byte(strings.Repeat("x", 17<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = st.Records(context.Background(), "big")
	if err == nil || strings.Contains(err.Error(), "token too long") || !strings.Contains(err.Error(), "big.jsonl") || !strings.Contains(err.Error(), "move it out of the directory") {
		t.Fatalf("a 17 MiB line: %v; want an error naming the file and the fix", err)
	}
}
