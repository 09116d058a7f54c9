#!/usr/bin/env bash
# Runs a command in GOPATH mode against the Go sources Debian installs (golang-google-grpc-dev,
# golang-google-protobuf-dev, …), so the client builds offline with no module proxy:
#   clients/go/tools/gopath.sh go test ./pserver
# It builds tmp/gopath/src from symlinks (Debian's /usr/share/gocode/src trees, and this module at
# its import path), then runs the command from the package's directory inside that GOPATH, where
# relative package paths (./pserver) resolve to import paths.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
root="$(cd "$here/../.." && pwd -P)"
gopath="$root/tmp/gopath"
debian=/usr/share/gocode/src
import=github.com/pserver/pserver/clients/go

mkdir -p "$gopath/src/github.com/pserver/pserver/clients"
# github.com holds both Debian's trees and this module, so it is a directory of symlinks.
for dir in "$debian"/*; do
  name="$(basename "$dir")"
  [ "$name" = github.com ] && continue
  [ -e "$gopath/src/$name" ] || ln -sfn "$dir" "$gopath/src/$name"
done
for dir in "$debian"/github.com/*; do
  link="$gopath/src/github.com/$(basename "$dir")"
  [ -e "$link" ] || ln -sfn "$dir" "$link"
done
ln -sfn "$here" "$gopath/src/$import"
# The Go examples live at their own import path, next to the client.
mkdir -p "$gopath/src/github.com/pserver/pserver/examples"
ln -sfn "$root/examples/go" "$gopath/src/github.com/pserver/pserver/examples/go"

export GOPATH="$gopath" GO111MODULE=off GOPROXY=off GOFLAGS= GOTOOLCHAIN=local
export GOCACHE="${GOCACHE:-$root/tmp/go-cache}"
cd "$gopath/src/$import"
exec "$@"
