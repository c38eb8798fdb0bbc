package main

import (
	"bytes"
	"context"
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
