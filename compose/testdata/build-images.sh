#!/bin/sh
# Builds, without any image registry, the two images the Docker tests and
# the compose file need, from what this machine has:
#
#   REDIS_IMAGE      (default seckill-harness-local/redis:<redis-server version>)
#                    FROM scratch: Debian's /usr/bin/redis-server and
#                    redis-cli, the shared libraries ldd names for them, and
#                    busybox-static as /bin/sh (compose healthchecks and
#                    commands run "sh -c"). Same redis-server as the local
#                    provider runs.
#   TOXIPROXY_IMAGE  (default seckill-harness-local/toxiproxy:<go.mod version>)
#                    FROM scratch: a static toxiproxy-server built with
#                    `go build` from github.com/Shopify/toxiproxy/v2/cmd/server
#                    at the version go.mod requires; entrypoint /toxiproxy
#                    (as in the official image).
#
# An image whose tag already exists is not rebuilt (FORCE=1 rebuilds).
# Usage: build-images.sh [redis|toxiproxy|all]   (from anywhere in the repo)
# Prints "<tag> built in <s>s" or "<tag> present".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
what=${1:-all}

redis_version=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
toxi_version=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/Shopify/toxiproxy/v2)
REDIS_IMAGE=${REDIS_IMAGE:-seckill-harness-local/redis:$redis_version}
TOXIPROXY_IMAGE=${TOXIPROXY_IMAGE:-seckill-harness-local/toxiproxy:$toxi_version}

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
	busybox=$(command -v busybox || true)
	if [ -z "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
		echo "a static busybox is needed (apt-get install busybox-static)" >&2
		exit 1
	fi
	cp "$busybox" "$ctx/root/bin/busybox"
	for app in sh grep echo cat ls sleep; do ln -s busybox "$ctx/root/bin/$app"; done
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
toxiproxy) build_toxiproxy ;;
all) build_redis; build_toxiproxy ;;
*) echo "usage: $0 [redis|toxiproxy|all]" >&2; exit 2 ;;
esac
