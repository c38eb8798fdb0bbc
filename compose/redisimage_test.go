package compose

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildHarness compiles the harness into a temp dir of t and returns the
// binary's path.
func buildHarness(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "seckill-harness")
	if out, err := exec.Command("go", "build", "-o", bin, repo).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestDockerImagePrecedence: the nodes' image is --redis-image (DockerOptions.Image)
// when given, else $SECKILL_REDIS_IMAGE, else redis:7.0; blank counts as unset.
func TestDockerImagePrecedence(t *testing.T) {
	for _, c := range []struct{ flag, env, want, source string }{
		{"", "", DefaultDockerImage, "default"},
		{"  ", "", DefaultDockerImage, "default"},
		{"", "local/redis:7.0.15", "local/redis:7.0.15", "env"},
		{" ", "local/redis:7.0.15", "local/redis:7.0.15", "env"},
		{"mine/redis:7", "local/redis:7.0.15", "mine/redis:7", "flag"},
		{"mine/redis:7", "", "mine/redis:7", "flag"},
	} {
		t.Setenv(RedisImageEnv, c.env)
		if got, src := ResolveDockerImage(c.flag); got != c.want || src != c.source {
			t.Errorf("flag %q env %q: %q from %s, want %q from %s", c.flag, c.env, got, src, c.want, c.source)
		}
	}
}

// TestDockerRedisImageFlag runs the harness binary with --cluster docker
// --redis-image set to the locally built Redis image while
// $SECKILL_REDIS_IMAGE names an image that exists nowhere: the run must
// start its nodes from the flag's image (the stand's log line names it)
// and pass. --redis-image with any other cluster is bad input (exit 2,
// naming --cluster docker), refused before anything starts.
func TestDockerRedisImageFlag(t *testing.T) {
	redisImage, _ := localImages(t)
	leavesDockerAsFound(t)
	bin := buildHarness(t)
	out := t.TempDir()
	ctx := bodyCtx(t)
	run := func(args ...string) (int, string) {
		cmd := dockerCommand(ctx, bin, args...)
		cmd.Env = append(os.Environ(), RedisImageEnv+"=seckill-harness-test/no-such-redis:never")
		text, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, string(text)
		case errors.As(err, &ee):
			return ee.ExitCode(), string(text)
		}
		t.Fatalf("%s: %v", bin, err)
		return -1, ""
	}
	code, text := run("run", "smoke", "--redis-image", "local/redis:x", "--out", out, "--progress", "off")
	if code != 2 || !strings.Contains(text, "--redis-image local/redis:x") || !strings.Contains(text, "add --cluster docker") {
		t.Errorf("--redis-image on a local cluster: exit %d\n%s\nwant exit 2 naming --redis-image and --cluster docker", code, text)
	}
	t0 := time.Now()
	code, text = run("run", "smoke", "--cluster", "docker", "--redis-image", redisImage, "--set", "assertions.slo=", "--out", out, "--progress", "off")
	t.Logf("run smoke --cluster docker --redis-image %s: exit %d in %v\n%s", redisImage, code, time.Since(t0).Round(time.Millisecond), lastLines(text, 3))
	want := "(docker, image " + redisImage + ") on 127.0.0.1, ready in "
	i := strings.Index(text, want)
	if i < 0 {
		t.Fatalf("the stand's log does not name the flag's image %q:\n%s", want, lastLines(text, 30))
	}
	t.Logf("provider start: %s", strings.SplitN(text[i+len(want):], "\n", 2)[0])
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, lastLines(text, 30))
	}
}
