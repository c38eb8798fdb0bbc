package compose

import (
	"context"
	"fmt"
	"strings"
)

// OpenCluster opens the cluster a --cluster flag names:
//
//	"" or "local"              Start(ctx, local): child redis-server processes (the default)
//	"docker"                   StartDocker(ctx, docker): containers (needs a Docker engine)
//	"redis://…", "rediss://…"  ConnectExternal(ctx, spec, ext): somebody else's cluster
//
// Close the result when done (for an external cluster that only closes the
// harness's clients). Errors name the accepted values; they never contain
// a password.
func OpenCluster(ctx context.Context, spec string, local Options, docker DockerOptions, ext ExternalOptions) (Cluster, error) {
	switch s := strings.TrimSpace(spec); {
	case s == "" || s == ProviderLocal:
		c, err := Start(ctx, local)
		if err != nil {
			return nil, err
		}
		return c, nil
	case s == ProviderDocker:
		c, err := StartDocker(ctx, docker)
		if err != nil {
			return nil, err
		}
		return c, nil
	case strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://"):
		c, err := ConnectExternal(ctx, s, ext)
		if err != nil {
			return nil, err
		}
		return c, nil
	default:
		return nil, fmt.Errorf("compose: --cluster %q: want local (the default), docker, or redis://[user:password@]host:port[,host:port...] (rediss:// for TLS)", redactSpec(s))
	}
}

// OpenToxics opens the toxiproxy layer a --toxiproxy flag names: "" is the
// embedded server (NewProxies); an http(s):// URL (or host:port) is a
// toxiproxy server's API (NewRemoteProxies, proxies listening on
// 127.0.0.1).
func OpenToxics(apiURL string, c Cluster) (Toxics, error) {
	if strings.TrimSpace(apiURL) == "" {
		p, err := NewProxies(c)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	p, err := NewRemoteProxies(strings.TrimSpace(apiURL), c, "")
	if err != nil {
		return nil, err
	}
	return p, nil
}
