#!/usr/bin/env bash
# Makes the certificates of the TLS overlay and the Secrets it mounts (docker/README.md, "TLS").
#
#   make-secrets.sh <out-dir> [server-name]     (server-name: default pserver.internal)
#
# Into <out-dir>, with tools/certs/generate.sh:
#   ca.pem, ca.key            the CA. ca.key signs every certificate: keep it offline (move it
#                             away once done; bring it back to renew)
#   server.pem, server.key    masters and pservers: SAN DNS:<server-name>, which clients check
#   trainer.pem, trainer.key  the trainers' client certificate (OU=trainers)
#   admin.pem, admin.key      an operator's client certificate (OU=admins), for admin calls
#   auth.json                 roles: OU trainers -> trainer, OU admins -> admin
#   secrets.yaml              Secrets pserver-tls, pserver-auth, pserver-trainer-tls, in
#                             namespace $NAMESPACE (default pserver): kubectl apply -f it
# A CA already in <out-dir> is kept, so re-running renews the other certificates and clients
# holding the old ones still trust the new servers. A server name other than the default must
# also be given to the trainers (--tls-server-name in trainer-job.yaml).
set -euo pipefail
umask 077
usage() { sed -n '4p' "$0" | sed 's/^# *//' >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
out="$1"
server_name="${2:-pserver.internal}"
namespace="${NAMESPACE:-pserver}"
# A DNS name only: it is written into the certificate's SAN list and the Secrets' YAML as is.
[[ "$server_name" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$ ]] || {
  echo "make-secrets.sh: the server name must be a DNS name, got '$server_name'" >&2
  exit 2
}
generate="$(cd "$(dirname "$0")/../.." && pwd)/tools/certs/generate.sh"

mkdir -p "$out"
if [[ -f "$out/ca.pem" && -f "$out/ca.key" ]]; then
  echo "make-secrets.sh: keeping the CA in $out" >&2
elif [[ -e "$out/ca.pem" || -e "$out/ca.key" ]]; then
  echo "make-secrets.sh: $out has ca.pem or ca.key alone: bring back ca.key, or use a new" \
    "directory (a new CA, which every client then needs)" >&2
  exit 1
else
  bash "$generate" ca "$out"
fi
bash "$generate" server "$out" server "DNS:$server_name"
bash "$generate" client "$out" trainer trainers
bash "$generate" client "$out" admin admins
cat > "$out/auth.json" <<'EOF'
{
  "clientCertificates": [
    { "ou": "trainers", "role": "trainer" },
    { "ou": "admins", "role": "admin" }
  ],
  "tokens": []
}
EOF

# kubectl create secret --dry-run=client -o yaml, without kubectl.
secret() { # <name> <file>... (each file a key of its own)
  printf -- '---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n' \
    "$1" "$namespace"
  printf 'type: Opaque\ndata:\n'
  local file
  for file in "${@:2}"; do
    printf '  %s: %s\n' "$(basename "$file")" "$(openssl base64 -A -in "$file")"
  done
}
{
  echo "# Made by docker/k8s-tls/make-secrets.sh: kubectl apply -f it, then restart the pods."
  secret pserver-tls "$out/ca.pem" "$out/server.pem" "$out/server.key"
  secret pserver-auth "$out/auth.json"
  secret pserver-trainer-tls "$out/ca.pem" "$out/trainer.pem" "$out/trainer.key"
} > "$out/secrets.yaml.tmp"
mv "$out/secrets.yaml.tmp" "$out/secrets.yaml"
echo "make-secrets.sh: wrote $out/secrets.yaml (server name $server_name);" \
  "keep $out/ca.key offline" >&2
