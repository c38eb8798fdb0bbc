package buildinfo

import (
	"context"
	"os/exec"
	"runtime/debug"
	"seckill-harness/internal/clustertest"
	"strings"
	"testing"
)

func TestFromBuildInfoReadsTheVCSStampAndGoRedis(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "seckill-harness", Version: "v1.2.3"},
		Deps: []*debug.Module{{Path: "github.com/other/mod", Version: "v0.1.0"}, {Path: GoRedisModule, Version: "v9.7.0"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"}}}
	in := fromBuildInfo(bi)
	want := Info{Version: "v1.2.3", Revision: "0123456789abcdef", Time: "2026-01-02T03:04:05Z", Modified: true, GoVersion: "go1.99.1", GoRedis: "v9.7.0"}
	if in != want {
		t.Fatalf("got %+v, want %+v", in, want)
	}
	bi.Deps[1].Replace = &debug.Module{Path: "../fork", Version: "v9.7.1"}
	if got := fromBuildInfo(bi).GoRedis; got != "v9.7.1 (replaces v9.7.0)" {
		t.Fatalf("replaced go-redis: %q", got)
	}
	text := Text(want, LocalRedis{Error: "redis-server not found on PATH"})
	for _, s := range []string{"seckill-harness v1.2.3", "0123456789abcdef (modified", "go-redis:     v9.7.0", "none: redis-server not found"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
}

func TestFindLocalRedis(t *testing.T) {
	clustertest.Need(t)
	if r := FindLocalRedis(context.Background(), "no-such-redis-server-binary"); r.Error == "" || r.Version != "" {
		t.Fatalf("missing binary: %+v", r)
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on PATH")
	}
	out, _ := exec.Command(path, "--version").Output()
	r := FindLocalRedis(context.Background(), "")
	if r.Path != path || r.Version == "" || !strings.Contains(string(out), " v="+r.Version+" ") {
		t.Fatalf("%+v, but redis-server --version says %q", r, out)
	}
}
