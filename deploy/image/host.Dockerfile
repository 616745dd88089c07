# The image of Dockerfile built offline, FROM scratch, from a root file system that rootfs.sh
# assembled out of this machine's files: the limitbench binary, redis-server and redis-sentinel
# with the libraries they link (real files, never symlinks), /etc/passwd and /etc/group with the
# user limitbench (uid 10001), CA certificates, a writable /tmp and /work. make image uses it when
# the base images of Dockerfile are not present locally; nothing is pulled. Build context: the
# root file system's parent directory (make image: bin/image/).
FROM scratch
COPY rootfs/ /
COPY --chown=10001:10001 rootfs/work /work
ARG VERSION=devel
LABEL org.opencontainers.image.title="limitbench" \
      org.opencontainers.image.description="limitbench with redis-server and redis-sentinel: load tests and verifies Redis rate limiters with the process backend (built from the build machine's files)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/limitbench/limitbench"
ENV PATH=/usr/local/bin:/usr/bin:/bin
USER 10001:10001
WORKDIR /work
ENV HOME=/work
ENTRYPOINT ["/usr/local/bin/limitbench"]
CMD ["--help"]
