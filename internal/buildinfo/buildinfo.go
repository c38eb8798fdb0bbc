// Package buildinfo says which harness this is: its version and VCS
// revision from the Go build information, the Go toolchain that built it,
// the go-redis module it was linked with, and the redis-server binary a
// local cluster would start.
package buildinfo

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// GoRedisModule is the module path of the Redis client the harness drives
// the cluster with.
const GoRedisModule = "github.com/redis/go-redis/v9"

// Info is the harness's build: every field is "" when the build carries no
// such information (a test binary, a build without VCS stamping).
type Info struct {
	// Version is the main module's version ("(devel)" for a build from a
	// work tree, a tag for 'go install …@vX').
	Version string `json:"version"`
	// Revision, Time and Modified are the VCS stamp (vcs.revision,
	// vcs.time, vcs.modified: uncommitted changes were built in).
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	// GoVersion is the toolchain that compiled the binary.
	GoVersion string `json:"go_version"`
	// GoRedis is the go-redis version linked in.
	GoRedis string `json:"go_redis_version"`
}

// Read returns the running binary's build information.
func Read() Info {
	in := Info{GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo extracts Info from Go build information.
func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{GoVersion: bi.GoVersion, Version: bi.Main.Version}
	if in.GoVersion == "" {
		in.GoVersion = runtime.Version()
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		if d.Path != GoRedisModule {
			continue
		}
		in.GoRedis = d.Version
		if d.Replace != nil {
			in.GoRedis = d.Replace.Version + " (replaces " + d.Version + ")"
		}
	}
	return in
}

// LocalRedis is the redis-server binary found on PATH (what a local
// cluster starts unless --redis-server names another), not the server of
// any cluster the harness talks to.
type LocalRedis struct {
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// Error says why there is no version: not on PATH, or it did not answer.
	Error string `json:"error,omitempty"`
}

var redisVersionRE = regexp.MustCompile(`\bv=(\S+)`)

// FindLocalRedis runs `redis-server --version` of the binary on PATH
// (bin "" means "redis-server") and reads its v=X.Y.Z.
func FindLocalRedis(ctx context.Context, bin string) LocalRedis {
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return LocalRedis{Error: fmt.Sprintf("%s not found on PATH", bin)}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return LocalRedis{Path: path, Error: fmt.Sprintf("%s --version: %v", path, err)}
	}
	m := redisVersionRE.FindStringSubmatch(string(out))
	if m == nil {
		return LocalRedis{Path: path, Error: fmt.Sprintf("%s --version printed no v=: %q", path, strings.TrimSpace(string(out)))}
	}
	return LocalRedis{Path: path, Version: m[1]}
}

// Text renders the build and the local redis-server as the version
// command prints them, one fact per line.
func Text(in Info, r LocalRedis) string {
	var b strings.Builder
	v := in.Version
	if v == "" {
		v = "unknown"
	}
	fmt.Fprintf(&b, "seckill-harness %s\n", v)
	if in.Revision != "" {
		mod := ""
		if in.Modified {
			mod = " (modified: built with uncommitted changes)"
		}
		fmt.Fprintf(&b, "  revision:     %s%s\n", in.Revision, mod)
	}
	if in.Time != "" {
		fmt.Fprintf(&b, "  commit time:  %s\n", in.Time)
	}
	fmt.Fprintf(&b, "  go:           %s\n", in.GoVersion)
	gr := in.GoRedis
	if gr == "" {
		gr = "unknown (no build information)"
	}
	fmt.Fprintf(&b, "  go-redis:     %s\n", gr)
	if r.Version != "" {
		fmt.Fprintf(&b, "  local redis-server (PATH, used by --cluster local): %s (%s)\n", r.Version, r.Path)
	} else {
		fmt.Fprintf(&b, "  local redis-server (PATH, used by --cluster local): none: %s\n", r.Error)
	}
	return b.String()
}
