package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"seckill-harness/internal/clustertest"
)

// adapter validate: exit 0 with the summary for a good file, exit 2 with
// file:line for a broken one.
func TestAdapterValidateCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"adapter", "validate", "docs/adapters/reference.yaml"}, &out, &errb); code != exitPass {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "adapter reference; reserve reserve.lua sha1 ") || !strings.Contains(out.String(), "(KEYS 8, ARGV 11)") {
		t.Errorf("summary: %s", out.String())
	}
	out.Reset()
	errb.Reset()
	bad := "sut/adapter/testdata/broken/unknown-outcome.yaml"
	if code := run(context.Background(), []string{"adapter", "validate", bad}, &out, &errb); code != exitHarnessError {
		t.Fatalf("exit %d for %s, want 2", code, bad)
	}
	if !strings.Contains(errb.String(), bad+":7: ") || !strings.Contains(errb.String(), `unknown outcome "ACCEPT"`) {
		t.Errorf("stderr: %s", errb.String())
	}
}

// adapter init: writes a file `adapter validate` accepts; refuses to
// overwrite it and a missing script with exit 2.
func TestAdapterInitCommand(t *testing.T) {
	clustertest.Need(t)
	out := t.TempDir() + "/mine.yaml"
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"adapter", "init", "docs/adapters/scripts/cluster-safe.lua", "--out", out}, &stdout, &stderr); code != exitPass {
		t.Fatalf("init: exit %d, stderr %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "wrote "+out) {
		t.Errorf("init said: %s", stdout.String())
	}
	// The script is outside out's directory: the next step init names
	// carries the --files-root that reaches it.
	next := strings.Fields(stdout.String()[strings.Index(stdout.String(), "then: seckill-harness ")+len("then: seckill-harness "):])
	if len(next) != 5 || next[3] != "--files-root" {
		t.Fatalf("init's next step %q: want adapter validate FILE --files-root DIR", next)
	}
	stdout.Reset()
	if code := run(context.Background(), next, &stdout, &stderr); code != exitPass || !strings.Contains(stdout.String(), "(KEYS 4, ARGV 3)") {
		t.Fatalf("validate of init's file: exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	for _, args := range [][]string{{"adapter", "init", "docs/adapters/scripts/cluster-safe.lua", "--out", out}, {"adapter", "init", "no/such.lua"}} {
		stderr.Reset()
		if code := run(context.Background(), args, &stdout, &stderr); code != exitHarnessError {
			t.Errorf("%v: exit %d, want 2 (stderr %s)", args, code, stderr.String())
		}
		t.Logf("%v: %s", args, stderr.String())
	}
}

// adapter validate refuses, with exit 2, a script that calls a command
// the harness refuses (naming script:line and the command), a setup that
// runs one (naming the file's line), and a script of random bytes
// (naming the file, quoting none of it); adapter init refuses such a
// script before it starts anything.
func TestAdapterValidateRefusesRefusedCommandsAndBinaryScripts(t *testing.T) {
	dir := t.TempDir()
	random := make([]byte, 4096)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r.lua"), random, 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := "reserve:\n  script: r.lua\n  keys: [\"s:{${activity}}\"]\n  reply: {outcomes: {ACCEPTED: [1], SOLD_OUT: [0]}}\n"
	if err := os.WriteFile(filepath.Join(dir, "r.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"adapter", "validate", "sut/adapter/testdata/refused/flushall.yaml"}, []string{"flushall.yaml:3: reserve.script: ", "flushall.lua:3 calls FLUSHALL, a command the harness refuses", "Remove the call"}},
		{[]string{"adapter", "validate", "sut/adapter/testdata/refused/setup-keys.yaml"}, []string{"setup-keys.yaml:11: setup.commands[1]: KEYS is a command the harness refuses"}},
		{[]string{"adapter", "validate", filepath.Join(dir, "r.yaml")}, []string{"r.yaml:2: reserve.script: ", "r.lua is not Lua source text", "saved as UTF-8 text"}},
		{[]string{"adapter", "init", "sut/adapter/testdata/refused/flushall.lua"}, []string{"adapter init: sut/adapter/testdata/refused/flushall.lua:3 calls FLUSHALL"}},
		{[]string{"adapter", "init", filepath.Join(dir, "r.lua")}, []string{"adapter init: ", "r.lua is not Lua source text"}},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, &out, &errb)
		t.Logf("%v: exit %d: %s", c.args, code, errb.String())
		if code != exitHarnessError {
			t.Errorf("%v: exit %d, want 2 (stdout %s)", c.args, code, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr does not say %q", c.args, w)
			}
		}
		if !utf8.Valid(errb.Bytes()) || bytes.IndexByte(errb.Bytes(), 0) >= 0 || errb.Len() > 1000 {
			t.Errorf("%v: stderr quotes the file (%d bytes)", c.args, errb.Len())
		}
	}
}
