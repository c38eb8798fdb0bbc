package servers

import (
	"reflect"
	"strings"
	"testing"

	"seckill-harness/reports"
)

// Redis 7.0's INFO commandstats, as the server writes it.
const commandstats = "# Commandstats\r\n" +
	"cmdstat_evalsha:calls=120,usec=2400,usec_per_call=20.00,rejected_calls=1,failed_calls=3\r\n" +
	"cmdstat_eval:calls=4,usec=400,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_get:calls=9,usec=9,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_script|kill:calls=1,usec=5,usec_per_call=5.00,rejected_calls=0,failed_calls=1\r\n"

func TestParseCommandStatsKeepsTheScripts(t *testing.T) {
	got := parseCommandStats(commandstats)
	want := map[string]reports.CommandStat{
		"evalsha":     {Command: "evalsha", Calls: 120, Usec: 2400, RejectedCall: 1, FailedCalls: 3},
		"eval":        {Command: "eval", Calls: 4, Usec: 400},
		"script|kill": {Command: "script|kill", Calls: 1, Usec: 5, FailedCalls: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// The run's calls are after minus before, summed over the masters; a
// master restarted during the run (counters back to zero) counts from zero.
func TestScriptDeltaIsTheRunsOnly(t *testing.T) {
	before := map[string]map[string]reports.CommandStat{
		"m1": {"evalsha": {Calls: 100, Usec: 1000, FailedCalls: 1}},
		"m2": {"evalsha": {Calls: 500, Usec: 5000}},
	}
	after := map[string]map[string]reports.CommandStat{
		"m1": {"evalsha": {Calls: 160, Usec: 1900, FailedCalls: 2}},
		"m2": {"evalsha": {Calls: 40, Usec: 600}}, // restarted
		"m3": {"eval": {Calls: 0}},
	}
	got := scriptDelta(before, after)
	want := []reports.CommandStat{{Command: "evalsha", Calls: 100, Usec: 1500, UsecPerCall: 15, FailedCalls: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// A slow-log entry keeps its first 4 arguments, each cut to 80 bytes, and
// says how many it left out.
func TestShortArgs(t *testing.T) {
	long := strings.Repeat("x", 100)
	got := shortArgs([]string{"evalsha", long, "2", "k1", "k2", "a1"})
	want := []string{"evalsha", strings.Repeat("x", 80) + "…", "2", "k1", "… (+2 args)"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := shortArgs([]string{"get", "k"}); !reflect.DeepEqual(got, []string{"get", "k"}) {
		t.Fatalf("short entry changed: %q", got)
	}
}

// A replica whose master did not answer this round (paused, dead: the
// round before a failover) still names its master, from its own INFO
// replication; the failover that follows is attributed to that master.
// With only the master's view the name was lost in exactly that round.
func TestReplicaNamesItsMasterWhenTheMasterIsSilent(t *testing.T) {
	s := &Sampler{nodes: map[string]*nodeSeries{}}
	in := nodeInfo{addr: "127.0.0.1:7004", fields: parseInfo("# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:7001\r\nmaster_link_status:down\r\n")}
	s.record(in, nil)
	got := s.nodes[in.addr].samples[0].s
	if got.Role != "replica" || got.Master != "127.0.0.1:7001" {
		t.Fatalf("sample %+v: want a replica of 127.0.0.1:7001", got)
	}
}
