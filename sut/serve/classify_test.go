package serve

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

// redisErr is an error Redis answered, as go-redis types it (redis.Error).
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

var _ redis.Error = redisErr("")

// The degradation table's sorting of the errors a script call can end
// with (the texts are Redis 7's own).
func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, c := range []struct {
		err  error
		want failure
	}{
		{nil, failNone},
		{&lua.OutcomeUnknownError{Cmd: "evalsha", Addr: "127.0.0.1:7000"}, failUnknown},
		{fmt.Errorf("wrapped: %w", &lua.OutcomeUnknownError{Cmd: "evalsha"}), failUnknown},
		{dial, failConn},
		{redis.ErrPoolTimeout, failConn},
		{redisErr("CLUSTERDOWN Hash slot not served"), failClusterDown},
		{redisErr("CLUSTERDOWN The cluster is down"), failClusterDown},
		{redisErr("OOM command not allowed when used memory > 'maxmemory'."), failOOM},
		{redisErr("CROSSSLOT Keys in request don't hash to the same slot"), failCrossSlot},
		{redisErr("ERR Script attempted to access keys that do not hash to the same slot script: 5977, on @user_script:2."), failCrossSlot},
		{redisErr("ERR Script attempted to access a non local key in a cluster node script"), failCrossSlot},
		{redisErr("MOVED 1206 127.0.0.1:7001"), failRedirect},
		{redisErr("ASK 1206 127.0.0.1:7001"), failRedirect},
		{redisErr("TRYAGAIN Multiple keys request during rehashing of slot"), failRedirect},
		{redisErr("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), failRedirect},
		{redisErr("LOADING Redis is loading the dataset in memory"), failRedirect},
		{redisErr("READONLY You can't write against a read only replica."), failRedirect},
		{redisErr("ERR user_script:1: Script attempted to access nonexistent global variable 'x'"), failOther},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	for _, f := range []failure{failConn, failClusterDown} {
		if !reachability(f) {
			t.Errorf("%s is not a reachability failure: fail-open would not answer it", f)
		}
	}
	for _, f := range []failure{failUnknown, failOOM, failCrossSlot, failRedirect, failOther} {
		if reachability(f) {
			t.Errorf("%s counted as unreachable Redis", f)
		}
	}
}
