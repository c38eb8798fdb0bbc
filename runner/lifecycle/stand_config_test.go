package lifecycle

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/compose"
)

// The topology's redis.conf settings become redis-server arguments for a
// docker cluster's containers, in order.
func TestRedisConfigArgs(t *testing.T) {
	got := redisConfigArgs([]string{"min-replicas-to-write 1", "min-replicas-max-lag 1", "appendfsync always"})
	want := []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "1", "--appendfsync", "always"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A cluster the harness did not start is refused with such settings,
// before anything is dialled: the error names each setting as the
// scenario spells it, the CONFIG SET that would apply it, and no password.
func TestOutsideClusterRefusesRedisConfig(t *testing.T) {
	spec := ClusterSpec{Spec: "redis://ops:s3cret@127.0.0.1:1", Masters: 3, Replicas: 1,
		ExtraConfig: []string{"min-replicas-to-write 1", "min-replicas-max-lag 1"}}
	_, err := OpenStand(context.Background(), discardLogger, spec, 8, false)
	if err == nil {
		t.Fatal("an outside cluster was accepted with redis.conf settings")
	}
	for _, want := range []string{"topology.min_replicas_to_write", "topology.min_replicas_max_lag", "CONFIG SET min-replicas-to-write 1", "yourself"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows the password: %v", err)
	}
	spec.ExtraConfig = nil
	if _, err := OpenStand(context.Background(), discardLogger, spec, 8, false); err == nil || strings.Contains(err.Error(), "yourself") {
		t.Errorf("without settings: %v, want the ordinary connection failure", err)
	}
}

// A docker cluster's containers start with the topology's redis.conf
// settings on their command line: every node answers them in CONFIG GET.
// Needs a Docker engine and a local Redis image in SECKILL_REDIS_IMAGE
// (compose/testdata/build-images.sh builds one; the engine is not started
// here).
func TestDockerClusterGetsRedisConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six containers")
	}
	if os.Getenv(compose.RedisImageEnv) == "" {
		t.Skipf("%s is not set: build a local image with compose/testdata/build-images.sh redis and set it", compose.RedisImageEnv)
	}
	ctx := context.Background()
	if err := compose.DockerAvailable(ctx); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	spec := ClusterSpec{Spec: "docker", Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second,
		ExtraConfig: []string{"min-replicas-to-write 1", "min-replicas-max-lag 7"}}
	st, err := OpenStand(ctx, discardLogger, spec, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, addr := range st.Cluster.Addrs() {
		admin, err := st.Cluster.Admin(addr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := admin.ConfigGet(ctx, "min-replicas-*").Result()
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if got["min-replicas-to-write"] != "1" || got["min-replicas-max-lag"] != "7" {
			t.Errorf("%s: CONFIG GET min-replicas-* = %v, want 1 and 7", addr, got)
		}
	}
}
