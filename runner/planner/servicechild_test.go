package planner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/runner"
)

// --service-cmd: the child's command and readiness reach the plan; without
// --service the child gets a free 127.0.0.1 address that is also the HTTP
// client's (the service is the system under test); with --service it
// listens where the URL says; a service fault needs a service child, and
// a readiness URL must be http(s) with a command, each refused naming the
// flag.
func TestServiceChildFlags(t *testing.T) {
	p, err := Build(flagScenario(runner.DefaultConfig(), nil), Inputs{Overrides: Overrides{ServiceCmd: "exec my-service", Faults: []string{"service-kill:at=1s,for=1s"}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Service.Cmd != "exec my-service" || !strings.HasPrefix(p.Service.Listen, "127.0.0.1:") || p.SystemUnderTest == nil ||
		p.SystemUnderTest.URL != "http://"+p.Service.Listen || !strings.HasPrefix(p.PathName, "service:") {
		t.Fatalf("plan: cmd %q listen %q system %+v path %q: want the child on a free loopback port and the HTTP client sending to it", p.Service.Cmd, p.Service.Listen, p.SystemUnderTest, p.PathName)
	}
	p, err = Build(flagScenario(runner.DefaultConfig(), nil), Inputs{Overrides: Overrides{ServiceCmd: "x", ServiceReady: "http://127.0.0.1:9/ready", Service: "http://127.0.0.1:18080"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Service.Listen != "127.0.0.1:18080" || p.Service.Ready != "http://127.0.0.1:9/ready" {
		t.Fatalf("listen %q ready %q: want the --service URL's address and the --service-ready URL", p.Service.Listen, p.Service.Ready)
	}
	mapping := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mapping, []byte("name: ref\nstate: reference\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = Build(flagScenario(runner.DefaultConfig(), nil), Inputs{Overrides: Overrides{ServiceCmd: "x", ServiceMapping: mapping}})
	if err != nil {
		t.Fatalf("--service-cmd with --service-mapping: %v", err)
	}
	if p.SystemUnderTest == nil || p.SystemUnderTest.Name != "ref" || p.SystemUnderTest.URL != "http://"+p.Service.Listen {
		t.Fatalf("--service-cmd with --service-mapping: system %+v, want the mapping's, sending to the child at %s", p.SystemUnderTest, p.Service.Listen)
	}
	for _, c := range []struct {
		over Overrides
		want string
	}{
		{Overrides{Faults: []string{"service-pause"}}, "service-pause freezes the service's process group, but this scenario starts no service"},
		{Overrides{ServiceCmd: "x", ServiceReady: "ftp://h/"}, `--service-ready ftp://h/: service_ready: "ftp://h/": want an http:// URL`},
		{Overrides{ServiceReady: "http://127.0.0.1:9/"}, "service_ready: without service_cmd"},
		{Overrides{ServiceMapping: mapping}, "without --service: give the service's URL (or --service-cmd to start it)"},
	} {
		_, err := Build(flagScenario(runner.DefaultConfig(), nil), Inputs{Overrides: c.over})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.over, err, c.want)
		}
	}
}
