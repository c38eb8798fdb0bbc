package planner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --service puts the service in place with its mapping's client policy on
// every phase (the per-request deadline, twice with a query endpoint;
// the re-sends of the same request), report.json's system_under_test of
// kind service, and a mapping without release: sends the release share
// as fresh reserves, saying so.
func TestServicePlan(t *testing.T) {
	dir := t.TempDir()
	mapping := filepath.Join(dir, "svc.yaml")
	if err := os.WriteFile(mapping, []byte("name: shop\ntimeout: 300ms\nretry: {resends: 2, backoff: 10ms}\nrelease: ~\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(context.Background(), "smoke", nil, nil, Inputs{Overrides: Overrides{Service: "http://127.0.0.1:18080", ServiceMapping: mapping}})
	if err != nil {
		t.Fatal(err)
	}
	sys := p.SystemUnderTest
	if p.Path == nil || p.PathName != "service:shop" || sys == nil || sys.Kind != "service" || sys.URL != "http://127.0.0.1:18080" || sys.Mapping != mapping {
		t.Fatalf("plan's system: %q %+v", p.PathName, sys)
	}
	for _, ph := range p.Phases {
		c := ph.Config
		if c.CallTimeout != 600*time.Millisecond || c.RetrySends != 2 || c.RetryBackoff != 10*time.Millisecond || c.Mix.Release != 0 {
			t.Errorf("phase %s: timeout %s, %d re-sends %s apart, release %g; want the mapping's 2×300ms, 2, 10ms, no release", ph.Name, c.CallTimeout, c.RetrySends, c.RetryBackoff, c.Mix.Release)
		}
	}
	notes := strings.Join(sys.Notes, "\n")
	for _, w := range []string{"no release endpoint", "re-sent at most 2 times", "state: none"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes %q lack %q", notes, w)
		}
	}
}

// Bad --service input is refused before anything starts, naming the
// flag or the mapping's file:line and the fix.
func TestServiceBadInput(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("timeout: 1s\nstate: shared\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:18080"
	cases := []struct {
		name string
		in   Inputs
		want []string
	}{
		{"not a URL", Inputs{Overrides: Overrides{Service: "127.0.0.1:8080"}}, []string{"--service", "base URL"}},
		{"missing mapping", Inputs{Overrides: Overrides{Service: url, ServiceMapping: filepath.Join(dir, "nope.yaml")}}, []string{"nope.yaml", "docs/SERVICE.md"}},
		{"invalid mapping", Inputs{Overrides: Overrides{Service: url, ServiceMapping: broken}}, []string{broken + ":2", "state"}},
		{"mapping without service", Inputs{Overrides: Overrides{ServiceMapping: broken}}, []string{"--service-mapping", "without --service"}},
		{"with --adapter", Inputs{Overrides: Overrides{Service: url, Adapter: referenceAdapter}}, []string{"one system under test"}},
		{"with --lua-dir", Inputs{LuaDir: dir, Overrides: Overrides{Service: url}}, []string{"--lua-dir", "drop one"}},
	}
	for _, c := range cases {
		_, err := Load(context.Background(), "smoke", nil, nil, c.in)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to say %q", c.name, err, w)
			}
		}
	}
}
