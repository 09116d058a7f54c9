#!/usr/bin/env bash
# Regenerates pserverpb/ from proto/pserver/v1/*.proto (protoc-gen-go, protoc-gen-go-grpc), and with
# tools/errgen pserver/error_codes.go (a sentinel error per ErrorCode) from pserverpb/errors.pb.go
# and pserver/error_rules.go (each code's client action) from proto/testdata/error_codes.json.
# The generated files are kept in the tree; pserverpb/fresh_test.go fails when they are stale.
#   generate.sh [stubs-dir [sentinels-file]]   (defaults: pserverpb/, pserver/error_codes.go;
#                                               given a stubs-dir only: <stubs-dir>/error_codes.go;
#                                               error_rules.go goes beside error_codes.go)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
out="${1:-$here/pserverpb}"
if [ $# -ge 1 ]; then sentinels="${2:-$out/error_codes.go}"; else sentinels="$here/pserver/error_codes.go"; fi
root="$(cd "$here/../.." && pwd -P)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
pkg=github.com/pserver/pserver/clients/go/pserverpb
opts=()
for f in "$root"/proto/pserver/v1/*.proto; do
  rel="pserver/v1/$(basename "$f")"
  opts+=("--go_opt=M$rel=$pkg" "--go-grpc_opt=M$rel=$pkg")
done
protoc -I "$root/proto" --go_out="$tmp" --go_opt=paths=source_relative \
  --go-grpc_out="$tmp" --go-grpc_opt=paths=source_relative "${opts[@]}" \
  "$root"/proto/pserver/v1/*.proto
mkdir -p "$out"
rm -f "$out"/*.pb.go
cp "$tmp"/pserver/v1/*.pb.go "$out"/
# gopath.sh runs in another directory: absolute paths.
sentinels="$(cd "$(dirname "$sentinels")" && pwd -P)/$(basename "$sentinels")"
"$here/tools/gopath.sh" go run ./tools/errgen "$(cd "$out" && pwd -P)/errors.pb.go" "$sentinels" \
  "$root/proto/testdata/error_codes.json" "$(dirname "$sentinels")/error_rules.go"
