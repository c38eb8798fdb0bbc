package fileref

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A path written in a file resolves against its directory and stays
// inside it (or inside the root): escapes by .., by an absolute path and
// by a symlink are refused, a symlink that stays inside is followed, a
// FIFO is refused, a missing file is left to its reader.
func TestResolveKeepsPathsInsideTheFilesDirectory(t *testing.T) {
	base := t.TempDir()
	in := filepath.Join(base, "in")
	ref := filepath.Join(in, "s.yaml")
	write(t, ref, "name: s\n")
	write(t, filepath.Join(in, "sub", "a.yaml"), "x: 1\n")
	write(t, filepath.Join(base, "out.yaml"), "x: 1\n")
	if err := os.Symlink(filepath.Join(base, "out.yaml"), filepath.Join(in, "out-link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/a.yaml", filepath.Join(in, "in-link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(in, "fifo.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	for written, want := range map[string]string{
		"sub/a.yaml":                filepath.Join(in, "sub", "a.yaml"),
		"in-link.yaml":              filepath.Join(in, "in-link.yaml"),
		filepath.Join(in, "s.yaml"): filepath.Join(in, "s.yaml"),
		"missing.yaml":              filepath.Join(in, "missing.yaml"),
		"../in/sub/../sub/a.yaml":   filepath.Join(in, "sub", "a.yaml"),
	} {
		if got, err := Resolve(ref, written); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", written, got, err, want)
		}
	}
	for written, want := range map[string]string{
		"../out.yaml":                   "leaves " + ref + "'s directory",
		filepath.Join(base, "out.yaml"): "leaves",
		"/proc/self/environ":            "leaves",
		"out-link.yaml":                 "is a symlink that leads out",
		"fifo.yaml":                     "is not a regular file (a named pipe)",
	} {
		if _, err := Resolve(ref, written); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "give") && !strings.Contains(err.Error(), Flag) {
			t.Errorf("%s: %v; want %q and the fix", written, err, want)
		}
	}
	if err := SetRoot(base); err != nil {
		t.Fatal(err)
	}
	defer SetRoot("")
	for _, written := range []string{"../out.yaml", "out-link.yaml"} {
		if _, err := Resolve(ref, written); err != nil {
			t.Errorf("%s under %s %s: %v", written, Flag, base, err)
		}
	}
	if _, err := Resolve(ref, "/proc/self/environ"); err == nil || !strings.Contains(err.Error(), "leaves "+Flag) {
		t.Errorf("/proc/self/environ under %s %s: %v", Flag, base, err)
	}
	if err := SetRoot(filepath.Join(base, "out.yaml")); err == nil {
		t.Errorf("%s naming a file was accepted", Flag)
	}
}

func TestClipCutsEveryLongQuotedValue(t *testing.T) {
	long := strings.Repeat("a", 30) + "SECRET-TAIL"
	msg := Clip(`f.yaml:3: x: "short" and "` + long + "\" and `" + long + "`" + ` and "esc\"aped"`)
	if strings.Contains(msg, "SECRET-TAIL") || !strings.Contains(msg, `"short"`) || !strings.Contains(msg, `"esc\"aped"`) {
		t.Fatalf("%s", msg)
	}
	if !strings.Contains(msg, `"`+strings.Repeat("a", 30)+`SE…" (41 bytes)`) {
		t.Fatalf("the cut value is not its first %d bytes and its length: %s", MaxToken, msg)
	}
	if got := Token("é" + strings.Repeat("b", 40)); !strings.HasPrefix(got, `"é`) || strings.Contains(got, `\x`) {
		t.Fatalf("cut inside a character: %s", got)
	}
}

func TestCheckTextRefusesControlBytesWithoutQuoting(t *testing.T) {
	err := CheckText("env", []byte("A=s3cret\x00B=2\n"), "a mapping")
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "env:1: not a YAML text file") {
		t.Fatalf("%v", err)
	}
	if err := CheckText("ok", []byte("a: 1\r\n\tb: \"é\"\n"), "x"); err != nil {
		t.Fatal(err)
	}
}
