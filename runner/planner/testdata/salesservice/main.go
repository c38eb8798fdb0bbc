// salesservice is the service child of runner/planner's setup tests: a
// service with its own admin API that must be given its sale before it
// sells anything. POST /admin/sales {"sale": ID, "units": N} creates sale
// ID with N units, DELETE /admin/sales/ID removes it; its keys live in
// Redis (SECKILL_REDIS_ADDRS) under its own hash tag {sales}. POST
// /v1/reserve speaks the HTTP contract's reserve (one unit per user;
// INVALID for a sale it was never given). Each admin call is a line on
// stderr ("salesservice: setup sale=ID units=N", "salesservice: teardown
// sale=ID removed=K"). With -fail-setup the admin API answers 500 with a
// 100 KiB body.
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

var reserve = redis.NewScript(`
local units = redis.call('GET', KEYS[1])
if not units then return -1 end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return -2 end
if tonumber(units) <= 0 then return 0 end
redis.call('DECR', KEYS[1])
redis.call('SADD', KEYS[2], ARGV[1])
return 1`)

func keys(sale string) []string {
	return []string{"{sales}:" + sale + ":units", "{sales}:" + sale + ":buyers"}
}

func main() {
	failSetup := flag.Bool("fail-setup", false, "answer 500 (with a 100 KiB body) on the admin API")
	flag.Parse()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv("SECKILL_REDIS_ADDRS"), ","), ReadTimeout: time.Second})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if rdb.Ping(r.Context()).Err() != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("POST /admin/sales", func(w http.ResponseWriter, r *http.Request) {
		if *failSetup {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(strings.Repeat("Z", 100<<10)))
			return
		}
		var in struct {
			Sale  string `json:"sale"`
			Units int64  `json:"units"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Sale == "" || in.Units <= 0 {
			http.Error(w, "want {\"sale\": ID, \"units\": N}", http.StatusBadRequest)
			return
		}
		ok, err := rdb.SetNX(r.Context(), keys(in.Sale)[0], in.Units, time.Hour).Result()
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case !ok:
			http.Error(w, "sale exists", http.StatusConflict)
			return
		}
		fmt.Fprintf(os.Stderr, "salesservice: setup sale=%s units=%d\n", in.Sale, in.Units)
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("DELETE /admin/sales/{sale}", func(w http.ResponseWriter, r *http.Request) {
		sale := r.PathValue("sale")
		n, err := rdb.Del(r.Context(), keys(sale)...).Result()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(os.Stderr, "salesservice: teardown sale=%s removed=%d\n", sale, n)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/reserve", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Activity string `json:"activity_id"`
			User     string `json:"user_id"`
			Request  string `json:"request_id"`
		}
		w.Header().Set("Content-Type", "application/json")
		answer := func(status int, code string) {
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "request_id": in.Request, "retryable": code == "SYSTEM_BUSY"})
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			answer(http.StatusBadRequest, "INVALID")
			return
		}
		n, err := reserve.Run(r.Context(), rdb, keys(in.Activity), in.User).Int()
		switch {
		case err != nil:
			answer(http.StatusServiceUnavailable, "SYSTEM_BUSY")
		case n == -1:
			answer(http.StatusBadRequest, "INVALID") // a sale it was never given
		case n == -2:
			answer(http.StatusOK, "USER_ALREADY_RESERVED")
		case n == 0:
			answer(http.StatusOK, "SOLD_OUT")
		default:
			answer(http.StatusOK, "ACCEPTED")
		}
	})
	srv := &http.Server{Addr: os.Getenv("SECKILL_LISTEN"), Handler: mux}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		<-ch
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "salesservice:", err)
		os.Exit(1)
	}
}
