package faults

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill-harness/sut/servicechild"
)

// startService starts testdata/fakeservice of sut/servicechild as a
// service child (no Redis: /healthz answers 200).
func startService(t *testing.T) *servicechild.Child {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeservice")
	if out, err := exec.Command("go", "build", "-o", bin, "../sut/servicechild/testdata/fakeservice").CombinedOutput(); err != nil {
		t.Fatalf("building fakeservice: %v\n%s", err, out)
	}
	c, err := servicechild.Start(context.Background(), servicechild.Options{Cmd: "exec " + bin, Grace: time.Second, ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

func answers(url string) bool {
	hc := &http.Client{Timeout: 300 * time.Millisecond}
	resp, err := hc.Get(url + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// procStateOf is the state letter of /proc/<pid>/stat.
func procStateOf(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0]
}

func itoa(n int) string { return strconv.Itoa(n) }

// Each service kind really acts on the child's process group (read back
// from /proc and /healthz, not the fault's word), Heal brings it back and
// is idempotent, Heal before Inject is safe, and without a service child
// Inject and Available refuse, naming --service-cmd.
func TestServiceKinds(t *testing.T) {
	svc := startService(t)
	env := &Env{Service: svc, Logf: t.Logf}
	ctx := context.Background()
	for _, tc := range []struct {
		kind   string
		during func(pgid int) string // "" when the fault is visibly in effect
	}{
		{kindServicePause, func(pgid int) string {
			if st := procStateOf(pgid); st != "T" || answers(svc.URL()) {
				return "process state " + st + ", want T (stopped) and no answer"
			}
			return ""
		}},
		{kindServiceKill, func(pgid int) string {
			if svc.PGID() != 0 || procStateOf(pgid) != "" || answers(svc.URL()) {
				return "the service still runs"
			}
			return ""
		}},
		{kindServiceRestart, func(pgid int) string {
			if svc.PGID() == pgid || svc.PGID() == 0 || !answers(svc.URL()) {
				return "not a new, ready process group"
			}
			return ""
		}},
	} {
		sp, _ := Lookup(tc.kind)
		f, err := sp.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Heal(ctx, env); err != nil {
			t.Fatalf("%s: Heal before Inject: %v", tc.kind, err)
		}
		pgid := svc.PGID()
		if err := f.Inject(ctx, env); err != nil {
			t.Fatalf("%s: Inject: %v", tc.kind, err)
		}
		if why := tc.during(pgid); why != "" {
			t.Fatalf("%s after Inject: %s", tc.kind, why)
		}
		for i := 0; i < 2; i++ {
			if err := f.Heal(ctx, env); err != nil {
				t.Fatalf("%s: Heal %d: %v", tc.kind, i+1, err)
			}
		}
		if svc.PGID() == 0 || !answers(svc.URL()) {
			t.Fatalf("%s: the service does not answer after Heal", tc.kind)
		}
		t.Logf("%s evidence: %v", tc.kind, f.Evidence())
		if err := f.Inject(ctx, &Env{}); err == nil || !strings.Contains(err.Error(), "--service-cmd") {
			t.Fatalf("%s: Inject without a service: %v, want a refusal naming --service-cmd", tc.kind, err)
		}
		err = Available(&Planned{Kind: tc.kind}, Setting{Provider: "local"})
		if err == nil || !strings.Contains(err.Error(), "--service-cmd") {
			t.Fatalf("%s: Available without a service: %v", tc.kind, err)
		}
		if err := Available(&Planned{Kind: tc.kind}, Setting{Provider: "local", Service: true}); err != nil {
			t.Fatalf("%s: Available with a service: %v", tc.kind, err)
		}
		if Destructive(tc.kind, nil) || !IsExclusive(tc.kind) {
			t.Fatalf("%s: want not destructive and exclusive", tc.kind)
		}
	}
	if svc.Starts() != 3 {
		t.Fatalf("%d starts, want 3 (the first, after service-kill, by service-restart)", svc.Starts())
	}
}
