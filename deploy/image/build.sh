#!/usr/bin/env bash
# build.sh: what `make image` runs. Builds $IMAGE:$VERSION, also tagged $IMAGE:latest: limitbench,
# redis-server and redis-sentinel, run as the non-root user limitbench. FROM says how:
#   registry  Dockerfile, from the public base images golang:1.26-bookworm and debian:bookworm-slim
#             (pulled if absent: a machine with a registry)
#   host      host.Dockerfile, FROM scratch from this machine's files (rootfs.sh); pulls nothing
#   auto      registry when both base images are present locally, else host (the default)
# It prints which it took. Environment: IMAGE (limitbench), VERSION (required), COMMIT, DATE,
# FROM (auto), GO (go). Run from the repository's root.
set -euo pipefail
IMAGE=${IMAGE:-limitbench}
FROM=${FROM:-auto}
GO=${GO:-go}
: "${VERSION:?VERSION is required}"
COMMIT=${COMMIT:-}
DATE=${DATE:-}
go_image=golang:1.26-bookworm
base_image=debian:bookworm-slim
pkg=github.com/limitbench/limitbench/internal/version
ldflags="-s -w -X $pkg.version=$VERSION -X $pkg.commit=$COMMIT -X $pkg.date=$DATE"

if ! docker info >/dev/null 2>&1; then
  echo "make image: no Docker engine answers (docker info failed): start one, or set DOCKER_HOST" >&2
  exit 3
fi
case $FROM in
auto)
  if docker image inspect "$go_image" "$base_image" >/dev/null 2>&1; then
    FROM=registry why="$go_image and $base_image are present locally"
  else
    FROM=host why="$go_image or $base_image is not present locally"
  fi
  ;;
registry | host) why="FROM=$FROM" ;;
*)
  echo "make image: FROM=$FROM: want auto, registry or host" >&2
  exit 2
  ;;
esac
if [ "$FROM" = registry ]; then
  echo "make image: $why: building deploy/image/Dockerfile from the public base images"
else
  echo "make image: $why: building deploy/image/host.Dockerfile FROM scratch from this machine's files"
fi
# The legacy builder where the engine's CLI has no BuildKit (buildx); FROM scratch needs neither.
if ! docker buildx version >/dev/null 2>&1; then
  export DOCKER_BUILDKIT=0
fi

tags=(-t "$IMAGE:$VERSION" -t "$IMAGE:latest")
if [ "$FROM" = registry ]; then
  docker build -f deploy/image/Dockerfile "${tags[@]}" \
    --build-arg "VERSION=$VERSION" --build-arg "COMMIT=$COMMIT" --build-arg "DATE=$DATE" .
else
  ctx=bin/image
  rm -rf "$ctx"
  mkdir -p "$ctx"
  # The engine's platform, for an image whose binaries run on it.
  platform=$(docker version --format '{{.Server.Os}}/{{.Server.Arch}}')
  if [ "$platform" != "$($GO env GOOS)/$($GO env GOARCH)" ]; then
    echo "make image: the engine is $platform, this machine $($GO env GOOS)/$($GO env GOARCH): FROM=host copies this machine's redis-server, so it needs an engine of the same platform; use FROM=registry" >&2
    exit 2
  fi
  CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" -o "$ctx/limitbench" ./cmd/limitbench
  deploy/image/rootfs.sh "$ctx" "$ctx/limitbench"
  rm "$ctx/limitbench"
  cp deploy/image/host.Dockerfile "$ctx/Dockerfile"
  docker build "${tags[@]}" --build-arg "VERSION=$VERSION" "$ctx"
  rm -rf "$ctx"
fi
echo "make image: built $IMAGE:$VERSION and $IMAGE:latest ($FROM)"
