// Package clustertest is the shared TestMain fixture of the packages whose
// tests need a real Redis Cluster: one local cluster of redis-server
// processes (compose.Start, 3 masters × 1 replica unless told otherwise) is
// started before the package's tests, optionally with an embedded toxiproxy
// in front of every node, and stopped after them.
//
// Use it as
//
//	func TestMain(m *testing.M) {
//		os.Exit(clustertest.Main(m, clustertest.Config{Package: "mypkg"}, func(f *clustertest.Fixture) (func(), error) {
//			client := … f.Cluster.Addrs() …
//			return func() { _ = client.Close() }, nil
//		}))
//	}
//
// Tests come in two tiers. The unit tier (go test -short, make test-unit)
// starts nothing: Main runs the tests without a cluster, setup is not
// called, and every test that needs a real part (redis-server, PostgreSQL,
// Docker, root) calls Need (or a package helper that does) first and is
// skipped. The integration tier (make test) runs everything.
package clustertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"seckill-harness/compose"
)

// StartTimeout bounds the start of the package's cluster.
const StartTimeout = 60 * time.Second

// Config says what a package's tests stand on.
type Config struct {
	// Package names the package in the lines printed when the cluster
	// cannot be started.
	Package string
	// Proxies puts an embedded toxiproxy in front of every node
	// (Fixture.Proxies).
	Proxies bool
	// Options of compose.Start (the zero value: 3 masters × 1 replica).
	Options compose.Options
	// Leaves, when not empty, says why the package's tests may leave keys
	// on the shared cluster; otherwise Main fails the suite (exit 1) when
	// a key is left after the tests passed.
	Leaves string
}

// Fixture is what Main hands to the package's setup.
type Fixture struct {
	Cluster *compose.LocalCluster
	Proxies *compose.Proxies // nil unless Config.Proxies
}

// Main starts the cluster (and the proxies), calls setup, runs the tests,
// calls the teardown setup returned (if not nil), closes the proxies and
// the cluster, and returns the exit code for os.Exit. When redis-server is
// not installed, the cluster does not start or setup fails (its error
// should say what is missing and how to get it) it prints why and returns
// 2 without running any test. In the unit tier (-short) it starts nothing,
// calls no setup and runs the tests: those that need the cluster skip
// (Need).
func Main(m *testing.M, cfg Config, setup func(f *Fixture) (teardown func(), err error)) int {
	if Short() {
		return m.Run()
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintf(os.Stderr, "%s tests need redis-server: apt-get install -y redis-server (make test does it)\n", cfg.Package)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	c, err := compose.Start(ctx, cfg.Options)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s tests need a local Redis Cluster: %v\n", cfg.Package, err)
		return 2
	}
	defer closeLogged(cfg.Package+" cluster", c.Close)
	f := &Fixture{Cluster: c}
	if cfg.Proxies {
		px, err := compose.NewProxies(c)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s tests: proxies: %v\n", cfg.Package, err)
			return 2
		}
		defer closeLogged(cfg.Package+" proxies", px.Close)
		f.Proxies = px
	}
	if setup != nil {
		teardown, err := setup(f)
		if teardown != nil {
			defer teardown()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s tests: %v\n", cfg.Package, err)
			return 2
		}
	}
	code := m.Run()
	if code == 0 && cfg.Leaves == "" {
		// Every test removes what it created before it returns: the
		// shared cluster ends as empty as it began.
		keys, err := leftKeys(c, 10)
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "%s tests: reading the shared cluster's keys after the tests: %v\n", cfg.Package, err)
			code = 1
		case len(keys) > 0:
			fmt.Fprintf(os.Stderr, "%s tests left keys on the shared cluster (a test's cleanup missed them), e.g. %q\n", cfg.Package, keys)
			code = 1
		}
	}
	return code
}

func closeLogged(what string, closeFn func() error) {
	if err := closeFn(); err != nil {
		fmt.Fprintf(os.Stderr, "closing the %s: %v\n", what, err)
	}
}
