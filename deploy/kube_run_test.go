package deploy

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"seckill-harness/compose"
	"seckill-harness/reports"
)

// podArgs is what the kubelet would run for a container of the example:
// its args with every $(VAR) expanded from the container's env (literal
// values, plus JOB_COMPLETION_INDEX=index for a generator), then moved onto
// this machine: the manifest's --cluster address becomes cluster, and
// paths under the claim's mount path move under outRoot.
func podArgs(c corev1.Container, index int, manifestCluster, cluster, mountPath, outRoot string) []string {
	env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(index)}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	var out []string
	for _, a := range c.Args {
		a = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[varRef.FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return ref
		})
		switch {
		case a == manifestCluster:
			a = cluster
		case a == mountPath || strings.HasPrefix(a, mountPath+"/"):
			a = outRoot + strings.TrimPrefix(a, mountPath)
		}
		out = append(out, a)
	}
	return out
}

// TestKubeJobsRunAsWrittenAgainstALocalCluster runs the example's
// containers, as the kubelet would, against a local 3x1 cluster of
// redis-server processes (reached as an existing redis:// cluster, as the
// pods reach theirs): the N generator pods' args at once with
// JOB_COMPLETION_INDEX 0..N-1, then the verify pod's args. The only
// changes are the cluster's address, the claim's mount path (a temp dir)
// and, on the generators, --set assertions.slo= (smoke's p99 goal is not
// what this test is about on a loaded 2-core machine; every invariant is
// still judged, and by verify over all generators). Every generator and
// verify must exit 0, and the merged report must pass with N sources.
func TestKubeJobsRunAsWrittenAgainstALocalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a cluster and runs the split load")
	}
	s, err := decodeSplit(readKubeFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if p := splitProblems(s); len(p) > 0 {
		t.Fatalf("the example breaks the split contract:\n%s", strings.Join(p, "\n"))
	}
	n := int(*s.gen.Spec.Completions)
	gc, vc := s.gen.Spec.Template.Spec.Containers[0], s.verify.Spec.Template.Spec.Containers[0]
	_, gflags := cliArgs(gc.Args)
	_, mountPath := mountedClaim(s.gen.Spec.Template.Spec, gc, gflags["--out"])

	tmp := t.TempDir()
	bin := filepath.Join(tmp, "seckill-harness")
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", bin, repo).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Its own cluster: the package has no shared one (this is its only
	// test that needs Redis) and the pods reach it as redis://, outside.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	c, err := compose.Start(ctx, compose.Options{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cluster := "redis://" + strings.Join(c.Addrs(), ",")
	outRoot := filepath.Join(tmp, "claim")
	env := slicesWithout(os.Environ(), compose.EnvRedisPassword+"=", compose.EnvRedisUsername+"=")

	pod := func(args []string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out)
		case errors.As(err, &ee):
			return ee.ExitCode(), string(out)
		}
		return -1, err.Error() + "\n" + string(out)
	}

	codes, texts := make([]int, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		args := append(podArgs(gc, i, gflags["--cluster"], cluster, mountPath, outRoot), "--set", "assertions.slo=")
		t.Logf("generator pod %d: seckill-harness %s", i, strings.Join(args, " "))
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], texts[i] = pod(args)
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != 0 {
			t.Errorf("generator pod %d: exit %d\n%s", i, codes[i], lastLines(texts[i], 25))
		}
	}
	if t.Failed() {
		return
	}
	args := podArgs(vc, 0, gflags["--cluster"], cluster, mountPath, outRoot)
	t.Logf("verify pod: seckill-harness %s", strings.Join(args, " "))
	code, text := pod(args)
	if code != 0 {
		t.Fatalf("verify pod: exit %d\n%s", code, lastLines(text, 30))
	}
	_, vflags := cliArgs(args)
	rep, err := reports.ReadJSON(filepath.Join(vflags["--out"], "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || len(rep.Sources) != n {
		t.Errorf("merged report: passed %v, %d sources; want passed, %d", rep.Passed, len(rep.Sources), n)
	}
	t.Logf("verify: %s", lastLines(text, 3))
}

// slicesWithout returns env without the entries that start with any of
// the prefixes.
func slicesWithout(env []string, prefixes ...string) []string {
	var out []string
next:
	for _, e := range env {
		for _, p := range prefixes {
			if strings.HasPrefix(e, p) {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
