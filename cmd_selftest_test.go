package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/internal/clustertest"
	"seckill-harness/sut/badpaths"
)

func TestSelftestBadInputExitsTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"selftest", "--only", "nope"}, "get-then-decr"},
		{[]string{"selftest", "--runs", "0"}, "--runs"},
	} {
		if code, out := cli(t, c.args...); code != exitHarnessError || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 naming %q", c.args, code, out, c.want)
		}
	}
}

func TestSelftestListsThePaths(t *testing.T) {
	code, out := cli(t, "selftest", "--list")
	if code != exitPass || !strings.Contains(out, "new-request-id-on-timeout") || !strings.Contains(out, "mq-timeout") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestSelftestOneRunPasses(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	code, out := cli(t, "selftest", "--runs", "1", "--only", "lua-no-user-marker", "--only", "release-on-send-timeout", "--out", dir)
	if code != exitPass {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"lua-no-user-marker", "caught 1/1", "I4 1/1", "release-on-send-timeout", "P5 1/1", "mq-timeout", "reference", "passed 1/1", "PASS", "wall time"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "selftest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OK   bool `json:"ok"`
		Rows []struct {
			Path string `json:"path"`
			Good int    `json:"good"`
		} `json:"rows"`
		Wall  float64 `json:"wall_seconds"`
		Paths []any   `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// 2 bad paths, the reference under same-user and under mq-timeout.
	if !doc.OK || len(doc.Rows) != 4 || doc.Wall <= 0 || len(doc.Paths) != len(badpaths.All()) {
		t.Fatalf("selftest.json: %s", raw)
	}
}
