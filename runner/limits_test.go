package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// Fields the history stores narrowed are validated where the
// configuration is: a value past the width is refused, naming it.
func TestConfigRefusesValuesTheHistoryCannotHold(t *testing.T) {
	for _, c := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Users = MaxUsers + 1 }, "users 4294967297: at most 4294967296"},
		{func(c *Config) { c.RetrySends = MaxRetrySends + 1 }, "retry sends 255: at most 254"},
		{func(c *Config) { c.MaxOps = MaxOpsPerRun + 1 }, "max ops 4294967297: at most 4294967296"},
	} {
		cfg := DefaultConfig()
		c.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	cfg := DefaultConfig()
	cfg.Users, cfg.RetrySends = MaxUsers, MaxRetrySends
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the limits themselves: %v", err)
	}
}

// The engine refuses an activity whose bucket indexes would not fit the
// history's 16 bits (it would fold buckets together and report false
// oversells), before sending anything.
func TestRunRefusesMoreBucketsThanTheHistoryStores(t *testing.T) {
	clustertest.Need(t)
	a := lua.NewActivity("toomany", "sku1", 70_000, 70_000, time.Hour)
	cfg := DefaultConfig()
	cfg.Duration = 100 * time.Millisecond
	_, err := Run(context.Background(), cfg, Target{Store: testStore, Activity: a}.Sale(), Target{Store: testStore, Activity: a}.System())
	if err == nil || !strings.Contains(err.Error(), "70000 buckets: at most 65536") {
		t.Fatalf("70,000 buckets: %v", err)
	}
}
