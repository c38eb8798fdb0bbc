#!/bin/sh
# Ensures a Docker engine answers, for the compose package's Docker tests
# (TestDocker*, TestCompose*, TestImage*), and stops it again afterwards.
#
#   ensure-docker.sh start   install the Makefile's PKGS_DOCKER (docker.io,
#                            docker-compose, busybox-static) with
#                            testdata/install-packages.sh when missing (make
#                            deps-test has already), and start dockerd when
#                            no engine answers: no bridge network, no iptables
#                            changes (--bridge=none --iptables=false
#                            --ip6tables=false), so containers can only use
#                            the host network. Prints "started" when it
#                            started dockerd, "running" when an engine was
#                            already answering.
#   ensure-docker.sh stop    stops the dockerd this script started (its
#                            pidfile), and nothing else.
#
# STATE_DIR (default /tmp/seckill-harness-dockerd) holds the pidfile and
# dockerd.log. Needs root to install or start anything; without root it
# exits 1 with the reason (the tests then skip, naming it).
set -eu
STATE_DIR=${STATE_DIR:-/tmp/seckill-harness-dockerd}
PIDFILE=$STATE_DIR/dockerd.pid
LOG=$STATE_DIR/dockerd.log

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

case "${1:-start}" in
start)
	if command -v docker >/dev/null 2>&1 && engine_answers; then
		echo running
		exit 0
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "no Docker engine answers and not root: start dockerd yourself (dockerd --bridge=none --iptables=false --ip6tables=false) or run as root" >&2
		exit 1
	fi
	sh "$(dirname "$0")/../../testdata/install-packages.sh" PKGS_DOCKER
	mkdir -p "$STATE_DIR"
	if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
		: # started by an earlier call, still coming up
	else
		nohup dockerd --bridge=none --iptables=false --ip6tables=false \
			--pidfile "$STATE_DIR/dockerd.own.pid" >"$LOG" 2>&1 &
		echo $! >"$PIDFILE"
	fi
	i=0
	while ! engine_answers; do
		i=$((i + 1))
		if [ $i -gt 60 ] || ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
			echo "dockerd did not answer within 60 s; last lines of $LOG:" >&2
			tail -20 "$LOG" >&2 || true
			exit 1
		fi
		sleep 1
	done
	echo started
	;;
stop)
	[ -f "$PIDFILE" ] || exit 0
	pid=$(cat "$PIDFILE")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 30 ]; do
			sleep 1
			i=$((i + 1))
		done
	fi
	rm -f "$PIDFILE"
	echo stopped
	;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
