package main

import (
	"net"
	"strings"
	"testing"
)

// closedPort is a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A run refused before its load exits 2 naming the fix, starts nothing and
// leaves no --out directory: a service under test nothing answers at (not
// judged FAIL on a load of refused connections), a cluster address nothing
// answers at, a redis-server binary that is not there.
func TestRefusedBeforeTheLoadLeavesNoOut(t *testing.T) {
	svc := "http://" + closedPort(t)
	cluster := closedPort(t)
	for _, c := range []hostileCase{
		{"service-unreachable", []string{"run", "smoke", "--service", svc}, []string{"service under test " + svc, "nothing answers at", "start the service before the run", "--service-cmd"}},
		{"cluster-unreachable", []string{"run", "smoke", "--cluster", "redis://" + cluster}, []string{cluster, "start the cluster, or give --cluster"}},
		{"redis-server-missing", []string{"run", "smoke", "--redis-server", "/nonexistent/redis-server"}, []string{`looked for "/nonexistent/redis-server": no such file or directory`, "--redis-server PATH"}},
	} {
		t.Run(c.name, func(t *testing.T) { runHostile(t, c) })
	}
}

// --out "" on a command whose output has a default directory would run the
// whole load and write nothing: refused up front, naming the default.
func TestEmptyOutIsRefused(t *testing.T) {
	for _, args := range [][]string{{"run", "smoke"}, {"run", "--rate", "10"}, {"race"}, {"explore", "--runs", "1"}, {"catalogue"}} {
		code, out := cli(t, append(args, "--out", "")...)
		if code != exitHarnessError || !strings.Contains(out, `--out "": `) || !strings.Contains(out, "give a directory (default ") {
			t.Errorf("%v --out \"\": exit %d, want 2 naming the fix:\n%s", args, code, out)
		}
	}
}

// A file that is not there is named with the fix, not as "stat PATH: no
// such file or directory".
func TestMissingFilesAreNamedWithTheFix(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "/nonexistent-dir"}, "give the run directory"},
		{[]string{"adapter", "validate", "/nonexistent.yaml"}, "give the path of an adapter YAML file"},
		{[]string{"trend", "--series", "/nonexistent.json"}, "give a JSON array of series"},
	} {
		code, out := cli(t, c.args...)
		if code != exitHarnessError || strings.Contains(out, "stat /") || !strings.Contains(out, "no such file or directory: "+c.want) {
			t.Errorf("%v: exit %d, want 2 naming the file and %q, without stat's repetition:\n%s", c.args, code, c.want, out)
		}
	}
}

// A report.json that is not JSON is named with the fix (and not quoted).
func TestReportOfANonJSONFileNamesTheFix(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir+"/report.json", "root:x:0:0:SECRETLINE\n")
	code, out := cli(t, "report", dir)
	if code != exitHarnessError || strings.Contains(out, "SECRETLINE") || !strings.Contains(out, "give the run directory of a finished run") {
		t.Fatalf("exit %d, want 2 naming the fix without quoting the file:\n%s", code, out)
	}
}
