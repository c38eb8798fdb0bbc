#!/bin/sh
# Builds, without any image registry, the two images the Docker tests and
# the compose file need, from what this machine has:
#
#   REDIS_IMAGE      (default seckill-harness-local/redis:<redis-server version>)
#                    FROM scratch: Debian's /usr/bin/redis-server and
#                    redis-cli, the shared libraries ldd names for them, and
#                    busybox-static's /bin/busybox as /bin/sh (compose healthchecks and
#                    commands run "sh -c"). Same redis-server as the local
#                    provider runs.
#   POSTGRES_IMAGE   (default seckill-harness-local/postgres:<postgres version>)
#                    FROM scratch: Debian's PostgreSQL server (the newest
#                    /usr/lib/postgresql/<major>: postgres, initdb, the
#                    server's modules but the LLVM JIT, its share directory),
#                    the shared libraries ldd names for them, /usr/share/zoneinfo/UTC,
#                    busybox-static as /bin/sh, a "postgres" user (uid 999)
#                    it runs as, and /docker-entrypoint.sh: initdb of
#                    $PGDATA (default /tmp/pgdata; trust, user $POSTGRES_USER,
#                    default seckill) then postgres listening on 127.0.0.1
#                    port $PGPORT (default 5432), meant for --network host.
#                    Same PostgreSQL as the local provider runs.
#   TOXIPROXY_IMAGE  (default seckill-harness-local/toxiproxy:<go.mod version>)
#                    FROM scratch: a static toxiproxy-server built with
#                    `go build` from github.com/Shopify/toxiproxy/v2/cmd/server
#                    at the version go.mod requires; entrypoint /toxiproxy
#                    (as in the official image).
#
# An image whose tag already exists is not rebuilt (FORCE=1 rebuilds).
# Usage: build-images.sh [redis|postgres|toxiproxy|all]   (from anywhere in the repo)
# Prints "<tag> built in <s>s" or "<tag> present".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
what=${1:-all}
# What the images are built from (redis-server, PostgreSQL, a static
# busybox) and the engine: installed when missing, as make deps-docker does.
sh "$repo/testdata/install-packages.sh" PKGS_RUN PKGS_PG PKGS_DOCKER

redis_version=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
toxi_version=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/Shopify/toxiproxy/v2)
REDIS_IMAGE=${REDIS_IMAGE:-seckill-harness-local/redis:$redis_version}
TOXIPROXY_IMAGE=${TOXIPROXY_IMAGE:-seckill-harness-local/toxiproxy:$toxi_version}
pg_dir=$(ls -d /usr/lib/postgresql/*/ 2>/dev/null | sort -V | tail -n 1)
pg_dir=${pg_dir%/}
pg_version=$( [ -n "$pg_dir" ] && "$pg_dir/bin/postgres" --version | sed -n 's/.* \([0-9][0-9.]*\).*/\1/p')
POSTGRES_IMAGE=${POSTGRES_IMAGE:-seckill-harness-local/postgres:${pg_version:-none}}

present() { [ "${FORCE:-0}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

dbuild() { # docker build of $ctx as $1; its output only when it fails
	if ! docker build -t "$1" "$ctx" >"$ctx/build.log" 2>&1; then
		cat "$ctx/build.log" >&2
		exit 1
	fi
}

copy_with_parents() { # copy file $1 (following links) to $ctx/<same path>
	mkdir -p "$ctx/root$(dirname "$1")"
	cp -L "$1" "$ctx/root$1"
}

static_busybox() { # copies busybox-static's /bin/busybox to $ctx/root/bin with the applets $@
	busybox=/bin/busybox
	if ldd "$busybox" >/dev/null 2>&1; then # ldd fails on a static executable
		echo "$busybox is not a static executable although busybox-static is installed (dpkg -S $busybox names the package that replaced it)" >&2
		exit 1
	fi
	mkdir -p "$ctx/root/bin"
	cp "$busybox" "$ctx/root/bin/busybox"
	for app in "$@"; do ln -s busybox "$ctx/root/bin/$app"; done
}

build_redis() {
	if present "$REDIS_IMAGE"; then echo "$REDIS_IMAGE present"; return; fi
	t0=$(date +%s)
	rm -rf "$ctx/root" && mkdir -p "$ctx/root/bin" "$ctx/root/data" "$ctx/root/tmp"
	for bin in /usr/bin/redis-server /usr/bin/redis-cli; do
		copy_with_parents "$bin"
		for lib in $(ldd "$bin" | awk '/=> \//{print $3} /^\t\//{print $1}'); do
			copy_with_parents "$lib"
		done
	done
	static_busybox sh grep echo cat ls sleep
	cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY root/ /
ENV PATH=/usr/bin:/bin
WORKDIR /data
LABEL org.opencontainers.image.description="Debian redis-server $redis_version, built locally by seckill-harness"
CMD ["redis-server"]
DOCKERFILE
	dbuild "$REDIS_IMAGE"
	echo "$REDIS_IMAGE built in $(($(date +%s) - t0))s"
}

copy_libs_of() { # copy $1 and the shared libraries ldd names for it
	copy_with_parents "$1"
	for lib in $(ldd "$1" | awk '/=> \//{print $3} /^\t\//{print $1}'); do
		[ -e "$ctx/root$lib" ] || copy_with_parents "$lib"
	done
}

build_postgres() {
	if present "$POSTGRES_IMAGE"; then echo "$POSTGRES_IMAGE present"; return; fi
	if [ -z "$pg_dir" ] || [ ! -x "$pg_dir/bin/postgres" ]; then
		echo "PostgreSQL server binaries not found under /usr/lib/postgresql although PKGS_PG is installed" >&2
		exit 1
	fi
	t0=$(date +%s)
	major=$(basename "$pg_dir")
	rm -rf "$ctx/root" && mkdir -p "$ctx/root/tmp" "$ctx/root/etc"
	chmod 1777 "$ctx/root/tmp"
	for bin in postgres initdb; do copy_libs_of "$pg_dir/bin/$bin"; done
	for mod in "$pg_dir"/lib/*.so; do
		case "$(basename "$mod")" in llvmjit*) continue ;; esac
		copy_libs_of "$mod"
	done
	mkdir -p "$ctx/root/usr/share/postgresql" "$ctx/root/usr/share/zoneinfo"
	cp -rL "/usr/share/postgresql/$major" "$ctx/root/usr/share/postgresql/"
	cp -L /usr/share/zoneinfo/UTC "$ctx/root/usr/share/zoneinfo/UTC"
	static_busybox sh cat echo ls sleep
	echo 'root:x:0:0:root:/:/bin/sh' >"$ctx/root/etc/passwd"
	echo 'postgres:x:999:999:PostgreSQL:/tmp:/bin/sh' >>"$ctx/root/etc/passwd"
	printf 'root:x:0:\npostgres:x:999:\n' >"$ctx/root/etc/group"
	cat >"$ctx/root/docker-entrypoint.sh" <<'ENTRYPOINT'
#!/bin/sh
set -e
PGDATA=${PGDATA:-/tmp/pgdata}
if [ "${1:-}" = postgres ]; then shift; fi  # the official image's convention: CMD ["postgres", options…]
if ! initdb -D "$PGDATA" -A trust -U "${POSTGRES_USER:-seckill}" -E UTF8 --locale=C --no-sync >/tmp/initdb.log 2>&1; then
	cat /tmp/initdb.log >&2
	exit 1
fi
exec postgres -D "$PGDATA" -k /tmp -c listen_addresses=127.0.0.1 -p "${PGPORT:-5432}" "$@"
ENTRYPOINT
	chmod 755 "$ctx/root/docker-entrypoint.sh"
	cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY root/ /
ENV PATH=$pg_dir/bin:/bin TZ=UTC
USER 999:999
WORKDIR /tmp
LABEL org.opencontainers.image.description="Debian PostgreSQL $pg_version, built locally by seckill-harness"
ENTRYPOINT ["/docker-entrypoint.sh"]
DOCKERFILE
	dbuild "$POSTGRES_IMAGE"
	echo "$POSTGRES_IMAGE built in $(($(date +%s) - t0))s"
}

build_toxiproxy() {
	if present "$TOXIPROXY_IMAGE"; then echo "$TOXIPROXY_IMAGE present"; return; fi
	t0=$(date +%s)
	rm -rf "$ctx/root" && mkdir -p "$ctx/root"
	(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
		-o "$ctx/root/toxiproxy" github.com/Shopify/toxiproxy/v2/cmd/server)
	cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY root/toxiproxy /toxiproxy
LABEL org.opencontainers.image.description="toxiproxy-server $toxi_version, built locally by seckill-harness"
ENTRYPOINT ["/toxiproxy"]
CMD ["-host=127.0.0.1", "-port=8474"]
DOCKERFILE
	dbuild "$TOXIPROXY_IMAGE"
	echo "$TOXIPROXY_IMAGE built in $(($(date +%s) - t0))s"
}

case "$what" in
redis) build_redis ;;
postgres) build_postgres ;;
toxiproxy) build_toxiproxy ;;
all) build_redis; build_postgres; build_toxiproxy ;;
*) echo "usage: $0 [redis|postgres|toxiproxy|all]" >&2; exit 2 ;;
esac
