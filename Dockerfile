# The harness as an image: one static binary, nothing else (about 34 MB).
# Built by `make image` from a binary compiled on the host
# (CGO_ENABLED=0, -ldflags "-s -w"), so it needs no base image and no
# registry:
#
#   make image IMAGE=seckill-harness:dev
#   docker run --rm --network host seckill-harness:dev \
#       run smoke --cluster redis://127.0.0.1:7001 --out /out
#
# It drives clusters it does not start (--cluster redis://…, rediss://…)
# and a toxiproxy server (--toxiproxy http://…); --cluster local needs
# redis-server, which this image does not carry. Use the host network so
# the addresses a Redis Cluster announces (127.0.0.1:port) are the same
# inside the container as on the host.
FROM scratch
COPY seckill-harness /seckill-harness
COPY tmp/ /tmp/
COPY out/ /out/
ENV TMPDIR=/tmp
WORKDIR /out
ENTRYPOINT ["/seckill-harness"]
CMD ["--help"]
