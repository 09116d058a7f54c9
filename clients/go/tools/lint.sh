#!/usr/bin/env bash
# Lint of the Go client and the Go examples: gofmt must list nothing, and go vet must pass.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
examples="$(cd "$here/../../examples/go" && pwd -P)"
unformatted="$(gofmt -l "$here" "$examples")"
if [ -n "$unformatted" ]; then
  echo "gofmt would change these files (run gofmt -w):" >&2
  echo "$unformatted" >&2
  exit 1
fi
"$here/tools/gopath.sh" go vet ./pserver ./pserverpb ./conformance ./tools/errgen ./conformance/ledgertrainer ./conformance/synctrainer
"$here/tools/gopath.sh" go vet -tags integration ./conformance
"$here/tools/gopath.sh" go vet github.com/pserver/pserver/examples/go/digits-trainer
echo "gofmt and go vet: clean"
