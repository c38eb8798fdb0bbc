package history

import (
	"fmt"
	"testing"
)

// redisErr is an error Redis answered (go-redis' redis.Error).
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// A Redis error is classed by Redis' own words, also when the caller
// wrapped it: a status query's CLUSTERDOWN during a failover is the
// cluster's refusal, not an error of the path under test.
func TestClassifyReadsRedisWordsThroughAWrap(t *testing.T) {
	for _, c := range []struct {
		err  error
		want ErrClass
	}{
		{redisErr("CLUSTERDOWN The cluster is down"), ErrClusterDown},
		{fmt.Errorf("look up request r3027: %w", redisErr("CLUSTERDOWN The cluster is down")), ErrClusterDown},
		{fmt.Errorf("look up request r1: %w", redisErr("TRYAGAIN Multiple keys request during rehashing of slot")), ErrTryAgain},
		{fmt.Errorf("look up request r1: %w", redisErr("WRONGTYPE Operation against a key holding the wrong kind of value")), ErrOther},
	} {
		if out, class := Classify(c.err); out != OutcomeError || class != c.want {
			t.Errorf("Classify(%q) = %v %s, want ERROR %s", c.err, out, class, c.want)
		}
	}
}
