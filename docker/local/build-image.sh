#!/usr/bin/env bash
# Builds docker/Dockerfile with podman on this machine, without a container registry: on the base
# images of base-images.sh (NODE_IMAGE), as the repository's sources stand. Prints the image's name.
#   docker/local/build-image.sh [tag]      # default localhost/pserver:dev
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
tag=${1:-localhost/pserver:dev}
node_image=$("$here/base-images.sh" | sed -n 's/^NODE_IMAGE=//p')
podman build --quiet --file "$here/../Dockerfile" --build-arg "NODE_IMAGE=$node_image" \
  --tag "$tag" "$here/../.." >/dev/null
# The layers of earlier builds, untagged now, would fill the disk build after build.
podman image prune --force >/dev/null
echo "$tag"
