package serve

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Flags are serve's command-line values; Config turns them into a Config.
type Flags struct {
	cfg                   Config
	listen, addrs, secret string
	defects               []string
	pgURL                 string
}

// RegisterFlags registers serve's flags on fs. The environment of a
// service started by the harness (EnvListen, EnvRedisAddrs, EnvSecret,
// EnvPGURL) gives their defaults.
func RegisterFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{}
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&f.listen, "listen", env(EnvListen, DefaultListen), "loopback host:port to serve HTTP on (port 0: a free one, printed on stderr); default $"+EnvListen)
	fs.StringVar(&f.addrs, "redis-addrs", env(EnvRedisAddrs, ""), "cluster seed addresses host:port,...; default $"+EnvRedisAddrs)
	fs.StringVar(&f.secret, "secret", "", "secret the reservation ids are derived with (the harness's run secret); prefer $"+EnvSecret+" (a flag shows in ps)")
	fs.StringVar(&f.pgURL, "pg", env(EnvPGURL, ""), "PostgreSQL URL of the pipeline; default $"+EnvPGURL+" (accepted; the send_pending dispatcher is the harness's, see docs/SERVICE.md)")
	fs.DurationVar(&f.cfg.Timeout, "timeout", DefaultTimeout, "per-request deadline: every answer is written before it")
	fs.DurationVar(&f.cfg.RedisTimeout, "redis-timeout", DefaultRedisTimeout, "bound of one script call; no reply in time is OUTCOME_UNKNOWN")
	fs.IntVar(&f.cfg.MaxSends, "max-sends", DefaultMaxSends, "sends of one reserve at most, the first included (re-sends carry the same ids), 1..5")
	fs.StringVar(&f.cfg.SKU, "sku", DefaultSKU, "the activities' SKU id (part of every key's hash tag)")
	fs.Int64Var(&f.cfg.Version, "activity-version", 1, "the activities' version (part of every key's hash tag)")
	fs.DurationVar(&f.cfg.ReservationTTL, "reservation-ttl", DefaultReservationTTL, "a reservation's expiry")
	fs.DurationVar(&f.cfg.SoldOutTTL, "soldout-ttl", DefaultSoldOutTTL, "how long the local sold-out flag answers SOLD_OUT after Redis did (0 or negative: no flag)")
	fs.DurationVar(&f.cfg.BreakerHold, "breaker-hold", DefaultBreakerHold, "how long a node whose call timed out, or an OOM, is answered SYSTEM_BUSY without asking Redis")
	fs.IntVar(&f.cfg.PoolSize, "pool-size", 0, "connections per node (0: go-redis's default)")
	fs.StringSliceVar(&f.defects, "defect", nil, "turn on a known-wrong behaviour as a negative control (repeatable or a comma list): "+strings.Join(DefectNames(), ", "))
	return f
}

// Config is the configuration the flags give, checked (an unknown defect,
// a non-loopback --listen, no Redis address: an error naming the fix).
func (f *Flags) Config() (Config, error) {
	set, err := ParseDefects(f.defects)
	if err != nil {
		return Config{}, err
	}
	c := f.cfg
	if f.secret == "" {
		f.secret = os.Getenv(EnvSecret) // read here, not as the flag's default: --help would print it
	}
	c.Listen, c.RedisAddrs, c.Secret, c.Defects, c.PGURL = f.listen, SplitAddrs(f.addrs), []byte(f.secret), set, f.pgURL
	if c.SoldOutTTL == 0 {
		c.SoldOutTTL = -time.Nanosecond // --soldout-ttl 0: no flag
	}
	c = c.withDefaults()
	return c, c.Validate()
}

// PGURL is the pipeline's PostgreSQL URL ("" without one).
func (f *Flags) PGURL() string { return f.pgURL }

// Run is the serve command: the service the flags describe, on its
// address until ctx ends (SIGINT/SIGTERM). The line "serve: listening on
// http://ADDR ..." on stderr says where, once it listens.
func (f *Flags) Run(ctx context.Context, stderr io.Writer) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	s, err := New(cfg)
	if err != nil {
		return err
	}
	return Run(ctx, s, func(addr string) {
		fmt.Fprintf(stderr, "serve: listening on http://%s (cluster %s; defects: %s)\n", addr, strings.Join(cfg.RedisAddrs, ","), cfg.Defects)
		if f.pgURL != "" {
			fmt.Fprintln(stderr, "serve: a PostgreSQL URL was given: this service does not run the send_pending dispatcher (the harness's pipeline sends what it reserves; docs/SERVICE.md)")
		}
	})
}
