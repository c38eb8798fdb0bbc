package compose

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestImageRunsSmoke builds the harness image with `make image` (the
// Dockerfile at the repo root: a static binary in a scratch image) and runs
// it with --network host against a cluster it did not start (a local
// redis-server cluster on 127.0.0.1): `docker run --rm --network host
// IMAGE run smoke --cluster redis://…` must exit 0 and write a passing
// report.json into the mounted --out directory.
func TestImageRunsSmoke(t *testing.T) {
	skipWithoutRedis(t)
	dockerEngine(t)
	leavesDockerAsFound(t)
	const image = "seckill-harness:test"
	t0 := time.Now()
	mk := exec.Command("make", "-C", "..", "image", "IMAGE="+image)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, lastLines(string(out), 30))
	}
	t.Logf("make image: %v", time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join("..", "bin", "image")) })

	ctx := ctxT(t, 3*time.Minute)
	c, err := Start(ctx, Options{Logf: tlogf(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })

	out := t.TempDir()
	args := []string{"run", "--rm", "--network", "host", "-v", out + ":/out", image,
		"run", "smoke", "--cluster", "redis://" + c.Addrs()[0], "--out", "/out", "--progress", "off"}
	t0 = time.Now()
	b, err := exec.Command("docker", args...).CombinedOutput()
	t.Logf("docker %s (%v):\n%s", strings.Join(args, " "), time.Since(t0).Round(time.Millisecond), lastLines(string(b), 6))
	if err != nil {
		t.Fatalf("the harness image: %v", err)
	}
	rep, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep), `"passed": true`) {
		t.Errorf("report.json written by the image does not pass:\n%s", lastLines(string(rep), 20))
	}
}
