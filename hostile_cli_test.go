package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"seckill-harness/lua"
	"seckill-harness/reports"
)

// hostileCase is one hostile invocation: it must exit 2 with a message
// naming the problem and the fix (every want), start nothing and leave
// no --out behind.
type hostileCase struct {
	name string
	args []string
	want []string
}

// runHostile runs c with --out under a fresh directory and checks the contract.
func runHostile(t *testing.T, c hostileCase) {
	t.Helper()
	before := redisServers(t)
	out := filepath.Join(t.TempDir(), "out")
	args := append(append([]string(nil), c.args...), "--out", out)
	code, text := cli(t, args...)
	if code != exitHarnessError {
		t.Fatalf("%v: exit %d, want 2:\n%s", args, code, text)
	}
	for _, w := range c.want {
		if !strings.Contains(text, w) {
			t.Errorf("%v: output does not say %q:\n%s", args, w, text)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%v: --out %s was created (%v): a refused run writes nothing", args, out, err)
	}
	if after := redisServers(t); after != before {
		t.Errorf("%v: left processes running: before %q after %q", args, before, after)
	}
}

// A plan from flags passes the validation a plan from a scenario file
// gets: non-finite numbers, the load limits and the fault timeline's
// overlap rule are refused before anything starts, naming the flag.
func TestHostileRunFlagsExitTwoBeforeAnythingStarts(t *testing.T) {
	finite := "want a finite number of ops/s"
	for _, c := range []hostileCase{
		{"rate-nan", []string{"run", "--rate", "nan"}, []string{"--rate NaN: phases[0].rate", finite}},
		{"rate-inf", []string{"run", "--rate", "inf"}, []string{"--rate +Inf: phases[0].rate", finite}},
		{"mix-replay-nan", []string{"run", "--mix-replay", "nan"}, []string{"--mix-replay NaN: phases[0].mix.replay", "a share is between 0 and 1"}},
		{"slope-nan", []string{"run", "--shape", "linear", "--slope", "nan"}, []string{"--slope NaN: phases[0].slope", finite}},
		{"peak-nan", []string{"run", "--shape", "spike", "--peak", "nan"}, []string{"--peak NaN: phases[0].peak", finite}},
		{"duration-100000h", []string{"run", "--rate", "300", "--duration", "100000h"}, []string{"--duration 100000h0m0s: phases:", "at most 24h0m0s of load"}},
		{"rate-over-limit", []string{"run", "--rate", "2000000"}, []string{"--rate 2e+06", "at most 1000000 ops/s per phase", "--generator I/N"}},
		{"overlapping-faults", []string{"run", "--fault", "failover:mode=kill,at=1s", "--fault", "failover:at=1s"},
			[]string{"--fault failover:at=1s: faults[1]", "must not overlap", "move at or shorten for"}},
		{"fault-overlap-on-scenario", []string{"run", "failover-kill", "--fault", "failover:at=2s"}, []string{"--fault failover:at=2s", "must not overlap"}},
		{"unknown-path", []string{"run", "--path", "nosuch"}, []string{"--path nosuch: path", "valid paths: reference"}},
		{"shape-param-unused", []string{"run", "--slope", "5"}, []string{"--slope 5: phases[0].slope: applies to shape linear only"}},
		{"capacity-start-nan", []string{"capacity", "smoke", "--start", "nan"}, []string{"--start NaN", "positive rate of at most 1000000"}},
		{"capacity-factor-inf", []string{"capacity", "smoke", "--factor", "inf"}, []string{"--factor must be a finite number above 1"}},
		{"compare-variant-nan", []string{"compare", "smoke", "--variant", "a:phases.0.rate=nan", "--variant", "b:"}, []string{"variant a", "phases[0].rate", "want a number"}},
		// Counts a typo makes huge are capped with the reason, before
		// any process starts or any connection is dialled.
		{"masters-100000", []string{"run", "smoke", "--masters", "100000"}, []string{"--masters 100000", "at most 64 masters", "--cluster redis://"}},
		{"replicas-1000", []string{"run", "smoke", "--replicas", "1000"}, []string{"--replicas 1000", "5 replicas per master"}},
		{"concurrency-1e8", []string{"run", "--concurrency", "100000000", "--duration", "2s"}, []string{"concurrency 100000000: at most 10000", "--generator I/N"}},
		{"pool-size-1e8", []string{"run", "smoke", "--pool-size", "100000000"}, []string{"--pool-size 100000000", "up to 10000"}},
	} {
		t.Run(c.name, func(t *testing.T) { runHostile(t, c) })
	}
}

// Files the harness is given are read with a bound: a report.json or a
// script that is a symlink to /dev/zero, a FIFO as a scenario, a state
// file that is a device, a report.json over its limit are refused unread.
func TestHostileInputFilesAreRefusedUnread(t *testing.T) {
	dir := t.TempDir()
	zeroReport := filepath.Join(dir, "zero-report")
	mustMkdir(t, zeroReport)
	mustSymlink(t, "/dev/zero", filepath.Join(zeroReport, reports.ReportFile))
	bigReport := filepath.Join(dir, "big-report")
	mustMkdir(t, bigReport)
	f, err := os.Create(filepath.Join(bigReport, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the size is over the limit, no disk is used.
	if err := f.Truncate(reports.MaxReportBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	luaDir := filepath.Join(dir, "lua")
	mustMkdir(t, luaDir)
	emb := lua.Embedded()
	for name, sc := range map[string]*lua.Script{lua.TransitionFile: emb.Transition, lua.CompensateFile: emb.Compensate} {
		if err := os.WriteFile(filepath.Join(luaDir, name), []byte(sc.Source), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustSymlink(t, "/dev/zero", filepath.Join(luaDir, lua.ReserveFile))
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	notRegular := "is not a regular file (a character device)"
	for _, c := range []hostileCase{
		{"report-dev-zero", []string{"report", zeroReport}, []string{"report.json", notRegular, "give the run directory"}},
		{"report-over-limit", []string{"report", bigReport}, []string{"holds 268435457 bytes, over the limit of 268435456 bytes"}},
		{"lua-dir-dev-zero", []string{"run", "--lua-dir", luaDir}, []string{"reserve.lua", notRegular, "regular .lua files"}},
		{"scenario-fifo", []string{"run", fifo}, []string{"is not a regular file (a named pipe)", "give a scenario file"}},
		{"explore-state-dev-zero", []string{"explore", "--runs", "1", "--state", "/dev/zero"}, []string{"--state file /dev/zero", notRegular, "point --state at"}},
	} {
		t.Run(c.name, func(t *testing.T) { runHostile(t, c) })
	}
}

// --json prints exactly one JSON object on stdout for every outcome:
// usage errors cobra meets before the command runs included.
func TestJSONUsageErrorsPrintOneObject(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--json", "--nosuchflag"},
		{"run", "--json", "--rate", "abc"},
		{"run", "a", "b", "--json"},
		{"run", "--json", "--rate", "nan"},
		{"list", "--json", "--nosuchflag"},
		{"faults", "--json", "--nosuchflag"},
		{"catalogue", "--json", "--nosuchflag"},
		{"catalogue", "--json", "--repeat", "0"},
		{"version", "--json", "--nosuchflag"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		var v runJSON
		dec := json.NewDecoder(&stdout)
		if err := dec.Decode(&v); err != nil {
			t.Errorf("%v: stdout is not one JSON object (%v): %q", args, err, stdout.String())
			continue
		}
		if dec.More() {
			t.Errorf("%v: more than one JSON value on stdout", args)
		}
		if code != exitHarnessError || v.ExitCode != exitHarnessError || v.Verdict != "ERROR" || v.Error == "" {
			t.Errorf("%v: exit %d, object %+v; want exit 2 stated with its error", args, code, v)
		}
		if strings.Contains(args[1], "nosuchflag") && !strings.Contains(v.Error, "--help") {
			t.Errorf("%v: error %q does not name the fix", args, v.Error)
		}
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
