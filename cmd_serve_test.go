package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill-harness/sut/serve"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeBadInputExitsTwoNamingTheFix(t *testing.T) {
	t.Setenv(serve.EnvRedisAddrs, "")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--redis-addrs", "127.0.0.1:1", "--defect", "nope"}, serve.DefectNames()},
		{[]string{"serve", "--redis-addrs", "127.0.0.1:1", "--defect", "fail-open,nope"}, []string{`"nope"`, "fail-open"}},
		{[]string{"serve"}, []string{"--redis-addrs", serve.EnvRedisAddrs}},
		{[]string{"serve", "--redis-addrs", "127.0.0.1:1", "--listen", "0.0.0.0:8080"}, []string{"loopback", "127.0.0.1:PORT"}},
	} {
		code, _, errOut := cliSplit(t, c.args...)
		if code != exitHarnessError {
			t.Errorf("%v: exit %d, want 2\n%s", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr does not name %q:\n%s", c.args, w, errOut)
			}
		}
	}
}

// serve with an unreachable cluster (from the environment the harness
// gives a child) starts, refuses readiness (healthz 503), answers a
// reserve SYSTEM_BUSY, and ends cleanly (exit 0) when its context does.
func TestServeUnreachableClusterRefusesReadiness(t *testing.T) {
	t.Setenv(serve.EnvListen, "127.0.0.1:0")
	t.Setenv(serve.EnvRedisAddrs, "127.0.0.1:1")
	t.Setenv(serve.EnvSecret, "s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--timeout", "500ms", "--redis-timeout", "200ms"}, io.Discard, &stderr)
	}()
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	var url string
	for end := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("serve ended with %d before listening:\n%s", code, stderr.String())
		default:
		}
	}
	if url == "" {
		t.Fatalf("serve never said where it listens:\n%s", stderr.String())
	}
	c := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < 3; i++ {
		resp, err := c.Get(url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("healthz with no cluster: %d, want 503", resp.StatusCode)
		}
	}
	resp, err := c.Post(url+"/v1/reserve", "application/json", strings.NewReader(`{"activity_id":"a1","user_id":"u1","request_id":"r1"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"SYSTEM_BUSY"`) || !strings.Contains(string(body), `"request_id":"r1"`) {
		t.Fatalf("reserve with no cluster: %d %s; want 503 SYSTEM_BUSY for r1", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitPass {
			t.Fatalf("serve ended with exit %d after its context ended:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
}
