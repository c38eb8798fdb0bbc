package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The Kubernetes example: three files in kubernetes/, one object each.
const (
	kubeDir        = "kubernetes"
	generatorsFile = "generators-job.yaml"
	verifyFile     = "verify-job.yaml"
	claimFile      = "results-pvc.yaml"
)

// completionIndexKey is where the Job controller puts a pod's completion
// index (annotation, and label on recent versions).
const completionIndexKey = "batch.kubernetes.io/job-completion-index"

// kubeScheme knows the API types the examples use: batch/v1 and core/v1.
func kubeScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(batchv1.AddToScheme(s))
	utilruntime.Must(corev1.AddToScheme(s))
	return s
}

// decodeManifests decodes every YAML document of text into its API type.
// strict (what the tests use) makes an unknown field, a field spelt in
// another case, and a key given twice an error, as `kubectl apply
// --validate=strict` would; an unknown kind or apiVersion is an error
// either way.
func decodeManifests(text []byte, strict bool) ([]runtime.Object, error) {
	var opts []serializer.CodecFactoryOptionsMutator
	if strict {
		opts = append(opts, serializer.EnableStrict)
	}
	dec := serializer.NewCodecFactory(kubeScheme(), opts...).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(text)))
	var objs []runtime.Object
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if j, err := yaml.YAMLToJSON(doc); err == nil && string(bytes.TrimSpace(j)) == "null" {
			continue // comments only
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		objs = append(objs, obj)
	}
}

// kubeSplit is the example's three objects.
type kubeSplit struct {
	gen, verify *batchv1.Job
	claim       *corev1.PersistentVolumeClaim
}

// readKubeFiles returns the example's files by name, as text.
func readKubeFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, f := range []string{generatorsFile, verifyFile, claimFile} {
		b, err := os.ReadFile(filepath.Join(kubeDir, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(b)
	}
	return files
}

// decodeSplit decodes the three files strictly, each into exactly one
// object of its type.
func decodeSplit(files map[string]string) (*kubeSplit, error) {
	one := func(name string) (runtime.Object, error) {
		objs, err := decodeManifests([]byte(files[name]), true)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(objs) != 1 {
			return nil, fmt.Errorf("%s: %d objects, want 1", name, len(objs))
		}
		return objs[0], nil
	}
	var s kubeSplit
	var ok bool
	for _, f := range []struct {
		name string
		set  func(runtime.Object) bool
	}{
		{generatorsFile, func(o runtime.Object) bool { s.gen, ok = o.(*batchv1.Job); return ok }},
		{verifyFile, func(o runtime.Object) bool { s.verify, ok = o.(*batchv1.Job); return ok }},
		{claimFile, func(o runtime.Object) bool { s.claim, ok = o.(*corev1.PersistentVolumeClaim); return ok }},
	} {
		o, err := one(f.name)
		if err != nil {
			return nil, err
		}
		if !f.set(o) {
			return nil, fmt.Errorf("%s: a %T, not the expected kind", f.name, o)
		}
	}
	return &s, nil
}

// TestKubeManifestsDecodeStrictly decodes every manifest of kubernetes/
// with the Kubernetes API types, strictly. The same files with one field
// misspelt (or in the wrong case, or given twice) must fail, naming the
// field — and the lenient decoder would have let the misspelling through
// silently, which is why the strict one is used.
func TestKubeManifestsDecodeStrictly(t *testing.T) {
	all, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if err != nil || len(all) != 4 {
		t.Fatalf("kubernetes/*.yaml: %v %v, want the 4 files of the examples (the split load's 3, the nightly CronJob)", all, err)
	}
	for _, f := range all {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeManifests(b, true)
		if err != nil || len(objs) == 0 {
			t.Errorf("%s: %d objects, %v", f, len(objs), err)
		}
	}
	files := readKubeFiles(t)
	if _, err := decodeSplit(files); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		file, from, to, want string
	}{
		{generatorsFile, "completionMode:", "completionMod:", `unknown field "spec.completionMod"`},
		{generatorsFile, "mountPath:", "mountpath:", `unknown field "spec.template.spec.containers[0].volumeMounts[0].mountpath"`},
		{generatorsFile, "  parallelism: 3\n", "  parallelism: 3\n  parallelism: 3\n", `"parallelism" already set`},
		{generatorsFile, "fieldPath:", "fieldpath:", `unknown field "spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldpath"`},
		{verifyFile, "restartPolicy:", "restartpolicy:", `unknown field "spec.template.spec.restartpolicy"`},
		{verifyFile, "claimName:", "claimNmae:", `unknown field "spec.template.spec.volumes[0].persistentVolumeClaim.claimNmae"`},
		{claimFile, "accessModes:", "accesModes:", `unknown field "spec.accesModes"`},
		{claimFile, "kind: PersistentVolumeClaim", "kind: PersistentVolumeClam", `no kind "PersistentVolumeClam"`},
	} {
		if n := strings.Count(files[m.file], m.from); n != 1 {
			t.Errorf("%s has %d of %q, want exactly one to misspell", m.file, n, m.from)
			continue
		}
		bad := strings.Replace(files[m.file], m.from, m.to, 1)
		_, err := decodeManifests([]byte(bad), true)
		if err == nil || !strings.Contains(err.Error(), m.want) {
			t.Errorf("%s with %q for %q: strict decode gave %v, want an error naming %s", m.file, m.to, m.from, err, m.want)
		}
	}
	lenient := strings.Replace(files[generatorsFile], "completionMode:", "completionMod:", 1)
	objs, err := decodeManifests([]byte(lenient), false)
	if err != nil || len(objs) != 1 || objs[0].(*batchv1.Job).Spec.CompletionMode != nil {
		t.Errorf("lenient decode of the misspelt Job: %v, %v; want it accepted with the field silently lost", objs, err)
	}
}

// varRef is a $(NAME) reference the kubelet expands in a container's args
// from the container's env; a reference to an undeclared name stays as
// written.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// boolFlags are the harness flags the examples may pass without a value.
var boolFlags = map[string]bool{"--teardown": true, "--quiet": true, "-q": true, "--allow-destructive": true,
	"--tls-insecure": true, "--appendonly": true, "--pipeline": true}

// cliArgs splits a harness command line into its positional arguments and
// its --flag values (--flag value or --flag=value; the last one wins).
func cliArgs(args []string) (positional []string, flags map[string]string) {
	flags = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !strings.HasPrefix(a, "-"):
			positional = append(positional, a)
		case strings.Contains(a, "="):
			k, v, _ := strings.Cut(a, "=")
			flags[k] = v
		case boolFlags[a]:
			flags[a] = "true"
		case i+1 < len(args):
			flags[a] = args[i+1]
			i++
		default:
			flags[a] = ""
		}
	}
	return positional, flags
}

// mountedClaim returns the claim mounted at the longest mount path that
// holds dir, and that mount path.
func mountedClaim(spec corev1.PodSpec, c corev1.Container, dir string) (claim, mountPath string) {
	for _, m := range c.VolumeMounts {
		if (dir == m.MountPath || strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > len(mountPath) {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.PersistentVolumeClaim != nil {
					claim, mountPath = v.PersistentVolumeClaim.ClaimName, m.MountPath
				}
			}
		}
	}
	return claim, mountPath
}

// splitProblems lists every way the example's objects disagree with the
// split-load contract of `run --generator I/N` and `verify`:
//
//   - the generators' Job is Indexed with completions == parallelism == N
//     (all N run at once), each index runs once (backoffLimitPerIndex 0,
//     restartPolicy Never: a second run of an index is refused anyway);
//   - its container runs `run SCENARIO --generator $(JOB_COMPLETION_INDEX)/N
//     --activity … --cluster redis://… --out …$(JOB_COMPLETION_INDEX)…`,
//     every $(VAR) of its args declared in its env (JOB_COMPLETION_INDEX
//     from the completion-index annotation or label), its --out on the
//     shared claim;
//   - the verify Job runs `verify --cluster (the same) --out …` with exactly
//     the N directories --out names for index 0..N-1, the same image, the
//     same claim at the same mount path;
//   - the claim is ReadWriteMany (the generators run on several nodes).
func splitProblems(s *kubeSplit) []string {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	g := s.gen.Spec
	if g.CompletionMode == nil || *g.CompletionMode != batchv1.IndexedCompletion {
		bad("generators: completionMode %v, want Indexed (pod i gets JOB_COMPLETION_INDEX=i)", g.CompletionMode)
	}
	n := 0
	if g.Completions == nil || *g.Completions < 1 {
		bad("generators: completions unset, want N")
	} else {
		n = int(*g.Completions)
	}
	if g.Parallelism == nil || int(*g.Parallelism) != n {
		bad("generators: parallelism %v, want completions (%d): every generator loads the cluster at the same time", g.Parallelism, n)
	}
	if g.BackoffLimitPerIndex == nil || *g.BackoffLimitPerIndex != 0 {
		bad("generators: backoffLimitPerIndex %v, want 0: an index runs once per activity", g.BackoffLimitPerIndex)
	}
	if g.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		bad("generators: restartPolicy %q, want Never", g.Template.Spec.RestartPolicy)
	}
	if len(g.Template.Spec.Containers) != 1 || len(s.verify.Spec.Template.Spec.Containers) != 1 {
		return append(p, "each Job needs exactly one container")
	}
	gc, vc := g.Template.Spec.Containers[0], s.verify.Spec.Template.Spec.Containers[0]
	gpos, gflags := cliArgs(gc.Args)
	if len(gpos) != 2 || gpos[0] != "run" {
		bad("generators: args %q, want run SCENARIO and flags", gc.Args)
	}
	if want := "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(n); gflags["--generator"] != want {
		bad("generators: --generator %q, want %q (N = completions)", gflags["--generator"], want)
	}
	if gflags["--activity"] == "" {
		bad("generators: no --activity (every generator must name the same one)")
	}
	cluster := gflags["--cluster"]
	if !strings.HasPrefix(cluster, "redis://") && !strings.HasPrefix(cluster, "rediss://") {
		bad("generators: --cluster %q, want redis://… or rediss://… (a cluster every generator reaches)", cluster)
	}
	outTmpl := gflags["--out"]
	if !strings.Contains(outTmpl, "$(JOB_COMPLETION_INDEX)") {
		bad("generators: --out %q does not depend on $(JOB_COMPLETION_INDEX): the generators would share one directory", outTmpl)
	}
	declared := map[string]*corev1.EnvVarSource{}
	for _, e := range gc.Env {
		declared[e.Name] = e.ValueFrom
	}
	for _, a := range gc.Args {
		for _, m := range varRef.FindAllStringSubmatch(a, -1) {
			if _, ok := declared[m[1]]; !ok {
				bad("generators: args reference $(%s), which the container's env does not declare (the kubelet would pass it verbatim)", m[1])
			}
		}
	}
	if src, ok := declared["JOB_COMPLETION_INDEX"]; ok {
		fp := ""
		if src != nil && src.FieldRef != nil {
			fp = src.FieldRef.FieldPath
		}
		if fp != "metadata.annotations['"+completionIndexKey+"']" && fp != "metadata.labels['"+completionIndexKey+"']" {
			bad("generators: JOB_COMPLETION_INDEX from %q, want the %s annotation", fp, completionIndexKey)
		}
	}
	genClaim, genMount := mountedClaim(g.Template.Spec, gc, outTmpl)
	if genClaim != s.claim.Name {
		bad("generators: --out %q is on claim %q, want the shared claim %q", outTmpl, genClaim, s.claim.Name)
	}

	v := s.verify.Spec.Template.Spec
	vpos, vflags := cliArgs(vc.Args)
	if len(vpos) == 0 || vpos[0] != "verify" {
		bad("verify: args %q, want verify, flags and the generators' directories", vc.Args)
	} else {
		dirs := vpos[1:]
		var want []string
		for i := range n {
			want = append(want, strings.ReplaceAll(outTmpl, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i)))
		}
		for _, w := range want {
			if !slices.Contains(dirs, w) {
				bad("verify: the directories %q lack %s", dirs, w)
			}
		}
		if len(dirs) != len(want) {
			bad("verify: %d directories %q, want the %d generators' %q", len(dirs), dirs, n, want)
		}
		for _, d := range dirs {
			if c, m := mountedClaim(v, vc, d); c != s.claim.Name || m != genMount {
				bad("verify: %s is on claim %q at %q, want %q at %q as the generators wrote it", d, c, m, s.claim.Name, genMount)
			}
		}
	}
	if vflags["--cluster"] != cluster {
		bad("verify: --cluster %q, want the generators' %q", vflags["--cluster"], cluster)
	}
	if vflags["--out"] == "" {
		bad("verify: no --out")
	}
	if vc.Image != gc.Image || gc.Image == "" {
		bad("verify: image %q, want the generators' %q", vc.Image, gc.Image)
	}
	if v.RestartPolicy != corev1.RestartPolicyNever {
		bad("verify: restartPolicy %q, want Never", v.RestartPolicy)
	}
	if !slices.Contains(s.claim.Spec.AccessModes, corev1.ReadWriteMany) {
		bad("claim %s: access modes %v, want ReadWriteMany (generator pods on several nodes write to it)", s.claim.Name, s.claim.Spec.AccessModes)
	}
	return p
}

// TestKubeSplitAgrees checks the example against the split-load contract
// (splitProblems), then shows each check catching a broken copy.
func TestKubeSplitAgrees(t *testing.T) {
	files := readKubeFiles(t)
	s, err := decodeSplit(files)
	if err != nil {
		t.Fatal(err)
	}
	if p := splitProblems(s); len(p) > 0 {
		t.Fatalf("the example breaks the split contract:\n%s", strings.Join(p, "\n"))
	}
	t.Logf("N=%d generators: %q; verify: %q", *s.gen.Spec.Completions, s.gen.Spec.Template.Spec.Containers[0].Args, s.verify.Spec.Template.Spec.Containers[0].Args)
	for _, m := range []struct {
		file, from, to, want string
	}{
		{generatorsFile, "parallelism: 3", "parallelism: 2", "parallelism"},
		{generatorsFile, "completions: 3", "completions: 4", "--generator"},
		{generatorsFile, "$(JOB_COMPLETION_INDEX)/3", "$(JOB_COMPLETION_INDEX)/4", "--generator"},
		{generatorsFile, "completionMode: Indexed", "completionMode: NonIndexed", "Indexed"},
		{generatorsFile, "\n  backoffLimitPerIndex: 0\n", "\n  backoffLimitPerIndex: 2\n", "backoffLimitPerIndex"},
		{generatorsFile, "- $(ACTIVITY)", "- $(ACTIVITY_NAME)", "$(ACTIVITY_NAME)"},
		{generatorsFile, "- /out/gen-$(JOB_COMPLETION_INDEX)", "- /out/gen", "does not depend"},
		{generatorsFile, "annotations['batch.kubernetes.io/job-completion-index']", "annotations['batch.kubernetes.io/job-index']", "JOB_COMPLETION_INDEX from"},
		{verifyFile, "            - /out/gen-2\n", "", "lack /out/gen-2"},
		{verifyFile, "            - /out/gen-2\n", "            - /out/gen-2\n            - /out/gen-3\n", "4 directories"},
		{verifyFile, "image: registry.example.com/seckill-harness:dev", "image: registry.example.com/seckill-harness:old", "image"},
		{verifyFile, "claimName: seckill-results", "claimName: other", "claim"},
		{verifyFile, "mountPath: /out", "mountPath: /results", "claim"},
		{verifyFile, "redis://redis-cluster.seckill.svc.cluster.local:6379", "redis://10.0.0.5:6379", "--cluster"},
		{claimFile, "- ReadWriteMany", "- ReadWriteOnce", "ReadWriteMany"},
	} {
		if n := strings.Count(files[m.file], m.from); n != 1 {
			t.Errorf("%s has %d of %q, want exactly one to break", m.file, n, m.from)
			continue
		}
		broken := map[string]string{}
		for k, v := range files {
			broken[k] = v
		}
		broken[m.file] = strings.Replace(files[m.file], m.from, m.to, 1)
		bs, err := decodeSplit(broken)
		if err != nil {
			t.Errorf("%s with %q: %v", m.file, m.to, err)
			continue
		}
		p := splitProblems(bs)
		if !strings.Contains(strings.Join(p, "\n"), m.want) {
			t.Errorf("%s with %q for %q: problems %q, want one naming %q", m.file, m.to, m.from, p, m.want)
		}
	}
}

// The nightly CronJobs append to and judge against one results history
// on the claim, and render the trend from it: the same directory in all.
func TestNightlyCronJobsShareTheResultsHistory(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(kubeDir, "nightly-cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(b, true)
	if err != nil || len(objs) != 2 {
		t.Fatalf("%d objects, %v: want the nightly and the trend CronJob", len(objs), err)
	}
	text := string(b)
	for _, want := range []string{"- --results-history\n                - /out/history", "- --baseline\n                - /out/history",
		`"trend", "--results-history", "/out/history", "--format", "html"`, "claimName: seckill-results"} {
		if !strings.Contains(text, want) {
			t.Errorf("nightly-cronjob.yaml lacks %q", want)
		}
	}
}
