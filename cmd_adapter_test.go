package main

import (
	"bytes"
	"context"
	"seckill-harness/internal/clustertest"
	"strings"
	"testing"
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
	bad := "runner/adapter/testdata/broken/unknown-outcome.yaml"
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
	stdout.Reset()
	if code := run(context.Background(), []string{"adapter", "validate", out}, &stdout, &stderr); code != exitPass || !strings.Contains(stdout.String(), "(KEYS 4, ARGV 3)") {
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
