// fakeservice is the service child of sut/servicechild's and the
// lifecycle's tests: it speaks /healthz of the service contract and keeps
// Redis connections busy on SECKILL_REDIS_ADDRS (or, with -bypass, on the
// addresses of FAKE_DIRECT_ADDRS: a service that ignores what it is given).
// /env answers its SECKILL_ environment as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	bypass := flag.Bool("bypass", false, "connect to $FAKE_DIRECT_ADDRS instead of $SECKILL_REDIS_ADDRS")
	exitAtStart := flag.Bool("exit-at-start", false, "write to stderr and exit 3")
	never := flag.Bool("never-ready", false, "answer 503 on /healthz")
	flag.Parse()
	if *exitAtStart {
		fmt.Fprintln(os.Stderr, "fakeservice: cannot read my configuration (deliberately)")
		os.Exit(3)
	}
	addrs := os.Getenv("SECKILL_REDIS_ADDRS")
	if *bypass {
		addrs = os.Getenv("FAKE_DIRECT_ADDRS")
	}
	var rdb *redis.ClusterClient
	if addrs != "" {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ReadTimeout: time.Second})
		go busy(rdb)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if *never || (rdb != nil && rdb.Ping(r.Context()).Err() != nil) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		env := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SECKILL_") {
				env[k] = v
			}
		}
		_ = json.NewEncoder(w).Encode(env)
	})
	srv := &http.Server{Addr: os.Getenv("SECKILL_LISTEN"), Handler: mux}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		<-ch
		fmt.Fprintln(os.Stderr, "fakeservice: SIGTERM, shutting down")
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "fakeservice:", err)
		os.Exit(1)
	}
}

// busy keeps a connection to every master in use: a write on keys of many
// slots every 50ms.
func busy(rdb *redis.ClusterClient) {
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = rdb.Set(ctx, fmt.Sprintf("fakeservice:%d", i%64), i, time.Minute).Err()
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
}
