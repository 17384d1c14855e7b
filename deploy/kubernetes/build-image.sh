#!/bin/sh
# Build the virtflow image from deploy/Dockerfile with docker or podman, tagged
# as deploy/kubernetes/base/kustomization.yaml's images: entry names it (override
# with IMAGE=registry/name:tag). Exit 77 (skip) when neither has a daemon.
# Usage: deploy/kubernetes/build-image.sh [--push]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ -z "${IMAGE:-}" ]; then
    name=$(sed -n 's/^ *newName: *//p' "$here/base/kustomization.yaml" | head -n1)
    tag=$(sed -n 's/^ *newTag: *//p' "$here/base/kustomization.yaml" | head -n1)
    IMAGE="$name:$tag"
fi
engine=
for candidate in docker podman; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" info >/dev/null 2>&1; then
        engine=$candidate
        break
    fi
done
if [ -z "$engine" ]; then
    echo "build-image.sh: no docker or podman with a running daemon: not building $IMAGE" >&2
    exit 77
fi
"$engine" build -f "$root/deploy/Dockerfile" -t "$IMAGE" "$root"
echo "built $IMAGE with $engine"
if [ "${1:-}" = "--push" ]; then
    "$engine" push "$IMAGE"
fi
