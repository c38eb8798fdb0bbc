package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The history a generator.json names is a path written in a file: verify
// resolves it through fileref like the scenario's and adapter's paths. A
// generator.json naming ../../etc/passwd, /proc/self/environ, or a
// history.jsonl that is a symlink to /etc/passwd is refused with exit 2
// before anything is read, the fix (--files-root) named and nothing of
// the file quoted; with --files-root / the same path is reached (and
// fails as a history instead).
func TestVerifyRefusesAHistoryOutsideItsRunDirectory(t *testing.T) {
	const secret = "s3cr3t-Vq8Lm2Xz7Np4Kt"
	env := []string{"SECKILL_TEST_SECRET=" + secret}
	base := t.TempDir()
	run := func(name, history string) string {
		d := filepath.Join(base, name)
		for _, f := range []string{"report.json", "latency.hlog"} {
			b, err := os.ReadFile(filepath.Join("reports", "testdata", "failover-run", f))
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(d, f), string(b))
		}
		mustWrite(t, filepath.Join(d, "generator.json"), `{"activity":"a","generator":"0/1","index":0,"count":1,"history":"`+history+`"}`+"\n")
		return d
	}
	passwd := run("passwd", "../../../../../../../../../etc/passwd")
	environ := run("environ", "/proc/self/environ")
	linked := run("linked", "history.jsonl")
	mustSymlink(t, "/etc/passwd", filepath.Join(linked, "history.jsonl"))
	verify := func(args ...string) (int, string) {
		return cliChild(t, env, append([]string{"verify", "--cluster", "redis://127.0.0.1:1", "--out", filepath.Join(base, "out")}, args...)...)
	}
	for _, c := range []struct{ name, dir, want string }{
		{"etc-passwd", passwd, "generator.json history: ../../"},
		{"proc-environ", environ, "generator.json history: /proc/self/environ leaves"},
		{"symlink-out", linked, "generator.json history: history.jsonl is a symlink that leads out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := verify(c.dir)
			t.Logf("exit %d: %s", code, strings.TrimSpace(out))
			if code != exitHarnessError {
				t.Errorf("exit %d, want 2", code)
			}
			for _, w := range []string{c.want, "--files-root"} {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q", w)
				}
			}
			for _, bad := range []string{secret, "SECKILL_TEST_SECRET", "root:", "history line", "invalid character"} {
				if strings.Contains(out, bad) {
					t.Errorf("output quotes %q: the file was read", bad)
				}
			}
		})
	}
	// The refusal is the boundary's: a root that holds the file lets verify
	// read it, and it fails as a history.
	if code, out := verify("--files-root", "/", passwd); code != exitHarnessError || !strings.Contains(out, "history line 1") {
		t.Errorf("with --files-root /: exit %d, want 2 reading /etc/passwd as a history:\n%s", code, out)
	}
}
