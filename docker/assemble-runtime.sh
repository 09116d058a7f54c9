#!/usr/bin/env bash
# Assembles what the runtime image holds into <dir>: the bundles of the pserver, the master,
# pserverctl and the checkpoint tool (dist/, built beforehand with `nx build`), the example trainer,
# and node_modules/ with the production dependencies only. The Dockerfile runs it, and
# so does the test that starts the bundles from a clean directory.
#   docker/assemble-runtime.sh <dir>
set -euo pipefail
out=${1:?usage: assemble-runtime.sh <dir>}
root=$(cd "$(dirname "$0")/.." && pwd)
# Production only: the servers, the operator's ctl and the checkpoint tool (not the demo).
apps=(pserver master pserverctl)
for app in "${apps[@]}"; do
  [ -f "$root/dist/apps/$app/main.js" ] ||
    { echo "assemble-runtime: build first: npx nx run-many -t build -p ${apps[*]} && npx nx run tools:build-ckpt" >&2; exit 1; }
done
[ -f "$root/dist/tools/ckpt.js" ] ||
  { echo "assemble-runtime: build the checkpoint tool first: npx nx run tools:build-ckpt" >&2; exit 1; }

mkdir -p "$out/deps"
# npm needs every workspace's package.json to read the lockfile; their sources are not needed.
cp "$root/package.json" "$root/package-lock.json" "$out/deps/"
for dir in "$root"/apps/* "$root"/libs/* "$root/proto" "$root/tools"; do
  rel=${dir#"$root"/}
  mkdir -p "$out/deps/$rel"
  cp "$dir/package.json" "$out/deps/$rel/"
done
(cd "$out/deps" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)
rm -rf "$out/node_modules"
mv "$out/deps/node_modules" "$out/node_modules"
rm -rf "$out/deps"
# The workspace links point at sources that are not shipped; the bundles do not need them.
find "$out/node_modules/@pserver" -maxdepth 1 -type l -delete 2>/dev/null || true
rm -rf "$out/dist"
mkdir -p "$out/dist/apps" "$out/dist/tools"
for app in "${apps[@]}"; do cp -r "$root/dist/apps/$app" "$out/dist/apps/"; done
cp "$root/dist/tools/ckpt.js" "$root/dist/tools/ckpt.js.map" "$out/dist/tools/"
# The example trainer, which the Kubernetes job of docker/k8s runs.
[ -d "$root/dist/examples" ] && cp -r "$root/dist/examples" "$out/dist/"
echo "assemble-runtime: $out"
