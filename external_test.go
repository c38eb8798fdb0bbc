package main

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/compose/outsidetest"
	"seckill-harness/internal/clustertest"
)

// keysOf counts the keys of every master of an outside cluster (DBSIZE: a
// count, not a scan of anybody's keys).
func keysOf(t *testing.T, addrs []string, password string) int64 {
	t.Helper()
	var n int64
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, Password: password})
		role, _ := c.Do(context.Background(), "ROLE").Slice()
		if len(role) > 0 && role[0] == "master" {
			k, err := c.DBSize(context.Background()).Result()
			if err != nil {
				t.Fatal(err)
			}
			n += k
		}
		c.Close()
	}
	return n
}

// A cluster started by somebody else (redis-server + redis-cli --cluster
// create, with a password): a run passes and leaves none of its keys behind;
// a destructive fault without --allow-destructive exits 2 and changes
// nothing; a process-level fault is refused even with it.
func TestRunAgainstAClusterStartedOutsideTheHarness(t *testing.T) {
	clustertest.Need(t)
	outsidetest.Skip(t)
	oc := outsidetest.Start(t, outsidetest.Options{Masters: 3, Replicas: 1, Password: "s3cret-pw"})
	t.Setenv(compose.EnvRedisPassword, "s3cret-pw")
	// A foreign key that must survive the run.
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: oc.Addrs, Password: "s3cret-pw"})
	defer c.Close()
	if err := c.Set(context.Background(), "someone-elses-key", "keep me", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := keysOf(t, oc.Addrs, "s3cret-pw")
	spec := "redis://" + strings.Join(oc.Addrs, ",")

	out := t.TempDir()
	code, text := cli(t, "run", "testdata/quick.yaml", "--cluster", spec, "--out", out, "--progress", "off")
	if code != exitPass {
		t.Fatalf("run against the outside cluster: exit %d\n%s", code, text)
	}
	if strings.Contains(text, "s3cret-pw") {
		t.Fatal("the password was printed")
	}
	if !strings.Contains(text, "teardown: removed the") {
		t.Fatalf("no teardown reported:\n%s", text)
	}
	if after := keysOf(t, oc.Addrs, "s3cret-pw"); after != before {
		t.Fatalf("%d keys before the run, %d after: the run left keys behind", before, after)
	}
	if v, _ := c.Get(context.Background(), "someone-elses-key").Result(); v != "keep me" {
		t.Fatal("a foreign key was touched")
	}

	owners := func() string {
		n, _ := c.ClusterNodes(context.Background()).Result()
		var masters []string
		for _, l := range strings.Split(n, "\n") {
			if f := strings.Fields(l); len(f) > 2 && strings.Contains(f[2], "master") {
				masters = append(masters, f[1])
			}
		}
		sort.Strings(masters)
		return strings.Join(masters, ",")
	}
	was := owners()
	code, text = cli(t, "run", "--cluster", spec, "--duration", "3s", "--rate", "200", "--stock", "50", "--users", "500",
		"--fault", "failover:mode=graceful,at=1s", "--out", t.TempDir(), "--progress", "off")
	if code != exitHarnessError || !strings.Contains(text, "--allow-destructive") {
		t.Fatalf("destructive fault on a foreign cluster: exit %d\n%s", code, text)
	}
	code, text = cli(t, "run", "--cluster", spec, "--allow-destructive", "--duration", "3s", "--rate", "200", "--stock", "50",
		"--users", "500", "--fault", "failover:mode=kill,at=1s", "--out", t.TempDir(), "--progress", "off")
	if code != exitHarnessError || !strings.Contains(text, "--cluster local") {
		t.Fatalf("process-level fault on a foreign cluster: exit %d\n%s", code, text)
	}
	if now := owners(); now != was {
		t.Fatalf("masters changed from %s to %s", was, now)
	}
	if after := keysOf(t, oc.Addrs, "s3cret-pw"); after != before {
		t.Fatalf("refused runs left %d keys (before: %d)", after, before)
	}
}
