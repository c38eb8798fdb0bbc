package servers

import "testing"

// Served counts what a master ran for the clients of the path under
// test: every command of INFO commandstats but the harness's own upkeep
// (its sampler's INFO and CLUSTER reads, PINGs, CLIENT, CONFIG, SCRIPT
// LOAD, replication, MIGRATE), subcommands included.
func TestDataCommandsLeaveTheHarnessUpkeepOut(t *testing.T) {
	fields := parseInfo("# Commandstats\r\n" +
		"cmdstat_evalsha:calls=1200,usec=9000,usec_per_call=7.5,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hget:calls=30,usec=40,usec_per_call=1.3,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=500,usec=900,usec_per_call=1.8,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_cluster|nodes:calls=70,usec=900,usec_per_call=12,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_ping:calls=9,usec=9,usec_per_call=1,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_script|load:calls=3,usec=30,usec_per_call=10,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_migrate:calls=4,usec=30,usec_per_call=10,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|setinfo:calls=6,usec=6,usec_per_call=1,rejected_calls=0,failed_calls=0\r\n")
	if got := dataCommands(fields); got != 1230 {
		t.Fatalf("dataCommands = %d, want 1230 (evalsha 1200 + hget 30)", got)
	}
}
