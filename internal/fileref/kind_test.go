package fileref

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"seckill-harness/internal/boundedread"
)

// A path the harness refuses is named alike whichever package refuses
// it: fileref's Resolve (a path written in a file) and boundedread's
// Check (a file about to be read) share one classifier of non-regular
// files.
func TestResolveAndBoundedReadNameAFileKindAlike(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "s.yaml")
	write(t, ref, "name: s\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", filepath.Join(dir, "null")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for name, want := range map[string]string{"fifo": "a named pipe", "sub": "a directory", "null": "a character device", "sock": "a socket"} {
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, bounded := Kind(st.Mode()), boundedread.Kind(st.Mode()); got != want || bounded != want {
			t.Errorf("%s: fileref.Kind %q, boundedread.Kind %q, want %q", name, got, bounded, want)
		}
		_, cerr := boundedread.Check(path, boundedread.MiB, "input", "give a file")
		refusals := map[string]error{"boundedread.Check": cerr}
		if name != "null" { // a link to /dev/null leaves the directory: Resolve refuses it for that first
			_, refusals["Resolve"] = Resolve(ref, name)
		}
		for who, err := range refusals {
			if err == nil || !strings.Contains(err.Error(), "is not a regular file ("+want+")") {
				t.Errorf("%s %s: %v, want it refused as %s", who, name, err, want)
			}
		}
	}
}
