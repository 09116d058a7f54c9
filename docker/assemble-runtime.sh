#!/usr/bin/env bash
# Assembles what the runtime image holds into <dir>: the bundles (dist/, built beforehand with
# `nx build`) and node_modules/ with the production dependencies only. The Dockerfile runs it, and
# so does the test that starts the bundles from a clean directory.
#   docker/assemble-runtime.sh <dir>
set -euo pipefail
out=${1:?usage: assemble-runtime.sh <dir>}
root=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$root/dist/apps/pserver/main.js" ] && [ -f "$root/dist/apps/master/main.js" ] ||
  { echo "assemble-runtime: build first: npx nx run-many -t build -p pserver master" >&2; exit 1; }

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
mkdir -p "$out/dist"
cp -r "$root/dist/apps" "$out/dist/"
[ -d "$root/dist/examples" ] && cp -r "$root/dist/examples" "$out/dist/"
echo "assemble-runtime: $out"
