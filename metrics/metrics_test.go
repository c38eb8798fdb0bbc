package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are served on a loopback address only; anything else is refused
// with the fix named.
func TestCheckAddrLoopbackOnly(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:9464", "127.0.0.1:0", "[::1]:9464", "localhost:9464"} {
		if err := CheckAddr(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for addr, want := range map[string]string{"0.0.0.0:9464": "use 127.0.0.1:9464", ":9464": "loopback", "10.0.0.1:80": "loopback",
		"127.0.0.1": "HOST:PORT", "127.0.0.1:http": "not a number"} {
		err := CheckAddr(addr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", addr, err, want)
		}
	}
}

// Every metric the Grafana dashboard in docs/ queries is one the harness
// serves (a renamed metric breaks this test, not the dashboard silently).
func TestDashboardQueriesServedMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	l := newLive()
	served := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() { l.reg.Describe(ch); close(ch) }()
	nameRe := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := nameRe.FindStringSubmatch(d.String()); m != nil {
			served[m[1]] = true
		}
	}
	ident := regexp.MustCompile(`\b(seckill|reserve|redis|send|stock|evicted|cluster)_[a-z_]+\b`)
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range ident.FindAllString(tg.Expr, -1) {
				n++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
				if !served[name] && !served[base] {
					t.Errorf("panel %q queries %s, which the harness does not serve", p.Title, name)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d metric names found in the dashboard", n)
	}
}
