#!/usr/bin/env bash
# Makes a fresh clone ready for `npm test` and `npm run demo`: Node.js new enough, node_modules in
# step with package-lock.json, etcd and protoc. Installs what it can; otherwise says what to install.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() {
  printf 'setup: %s\n' "$*" >&2
  exit 1
}

node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || fail "Node.js 20 or newer is required (found $(node --version))."

# npm ci when node_modules is missing or older than the lockfile (npm writes
# node_modules/.package-lock.json on every install).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo 'setup: installing dependencies (npm ci)'
  npm ci --no-audit --no-fund
fi

# Debian packages: etcd (a real one, for the demo and the integration tests); for the tests also
# protoc (to check that the wire contract compiles and to generate the Python and Go stubs),
# openssl (tools/certs/generate.sh makes the TLS tests' certificates), etcdctl (tools/etcd/auth.sh
# sets up etcd's users in the tests as SECURITY.md shows) and the Python and Go
# clients' toolchains. Python means Debian's own interpreter (`command -pv
# python3`, on the default system PATH), the one Debian's python3-* packages install into.
# `--demo` (npm run demo) asks for etcd alone; `--demo-ctr` (the click-through-rate demo, PyTorch
# trainers) for etcd and the Python client's and PyTorch's packages.
missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
python_modules() {
  local system_python module
  system_python=$(command -pv python3 || true)
  for module in "$@"; do
    if [ -z "$system_python" ] || ! "$system_python" -c "import ${module%%:*}" >/dev/null 2>&1; then
      missing+=("${module#*:}")
    fi
  done
}
demo_python=(grpc:python3-grpcio google.protobuf:python3-protobuf numpy:python3-numpy torch:python3-torch)
case "${1:-}" in
  --demo) ;;
  --demo-ctr) python_modules "${demo_python[@]}" ;;
  *) tests_need_more=true ;;
esac
if [ -n "${tests_need_more:-}" ]; then
  command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  # The network-fault tests put processes in network namespaces (ip) and cut links (iptables).
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
  # promtool checks the metrics pages and the alert rules.
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  command -v grpc_python_plugin >/dev/null 2>&1 || missing+=(protobuf-compiler-grpc)
  python_modules "${demo_python[@]}" pytest:python3-pytest
  # The packaging test builds the client's wheel as `pip install ./clients/python` would, and
  # installs it into a fresh virtual environment (venv's ensurepip).
  python_modules pip:python3-pip setuptools:python3-setuptools wheel:python3-wheel ensurepip:python3-venv
  # mypy checks the Python client's type hints (`mypy --strict` in its tests).
  command -v mypy >/dev/null 2>&1 || missing+=(mypy)
  # The container suite builds the image and runs a job with podman (docker/local, runc, netavark).
  command -v podman >/dev/null 2>&1 || missing+=(podman netavark aardvark-dns conmon)
  command -v podman-compose >/dev/null 2>&1 || missing+=(podman-compose)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  command -v go >/dev/null 2>&1 || missing+=(golang-go)
  command -v protoc-gen-go >/dev/null 2>&1 || missing+=(protoc-gen-go)
  command -v protoc-gen-go-grpc >/dev/null 2>&1 || missing+=(protoc-gen-go-grpc)
  # Go sources the client builds against offline (GOPATH mode over /usr/share/gocode). The 1-5
  # golang/protobuf package, not 1-3: a grpc server built with 1-3 crashed on its first request.
  for package in golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${missing[*]} (Debian packages)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    fail "missing on PATH: ${missing[*]}. Install with 'sudo apt-get install ${missing[*]}' (Debian/Ubuntu);
       etcd can also come from the quay.io/coreos/etcd container image (an etcd 3.4+ binary on PATH)."
  fi
fi
command -v etcd >/dev/null 2>&1 || fail 'etcd is still not on PATH after installing etcd-server.'
if [ -n "${tests_need_more:-}" ]; then
  command -v protoc >/dev/null 2>&1 || fail 'protoc is still not on PATH after installing protobuf-compiler.'
  command -v go >/dev/null 2>&1 || fail 'go is still not on PATH after installing golang-go.'
fi
