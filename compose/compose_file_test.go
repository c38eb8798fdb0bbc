package compose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/goccy/go-yaml"
)

// TestDockerComposeFile loads compose/docker-compose.yml with the Compose
// specification's own loader (schema validation, interpolation, merge keys,
// normalisation) and checks the stack the README promises: six redis 7.0
// nodes on the host network at 127.0.0.1:7001..7006 announcing 127.0.0.1,
// health-checked; a one-shot init running redis-cli --cluster create with
// one replica per master after every node is healthy; a toxiproxy server
// whose API is on 127.0.0.1:8474.
func TestDockerComposeFile(t *testing.T) {
	path, err := filepath.Abs("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("seckill", true) })
	if err != nil {
		t.Fatalf("compose-go rejects docker-compose.yml: %v", err)
	}
	if p.Name != "seckill" {
		t.Errorf("project name %q", p.Name)
	}
	var nodes []string
	for name := range p.Services {
		if strings.HasPrefix(name, "redis-") {
			nodes = append(nodes, name)
		}
	}
	slices.Sort(nodes)
	want := []string{"redis-7001", "redis-7002", "redis-7003", "redis-7004", "redis-7005", "redis-7006"}
	if !slices.Equal(nodes, want) {
		t.Fatalf("redis services %v, want %v", nodes, want)
	}
	for _, name := range nodes {
		s := p.Services[name]
		port := strings.TrimPrefix(name, "redis-")
		if s.Image != "redis:7.0" {
			t.Errorf("%s: image %q", name, s.Image)
		}
		if s.NetworkMode != "host" {
			t.Errorf("%s: network_mode %q, want host (announced addresses must work for host, nodes and toxiproxy)", name, s.NetworkMode)
		}
		if v := s.Environment["REDIS_PORT"]; v == nil || *v != port {
			t.Errorf("%s: REDIS_PORT %v", name, s.Environment["REDIS_PORT"])
		}
		cmd := strings.Join(s.Command, " ")
		for _, w := range []string{"--port ${REDIS_PORT}", "--cluster-enabled yes", "--cluster-announce-ip 127.0.0.1",
			"--bind 127.0.0.1", "--enable-debug-command local", "--cluster-node-timeout 2000"} {
			if !strings.Contains(cmd, w) {
				t.Errorf("%s: command lacks %q: %s", name, w, cmd)
			}
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 || !strings.Contains(strings.Join(s.HealthCheck.Test, " "), "ping") {
			t.Errorf("%s: no PING health check", name)
		}
	}
	ini, ok := p.Services["cluster-init"]
	if !ok {
		t.Fatal("no cluster-init service")
	}
	initCmd := strings.Join(ini.Command, " ")
	for _, w := range []string{"redis-cli --cluster create", "--cluster-replicas 1", "--cluster-yes", "cluster_state:ok"} {
		if !strings.Contains(initCmd, w) {
			t.Errorf("cluster-init command lacks %q: %s", w, initCmd)
		}
	}
	for _, port := range []string{"7001", "7002", "7003", "7004", "7005", "7006"} {
		if !strings.Contains(initCmd, "127.0.0.1:"+port) {
			t.Errorf("cluster-init does not name 127.0.0.1:%s", port)
		}
		dep, ok := ini.DependsOn["redis-"+port]
		if !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("cluster-init does not wait for redis-%s to be healthy: %+v", port, dep)
		}
	}
	if ini.NetworkMode != "host" {
		t.Errorf("cluster-init network_mode %q", ini.NetworkMode)
	}
	tp, ok := p.Services["toxiproxy"]
	if !ok {
		t.Fatal("no toxiproxy service")
	}
	if !strings.HasPrefix(tp.Image, "ghcr.io/shopify/toxiproxy:") || tp.NetworkMode != "host" {
		t.Errorf("toxiproxy: image %q network_mode %q", tp.Image, tp.NetworkMode)
	}
	if c := strings.Join(tp.Command, " "); !strings.Contains(c, "-port=8474") || !strings.Contains(c, "-host=127.0.0.1") {
		t.Errorf("toxiproxy command %q: want the API on 127.0.0.1:8474", c)
	}

	// The README snippet names this file and the flags the stack is for.
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"docker compose -p seckill -f compose/docker-compose.yml up -d",
		"seckill-harness run smoke --cluster redis://127.0.0.1:7001 --toxiproxy http://127.0.0.1:8474 --allow-destructive"} {
		if !strings.Contains(string(readme), w) {
			t.Errorf("compose/README.md lacks %q", w)
		}
	}
}

// TestNightlyWorkflow parses .github/workflows/nightly-chaos.yml and checks
// that it installs redis-server, sets up Go 1.26, builds, runs the nightly
// suite into out/nightly with its exit code as the step's, and uploads
// out/** whatever happened.
func TestNightlyWorkflow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", ".github", "workflows", "nightly-chaos.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// Strict: an unknown (misspelt) key anywhere is an error.
	type step struct {
		Name string            `yaml:"name"`
		ID   string            `yaml:"id"`
		Uses string            `yaml:"uses"`
		Run  string            `yaml:"run"`
		If   string            `yaml:"if"`
		Env  map[string]string `yaml:"env"`
		With map[string]any    `yaml:"with"`
	}
	var wf struct {
		Name        string            `yaml:"name"`
		On          map[string]any    `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Concurrency struct {
			Group            string `yaml:"group"`
			CancelInProgress bool   `yaml:"cancel-in-progress"`
		} `yaml:"concurrency"`
		Jobs map[string]struct {
			Name    string            `yaml:"name"`
			RunsOn  string            `yaml:"runs-on"`
			Timeout int               `yaml:"timeout-minutes"`
			Env     map[string]string `yaml:"env"`
			Steps   []step            `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.UnmarshalWithOptions(b, &wf, yaml.Strict()); err != nil {
		t.Fatalf("nightly-chaos.yml: %v", err)
	}
	if wf.Name == "" || wf.On["schedule"] == nil {
		t.Errorf("workflow %q has no schedule: %v", wf.Name, wf.On)
	}
	if _, ok := wf.On["workflow_dispatch"]; !ok {
		t.Error("no workflow_dispatch trigger (manual runs)")
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("%d jobs", len(wf.Jobs))
	}
	for name, job := range wf.Jobs {
		if !strings.HasPrefix(job.RunsOn, "ubuntu") || job.Timeout <= 0 {
			t.Errorf("job %s: runs-on %q timeout %d", name, job.RunsOn, job.Timeout)
		}
		find := func(pred func(step) bool) (int, step) {
			for i, s := range job.Steps {
				if pred(s) {
					return i, s
				}
			}
			return -1, step{}
		}
		iRedis, _ := find(func(s step) bool {
			return strings.Contains(s.Run, "apt-get install") && strings.Contains(s.Run, "redis-server")
		})
		iGo, goStep := find(func(s step) bool { return strings.HasPrefix(s.Uses, "actions/setup-go@") })
		iBuild, _ := find(func(s step) bool { return strings.Contains(s.Run, "go build") })
		iRun, runStep := find(func(s step) bool { return strings.Contains(s.Run, "seckill-harness run nightly") })
		iUp, up := find(func(s step) bool { return strings.HasPrefix(s.Uses, "actions/upload-artifact@") })
		if iRedis < 0 || iGo < 0 || iBuild < 0 || iRun < 0 || iUp < 0 {
			t.Fatalf("missing steps: redis %d, setup-go %d, build %d, run %d, upload %d", iRedis, iGo, iBuild, iRun, iUp)
		}
		if !(iRedis < iRun && iGo < iBuild && iBuild < iRun && iRun < iUp) {
			t.Errorf("step order: redis %d, setup-go %d, build %d, run %d, upload %d", iRedis, iGo, iBuild, iRun, iUp)
		}
		if fmt.Sprint(goStep.With["go-version"]) != "1.26" {
			t.Errorf("setup-go go-version %q", goStep.With["go-version"])
		}
		if !strings.Contains(runStep.Run, `--out "$OUT"`) || job.Env["OUT"] != "out/nightly" {
			t.Errorf("the suite does not write to out/nightly: %q (OUT=%q)", runStep.Run, job.Env["OUT"])
		}
		if !strings.Contains(runStep.Run, `exit "$code"`) {
			t.Error("the run step does not fail with the harness's exit code")
		}
		if runStep.If != "" {
			t.Errorf("the run step is conditional: %q", runStep.If)
		}
		if up.If != "always()" || fmt.Sprint(up.With["path"]) != "out/**" {
			t.Errorf("upload: if %q path %q, want always() and out/**", up.If, up.With["path"])
		}
	}
}
