package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestImageRunsSmokeAgainstComposeCluster builds the harness image with
// `make image` (under a test tag, in a temp build context), brings the
// compose cluster up with README.md's own lines (up, then the init's log),
// and runs the image on the host network against it:
//
//	docker run --rm --network host -v DIR:/out IMAGE run smoke --cluster redis://127.0.0.1:7001 --set assertions.slo= --out /out
//
// (--set assertions.slo= drops smoke's latency and throughput SLO, as
// README's own smoke line does: on a loaded test machine p99 is not what
// this test is about; every invariant is still checked.) The reference
// path must pass (exit 0, report.json "passed": true); the
// same image with a known-bad path (--path lua-no-user-marker: a user gets
// a second reservation) must fail (exit 1, "passed": false, I4 failed), so
// the exit code and the report come out of the container intact. The
// stack goes down with README's line, the test tag is removed, and
// no container, network or volume it created may be left.
func TestImageRunsSmokeAgainstComposeCluster(t *testing.T) {
	redisImage, toxiImage := localImages(t)
	readme := composeReadmeCommands(t)
	project := composeProject(t, readme[0])
	composePortsFree(t, project, readme[len(readme)-1])
	leavesDockerAsFound(t, harnessLabels...)
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()

	tag := fmt.Sprintf("seckill-harness-test/harness:%d", time.Now().UnixNano())
	t.Cleanup(func() {
		if exec.Command("docker", "image", "inspect", tag).Run() != nil {
			return
		}
		if out, err := exec.Command("docker", "rmi", tag).CombinedOutput(); err != nil {
			t.Errorf("docker rmi %s: %v\n%s", tag, err, out)
		}
	})
	t0 := time.Now()
	mk := exec.Command("make", "-s", "image", "IMAGE="+tag, "IMAGE_CONTEXT="+filepath.Join(tmp, "image"))
	mk.Dir = repo
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, lastLines(string(out), 30))
	}
	built := time.Since(t0)
	size, err := exec.Command("docker", "image", "inspect", "-f", "{{.Size}}", tag).Output()
	if err != nil {
		t.Fatalf("make image built no %s: %v", tag, err)
	}
	bytes, _ := strconv.ParseInt(strings.TrimSpace(string(size)), 10, 64)
	t.Logf("make image: %s in %v, %.1f MB", tag, built.Round(time.Millisecond), float64(bytes)/1e6)

	lines := composeReadmeCommands(t)
	up, down := lines[0], lines[len(lines)-1]
	var logs string
	for _, l := range lines {
		if strings.Contains(l, " logs ") && strings.Contains(l, "cluster-init") {
			logs = l
		}
	}
	if !strings.Contains(up, " up ") || !strings.Contains(down, " down ") || logs == "" {
		t.Fatalf("README's compose block lacks the up, cluster-init logs or down line: %q", lines)
	}
	composeV2 := composeV2Available()
	body := bodyCtx(t)
	composeOn := func(ctx context.Context, line string) (string, error) {
		a := composeArgv(line, composeV2)
		cmd := dockerCommand(ctx, a[0], a[1:]...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "REDIS_IMAGE="+redisImage, "TOXIPROXY_IMAGE="+toxiImage)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s  (%v)", strings.Join(a, " "), time.Since(t0).Round(time.Millisecond))
		return string(out), err
	}
	compose := func(line string) (string, error) { return composeOn(body, line) }
	composeProjectGone(t, project)
	t.Cleanup(func() {
		if out, err := composeOn(context.Background(), down); err != nil {
			t.Errorf("%s: %v\n%s", down, err, out)
		}
	})
	if out, err := compose(up); err != nil {
		t.Fatalf("%s: %v\n%s", up, err, lastLines(out, 30))
	}
	if out, err := compose(logs); err != nil || !strings.Contains(out, "All 16384 slots covered") {
		t.Fatalf("cluster-init did not form the cluster (%v):\n%s", err, lastLines(out, 20))
	}

	runImage := func(name string, args ...string) (exit int, passed bool, failed []string) {
		t.Helper()
		out := filepath.Join(tmp, name)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		argv := append([]string{"run", "--rm", "--network", "host", "-v", out + ":/out", tag,
			"run", "smoke", "--cluster", "redis://127.0.0.1:7001", "--set", "assertions.slo=", "--out", "/out", "--progress", "off"}, args...)
		t0 := time.Now()
		text, err := dockerCommand(body, "docker", argv...).CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			exit = ee.ExitCode()
		default:
			t.Fatalf("docker %s: %v", strings.Join(argv, " "), err)
		}
		t.Logf("$ docker %s  (%v): exit %d\n%s", strings.Join(argv, " "), time.Since(t0).Round(time.Millisecond), exit, lastLines(string(text), 3))
		b, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatalf("the container wrote no report.json to /out (exit %d): %v\n%s", exit, err, lastLines(string(text), 20))
		}
		var rep struct {
			Passed bool `json:"passed"`
			Checks []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"invariants"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("report.json: %v", err)
		}
		for _, c := range rep.Checks {
			if strings.EqualFold(c.Status, "fail") {
				failed = append(failed, c.ID)
			}
		}
		return exit, rep.Passed, failed
	}
	if exit, passed, failed := runImage("reference"); exit != 0 || !passed || len(failed) > 0 {
		t.Errorf("the image's smoke run against the compose cluster: exit %d, passed %v, failed invariants %v; want exit 0, passed, none", exit, passed, failed)
	}
	exit, passed, failed := runImage("bad-path", "--path", "lua-no-user-marker")
	if exit != 1 || passed || !strings.Contains(strings.Join(failed, ","), "I4") {
		t.Errorf("the image's smoke run of a path without the user marker: exit %d, passed %v, failed invariants %v; want exit 1, failed, I4 among them", exit, passed, failed)
	}
}
