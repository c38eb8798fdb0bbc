package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"seckill-harness/lua"
)

// The environment a service started by the harness (--service-cmd) is
// given; serve's flags read the same names as their defaults.
const (
	EnvListen     = "SECKILL_LISTEN"
	EnvRedisAddrs = "SECKILL_REDIS_ADDRS"
	EnvSecret     = "SECKILL_SECRET"
	EnvPGURL      = "SECKILL_PG_URL"
)

// Defaults of Config.
const (
	DefaultListen         = "127.0.0.1:8080"
	DefaultTimeout        = time.Second
	DefaultRedisTimeout   = 300 * time.Millisecond
	DefaultMaxSends       = 2
	DefaultSKU            = "sku1"
	DefaultReservationTTL = 15 * time.Minute
	DefaultSoldOutTTL     = 500 * time.Millisecond
	DefaultBreakerHold    = time.Second
	DefaultSKUBreakerHold = 10 * time.Second
)

// Config is what one service runs with. The zero value of every duration
// and count means its default.
type Config struct {
	// Listen is the loopback host:port of the HTTP server (port 0: any free one).
	Listen string
	// RedisAddrs are the cluster's seed addresses.
	RedisAddrs []string
	// Secret keys the reservation ids (the harness's run secret).
	Secret []byte
	// Timeout is each request's deadline: every answer is written before it.
	Timeout time.Duration
	// RedisTimeout bounds one script call; a call that gets no reply in
	// time is OUTCOME UNKNOWN.
	RedisTimeout time.Duration
	// MaxSends bounds the sends of one reserve (the first included): a
	// re-send after a timeout or a redirect carries the very same ids.
	MaxSends int
	// SKU and Version name the activities' keys (the hash tag
	// a:<activity>:s:<sku>:v:<version>:b:<bucket>); the request names only
	// the activity.
	SKU     string
	Version int64
	// ReservationTTL is the reservation's expiry (reserve.lua's ttl).
	ReservationTTL time.Duration
	// SoldOutTTL is how long the local sold-out flag holds after Redis
	// answered SOLD_OUT; negative: no flag.
	SoldOutTTL time.Duration
	// BreakerHold is how long a node whose call timed out is answered
	// SYSTEM_BUSY for without being asked (then one request probes it);
	// it is also how long OOM stops new reservations.
	BreakerHold time.Duration
	// SKUBreakerHold is how long a CROSSSLOT answer keeps the SKU's circuit open.
	SKUBreakerHold time.Duration
	// PoolSize is the connections per node (0: go-redis's default).
	PoolSize int
	// Dialer replaces go-redis's dialer (a library caller routing the
	// connections through proxies); nil: plain TCP.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Scripts are the scripts to run; nil: the embedded reference scripts.
	Scripts *lua.Scripts
	// Defects are the negative controls turned on (ParseDefects).
	Defects DefectSet
	// PGURL is the pipeline's PostgreSQL (the run's schema in its
	// search_path, as the harness hands it over in $SECKILL_PG_URL). The
	// reference service only accepts it (the send_pending dispatcher is
	// the harness's); the bypass-to-db defect writes orders there.
	PGURL string
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	set(&c.Timeout, DefaultTimeout)
	set(&c.RedisTimeout, DefaultRedisTimeout)
	set(&c.ReservationTTL, DefaultReservationTTL)
	set(&c.SoldOutTTL, DefaultSoldOutTTL)
	set(&c.BreakerHold, DefaultBreakerHold)
	set(&c.SKUBreakerHold, DefaultSKUBreakerHold)
	if c.MaxSends == 0 {
		c.MaxSends = DefaultMaxSends
	}
	if c.SKU == "" {
		c.SKU = DefaultSKU
	}
	if c.Version == 0 {
		c.Version = 1
	}
	return c
}

// Validate checks c (after defaults) and names the setting to fix.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if err := checkLoopback(c.Listen); err != nil {
		bad("--listen / %s %q: %v", EnvListen, c.Listen, err)
	}
	if len(c.RedisAddrs) == 0 {
		bad("no Redis addresses: give --redis-addrs host:port,... or %s", EnvRedisAddrs)
	}
	for _, a := range c.RedisAddrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad("Redis address %q: want host:port (%v)", a, err)
		}
	}
	if c.Timeout < 0 || c.RedisTimeout < 0 || c.RedisTimeout > c.Timeout {
		bad("--timeout %s and --redis-timeout %s: want 0 < redis-timeout <= timeout", c.Timeout, c.RedisTimeout)
	}
	if c.MaxSends < 1 || c.MaxSends > 5 {
		bad("--max-sends %d: want 1..5 (a bounded re-send)", c.MaxSends)
	}
	if err := lua.ValidateID("sku", c.SKU); err != nil {
		bad("--sku: %v", err)
	}
	if c.Version < 1 {
		bad("--activity-version %d: want a positive version", c.Version)
	}
	if c.ReservationTTL < 0 || c.BreakerHold < 0 || c.SKUBreakerHold < 0 {
		bad("negative duration: --reservation-ttl %s, breaker holds %s / %s", c.ReservationTTL, c.BreakerHold, c.SKUBreakerHold)
	}
	if c.Defects.Has(DefectBypassToDB) && c.PGURL == "" {
		bad("--defect %s writes orders into the pipeline's PostgreSQL: give --pg URL or %s (the harness sets it when the run has a pipeline)", DefectBypassToDB, EnvPGURL)
	}
	return errors.Join(errs...)
}

// checkLoopback accepts host:port with a loopback IP host (the harness
// and its services live on 127.0.0.1).
func checkLoopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("want 127.0.0.1:PORT (%v)", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("the service listens on a loopback address only: want 127.0.0.1:PORT")
	}
	return nil
}

// SplitAddrs splits a comma-separated address list, dropping empty items.
func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
