#!/usr/bin/env bash
# Makes the certificates of a cluster with openssl (SECURITY.md): a CA, server certificates for
# pservers, masters and etcd, and client certificates whose OU the --auth-config maps to a role.
#
#   generate.sh ca     <dir>                          -> <dir>/ca.pem, ca.key
#   generate.sh server <dir> <name> <san>[,<san>...]  -> <dir>/<name>.pem, <name>.key
#   generate.sh client <dir> <name> <ou>              -> <dir>/<name>.pem, <name>.key (CN=<name>)
#
# SANs as openssl writes them: DNS:pserver-0.pserver.ml.svc,IP:10.0.0.5. Keys are ECDSA P-256,
# written owner-only; certificates last DAYS days (default 365).
set -euo pipefail
umask 077
days="${DAYS:-365}"
usage() { sed -n '4,6p' "$0" | sed 's/^#  //' >&2; exit 2; }
command -v openssl >/dev/null || { echo "generate.sh: needs openssl (apt-get install openssl)" >&2; exit 1; }

sign() { # <dir> <name> <subject> <extensions>
  local dir="$1" name="$2" subject="$3" extensions="$4"
  openssl ecparam -name prime256v1 -genkey -noout -out "$dir/$name.key"
  openssl req -new -key "$dir/$name.key" -subj "$subject" -out "$dir/$name.csr"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days "$days" -sha256 -out "$dir/$name.pem" \
    -extfile <(printf '%s\n' "$extensions") 2>/dev/null
  rm -f "$dir/$name.csr"
}

case "${1:-}" in
  ca)
    [[ $# -eq 2 ]] || usage
    mkdir -p "$2"
    openssl ecparam -name prime256v1 -genkey -noout -out "$2/ca.key"
    openssl req -x509 -new -key "$2/ca.key" -subj "/CN=pserver cluster CA" -days "$days" \
      -sha256 -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$2/ca.pem"
    ;;
  server)
    [[ $# -eq 4 ]] || usage
    # clientAuth too: etcd members and pservers also dial out with the same certificate.
    sign "$2" "$3" "/CN=$3" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$4"
    ;;
  client)
    [[ $# -eq 4 ]] || usage
    sign "$2" "$3" "/OU=$4/CN=$3" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
    ;;
  *) usage ;;
esac
