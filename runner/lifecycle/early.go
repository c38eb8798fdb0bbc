package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// reachService refuses, before anything starts, a running service under
// test the harness does not start itself (--service URL or service.url
// without --service-cmd) when nothing accepts a TCP connection at its
// host:port: the load would only measure refused connections. A service
// the run starts (--service-cmd) is waited for by its readiness probe.
func (x *execution) reachService(ctx context.Context) error {
	sut := x.plan.SystemUnderTest
	if sut == nil || sut.Kind != "service" || sut.URL == "" || x.plan.Service.Cmd != "" {
		return nil
	}
	u, err := url.Parse(sut.URL)
	if err != nil || u.Hostname() == "" {
		return nil // the planner checked the URL (httpsut.CheckURL)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	d := net.Dialer{Timeout: 3 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		why := err
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			why = op.Err
			var sc *os.SyscallError
			if errors.As(op.Err, &sc) {
				why = sc.Err
			}
		}
		return fmt.Errorf("service under test %s: nothing answers at %s (%v): start the service before the run, or give --service-cmd CMD to have the harness start it", sut.URL, addr, why)
	}
	return c.Close()
}

// missingDirs lists the directories the run's outputs would create that
// do not exist yet (--out and the history file's directory, with their
// missing parents), deepest first: what a run refused before its load
// removes again (removeMissing), so a refusal leaves no --out behind.
func missingDirs(dir string, extra ...string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(d string) {
		abs, err := filepath.Abs(d)
		if err != nil {
			return
		}
		var chain []string
		for p := abs; !seen[p]; p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil || filepath.Dir(p) == p {
				break
			}
			seen[p] = true
			chain = append(chain, p)
		}
		out = append(out, chain...)
	}
	add(dir)
	for _, p := range extra {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		add(filepath.Dir(p))
	}
	return out
}

// removeMissing removes the directories missingDirs listed, deepest first,
// each only while it is empty: what anything wrote in them stays.
func removeMissing(dirs []string) {
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil {
			continue
		}
	}
}
