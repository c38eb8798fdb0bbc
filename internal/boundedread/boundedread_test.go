package boundedread

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFileReadsUpToTheLimitAndRefusesPastIt(t *testing.T) {
	dir := t.TempDir()
	exact := filepath.Join(dir, "exact")
	if err := os.WriteFile(exact, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := File(exact, 10, "test file", "the fix"); err != nil || string(b) != "0123456789" {
		t.Fatalf("a file of exactly the limit: %q, %v", b, err)
	}
	_, err := File(exact, 9, "test file", "the fix")
	if !IsTooLarge(err) || !strings.Contains(err.Error(), "test file "+exact+" holds 10 bytes, over the limit of 9 bytes for it: the fix") {
		t.Fatalf("a file over the limit: %v", err)
	}
}

func TestNonRegularFilesAreRefusedUnread(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{link: "a character device", fifo: "a named pipe", dir: "a directory"} {
		_, err := File(path, MiB, "input", "give a regular file")
		if err == nil || !strings.Contains(err.Error(), "is not a regular file ("+kind+")") || !strings.Contains(err.Error(), "give a regular file") {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// A file that grows past the limit after the size check is cut off with
// the limit's error, not read on.
func TestOpenStopsAFileGrowingPastTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grows")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, 4, "history", "fix")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.WriteFile(path, []byte("abcdefgh"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if !IsTooLarge(err) || len(b) != 4 {
		t.Fatalf("read %q, %v; want 4 bytes and the limit's error", b, err)
	}
}
