# Two commands a fresh Debian machine needs: `make run` and `make test`, with
# Go $(GO_NEEDED) or newer (go.mod's go line) on PATH or in /usr/local/go/bin.
# Every Debian package a target or a test needs is listed below, in PKGS_*,
# and nowhere else; the target that needs it installs what is missing with
# testdata/install-packages.sh (one apt-get update, noninteractive apt-get
# install -y; run as root). The test scripts (compose/testdata,
# reports/testdata) call the same helper with the same variable names when
# run alone.

export PATH := $(PATH):/usr/local/go/bin
GO        ?= go
BIN       := bin/seckill-harness
GOFLAGS   ?=
# -p 3: three test packages at once. The suite mostly waits (loads paced in
# real time, clusters starting, failovers settling): with go test's default
# of one package per core it kept the two cores about half busy and took
# ~14 minutes; a starved run's latency checks are inconclusive, never failed.
TESTFLAGS ?= -count=1 -timeout 14m -p 3
# The unit tier: go test -short under the race detector; every test that
# needs a real part (redis-server, PostgreSQL, Docker, chromium, root)
# skips, saying so (internal/clustertest.Need).
UNITFLAGS ?= -count=1 -timeout 5m
# The packages whose integration tests test-race runs under the race
# detector: the engine, the checks, the pipeline, the faults, the scripts.
RACE_PKGS ?= ./runner ./checks ./sut/pipeline ./faults ./lua
RACEFLAGS ?= -count=1 -timeout 30m -p 2

IMAGE     ?= seckill-harness:dev
IMAGE_CONTEXT ?= bin/image
GO_NEEDED := $(shell sed -n 's/^go //p' go.mod)

# The Debian packages, by what needs them (one line each: the helper reads
# them from here). PKGS_RUN: `make run` and every test (redis-server;
# redis-cli and redis-benchmark from redis-tools). PKGS_PG: the pipeline's
# throwaway PostgreSQL (initdb from /usr/lib/postgresql/<version>/bin).
# PKGS_BROWSER: the HTML test loads report.html in headless chromium.
# PKGS_DOCKER: the Docker tests, `make docker-images` and `make image`: the
# engine, docker-compose, and a static busybox as /bin/sh in the images
# compose/testdata/build-images.sh builds.
PKGS_RUN     := redis-server redis-tools
PKGS_PG      := postgresql
PKGS_BROWSER := chromium fonts-liberation
PKGS_DOCKER  := docker.io docker-compose busybox-static
PKGS_TEST    := $(PKGS_RUN) $(PKGS_PG) $(PKGS_BROWSER) $(PKGS_DOCKER)
INSTALL_PKGS := sh testdata/install-packages.sh

.PHONY: all check-go deps deps-run deps-pg deps-test deps-docker build catalogue service-nightly run test test-unit test-race vet fmt-check bench clean docker-images image

all: build

## check-go: the Go toolchain go.mod asks for.
check-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "Go $(GO_NEEDED) or newer (go.mod) is not on PATH nor in /usr/local/go/bin: the one prerequisite no target installs (Debian's golang-go is older; https://go.dev/dl/)"; exit 1; }
	@$(GO) version

## deps-run: what `make run` needs: Go and PKGS_RUN. The default run starts no
## PostgreSQL and opens no browser.
deps-run: check-go
	@$(INSTALL_PKGS) PKGS_RUN
	@redis-server --version

## deps-pg: deps-run plus PKGS_PG (the pipeline's orders: the harness starts
## its own throwaway PostgreSQL, initdb into a temp dir, from
## /usr/lib/postgresql/<version>/bin; the package's own cluster is not used).
deps-pg: deps-run
	@$(INSTALL_PKGS) PKGS_PG
	@ls -d /usr/lib/postgresql/*/bin/initdb | tail -1 | xargs -I{} sh -c '{} --version'

## deps-test: everything `make test` needs (PKGS_TEST), with one apt-get
## update when something is missing. The harness starts its own throwaway
## PostgreSQL (initdb into a temp dir); the package's own cluster is not used.
deps-test: check-go
	@$(INSTALL_PKGS) PKGS_TEST
	@redis-server --version
	@ls -d /usr/lib/postgresql/*/bin/initdb | tail -1 | xargs -I{} sh -c '{} --version'
	@chromium --version 2>/dev/null || true
	@docker --version; busybox 2>&1 | head -1

## deps-docker: what the Docker targets need (PKGS_RUN, PKGS_PG: the images
## are built from this machine's redis-server and PostgreSQL; PKGS_DOCKER).
deps-docker: check-go
	@$(INSTALL_PKGS) PKGS_RUN PKGS_PG PKGS_DOCKER

## deps: everything (deps-test), as before the split.
deps: deps-test

## build: compile bin/seckill-harness.
build:
	$(GO) build $(GOFLAGS) -o $(BIN) .

## run: the main job on the embedded default: a local 3x1 cluster it starts and
## removes, 20,000 users against stock 1,000 in 2 buckets at 2,000 req/s for 10 s.
run: deps-run build
	./$(BIN) run --out out --history history.jsonl

## catalogue: every built-in scenario and suite on the reference path, each
## held to its own expectation (pass, or its declared expect_fail); one table,
## out/catalogue/junit.xml; exit 1 on an unexpected outcome (~15 minutes).
## REPEAT=N runs it N times (the table says how many runs held, e.g. 3/3);
## STRESS=1 runs it with a busy loop per core, ended by PID at the end.
REPEAT ?= 1
STRESS ?=
catalogue: deps-pg build
	./$(BIN) catalogue --repeat $(REPEAT) $(if $(filter 1 yes true,$(STRESS)),--stress) --out out/catalogue

## service-nightly: nightly-ci through the project's reference access service:
## 'seckill-harness serve' as the --service-cmd child (its Redis client routed
## through the faults' proxies), spoken to over HTTP with
## docs/services/serve.yaml (state: reference: the state checks and the
## pipeline member run too); exit 1 on a failed check (~2 minutes).
service-nightly: deps-pg build
	./$(BIN) run nightly-ci --service-cmd '$(CURDIR)/$(BIN) serve' --service-mapping docs/services/serve.yaml --out out/service-nightly

## vet, fmt-check: the house checks.
vet:
	$(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## test-unit: the unit tier: every package's tests with -short under the race
## detector. No root, no Redis, no PostgreSQL, no Docker, no network beyond
## 127.0.0.1 listeners inside the test binary; installs nothing. A test that
## needs a real part skips: "integration test (needs redis-server): run make test".
## The race build is its cost: 439 s on 2 cores from an empty build cache,
## 180 s after a change to a package most others import (history), 20-60 s
## when nothing changed. Not part of `make test` (every test it runs, make
## test runs too, without -race); the nightly race workflow runs it.
test-unit: check-go
	$(GO) test -short -race $(UNITFLAGS) ./...

## test-race: the integration tests of RACE_PKGS (engine, checks, pipeline,
## faults, scripts) on real clusters and a real PostgreSQL under the race
## detector (~8 minutes on a busy 2-core machine). Not part of `make test`
## (it would take the suite past 15 minutes on 2 cores): the nightly
## workflow (.github/workflows/nightly-race.yml) runs it, after test-unit.
test-race: deps-pg
	$(GO) test -race $(RACEFLAGS) $(RACE_PKGS)

## test: every package's tests, the unit tests with them, against real
## redis-server processes and a real PostgreSQL, after vet and the gofmt
## check. Without -race: the race detector's second build of every package
## and its dependencies took the suite past 15 minutes on 2 cores (see
## test-unit); the nightly race workflow runs test-unit and test-race.
## The Docker tests (go test -run 'Docker|Compose|Image|Kube') need an engine:
## deps-test installs PKGS_DOCKER, compose/testdata/ensure-docker.sh starts dockerd
## (--bridge=none --iptables=false: host network only) when none answers, and
## this target stops the dockerd it started, whatever the tests' outcome.
## Without root or the package the Docker tests skip, naming the reason.
test: deps-test vet fmt-check
	@state=$$(sh compose/testdata/ensure-docker.sh start 2>&1 | tail -1); echo "docker engine: $$state"; \
	$(GO) test $(TESTFLAGS) ./...; rc=$$?; \
	if [ "$$state" = started ]; then sh compose/testdata/ensure-docker.sh stop; fi; \
	exit $$rc

## docker-images: build the Redis (Debian redis-server) and toxiproxy (go.mod
## version) images locally, for machines that reach no registry; cached by tag.
docker-images: deps-docker
	@sh compose/testdata/ensure-docker.sh start >/dev/null
	@sh compose/testdata/build-images.sh all

## bench: performance goals (not in make test): harness vs redis-benchmark on one
## master, three paired rounds unpinned and three on the fair stand (the
## redis-servers on the first CPU, the generator, harness or redis-benchmark,
## on the others: sched_setaffinity from the benchmark itself, nothing to
## install; the split and the load average at the start of each pair are
## printed): throughput ratio (pinned target >= 0.95), client CPU per reserve
## over redis-benchmark's own per request (target <= 2.0), history bytes
## per op, peak RSS of a 1,000,000-op run, the open-loop headroom (highest rate
## paced with <= 1% of starts > 1 ms late) unpinned and pinned, each beside a
## closed loop and a 4,000 ops/s paced run of the same settings on the same
## stand: client CPU per paced op over the closed loop's (target <= 1.5) and
## headroom over the closed loop's throughput (pinned target >= 0.6), the two
## stands' figures printed side by side; client CPU and allocations per op of
## the closed loop, a 5-minute soak at 2,000 ops/s with its history spooled,
## projected to one hour (SECKILL_SOAK_DURATION shortens it; target < 400 MB);
## then the first second's p99 over the median per-second p99 of whole runs on
## an idle local cluster at 2,000 req/s (target <= 2) with the warm-up's time;
## then each component of the reserve hot path alone (ns/op, allocs/op); then
## the HTTP path against vegeta's own attacker, both sending the same requests
## to the reference service (`serve`, a child process): the highest rate the
## harness paces with <= 1% of starts > 1 ms late, vegeta's rate at the same
## p99, their ratio (target >= 0.9), p50/p99 and client CPU per request of
## each (SECKILL_HTTP_BENCH_TRIAL lengthens its 3 s trials); last,
## the redis-benchmark ratio, the closed loop and the headroom again with GOMAXPROCS=1 (one Go thread
## running code: on a machine the local cluster shares, the client then takes
## fewer cores from the servers it measures).
## Run it on a quiet machine: every figure but allocs/op depends on free cores.
bench: deps-run
	@uptime
	$(GO) test -run '^$$' -bench . -skip 'Component' -benchtime 1x -count=1 -timeout 30m ./runner/
	$(GO) test -run '^$$' -bench 'FirstSecondP99' -benchtime 1x -count=1 -timeout 10m ./runner/lifecycle/
	$(GO) test -run '^$$' -bench 'Component' -benchmem -benchtime 2000x -count=1 -timeout 10m ./runner/
	$(GO) test -run '^$$' -bench 'HTTPPathVsVegeta' -benchtime 1x -count=1 -timeout 10m ./sut/httpsut/
	GOMAXPROCS=1 $(GO) test -run '^$$' -bench 'ReserveVsRedisBenchmark|ClosedLoopClientCost|OpenLoopHeadroom' -benchtime 1x -count=1 -timeout 20m ./runner/
	@uptime

## image: the harness as a Docker image (Dockerfile: FROM scratch, one static
## binary compiled here without symbol tables, no registry needed), tagged
## $(IMAGE); the build context is the directory $(IMAGE_CONTEXT) (emptied first).
image: check-go
	@$(INSTALL_PKGS) PKGS_DOCKER
	@sh compose/testdata/ensure-docker.sh start >/dev/null
	rm -rf $(IMAGE_CONTEXT) && mkdir -p $(IMAGE_CONTEXT)/tmp $(IMAGE_CONTEXT)/out
	CGO_ENABLED=0 $(GO) build $(GOFLAGS) -ldflags "-s -w" -o $(IMAGE_CONTEXT)/seckill-harness .
	docker build -q -t $(IMAGE) -f Dockerfile $(IMAGE_CONTEXT)

clean:
	rm -rf bin out
