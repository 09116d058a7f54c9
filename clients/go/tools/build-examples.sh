#!/usr/bin/env bash
# Builds the Go examples into dist/examples/go/ (GOPATH mode, see gopath.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd -P)"
out="$root/dist/examples/go/digits-trainer"
mkdir -p "$out"
"$root/clients/go/tools/gopath.sh" go build -o "$out/digits-trainer" github.com/pserver/pserver/examples/go/digits-trainer
echo "built $out/digits-trainer"
