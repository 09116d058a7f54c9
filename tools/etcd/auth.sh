#!/usr/bin/env bash
# Turns on etcd's authentication and creates the etcd users of a job with etcdctl (SECURITY.md,
# "etcd"): each process gets a role with the key prefixes it needs and nothing else.
#
#   auth.sh enable <root-password-file>                                  -> user root; auth enable
#   auth.sh job <job> [<master-password-file> <pserver-password-file>]   -> pserver-<job>-master, pserver-<job>-pserver
#
# Without password files the two users have no password: they authenticate with a client
# certificate whose CN is the user name (etcd started with --client-cert-auth). Passwords are read
# from the files (one word; etcdctl reads up to the first blank), never from the command line.
# etcdctl reaches etcd through its own variables: ETCDCTL_ENDPOINTS, ETCDCTL_CACERT,
# ETCDCTL_CERT, ETCDCTL_KEY; once authentication is on, as root: ETCDCTL_USER=root with
# ETCDCTL_PASSWORD, or a client certificate with CN=root. Roles and users must not exist yet.
set -euo pipefail
export ETCDCTL_API=3
usage() { sed -n '5,6p' "$0" | sed 's/^#  //' >&2; exit 2; }
fail() { echo "auth.sh: $*" >&2; exit 1; }
command -v etcdctl >/dev/null || fail "needs etcdctl (apt-get install etcd-client)"

# Reads a password file, refusing what etcdctl would silently cut at the first blank.
password() { # <file>
  local value
  value="$(cat "$1")" || fail "cannot read $1"
  [[ -n "$value" ]] || fail "$1 is empty"
  [[ ! "$value" =~ [[:space:]] ]] || fail "$1: a password must be one word (no blanks)"
  printf '%s\n' "$value"
}

add_user() { # <user> [<password>]
  if [[ $# -eq 2 ]]; then
    printf '%s\n' "$2" | etcdctl user add "$1" --interactive=false
  else
    etcdctl user add "$1" --no-password
  fi
}

case "${1:-}" in
  enable)
    [[ $# -eq 2 ]] || usage
    root_password="$(password "$2")"
    add_user root "$root_password"
    etcdctl user grant-role root root
    etcdctl auth enable
    ;;
  job)
    [[ $# -eq 2 || $# -eq 4 ]] || usage
    job="$2"
    [[ "$job" =~ ^[A-Za-z0-9._-]{1,128}$ ]] || fail "job name '$job': 1-128 letters, digits, '.', '_' or '-'"
    root="/pserver/$job/"
    master="pserver-$job-master"
    pserver="pserver-$job-pserver"
    # Every password is checked before anything is created.
    if [[ $# -eq 4 ]]; then
      master_password="$(password "$3")"
      pserver_password="$(password "$4")"
    fi
    # The master: every coordination key of the job but the pservers' registrations, which it
    # reads. It reads and deletes the checkpoint metas when the shard count of an initialized job
    # changes (the reshape record keeps the latest ones), and ends the reshape.
    etcdctl role add "$master"
    for prefix in master/ config/ assign/ replica/ trainers/ init/ data/ finish/ ckpt/ reshape/; do
      etcdctl role grant-permission --prefix "$master" readwrite "$root$prefix"
    done
    etcdctl role grant-permission "$master" readwrite "${root}reshape"
    etcdctl role grant-permission --prefix "$master" read "${root}pservers/"
    # A pserver: its registration and its shard's checkpoint metas; it reads the desired shard
    # count, the block size, the init state, whether the job is finished and a pending reshape,
    # and marks its share of the reshape restored; it reads a change of the count asked while
    # the job runs and marks its index handed back, with its last push and the receivers of a live
    # move that hold it; a replica marks its replica/ key in sync. It writes assign/ and
    # reshape/receiver/ only through etcd's lease rule: revoking its lease (a graceful stop frees
    # its index at once) needs write permission on every key of the lease, and the master puts
    # assign/<i> and reshape/receiver/<i> under it.
    etcdctl role add "$pserver"
    for prefix in pservers/ assign/ replica/ ckpt/ reshape/restored/ reshape/handed-back/ reshape/last-step/ reshape/copied/ reshape/caught-up/ reshape/receiver/ reshape/final-seq/; do
      etcdctl role grant-permission --prefix "$pserver" readwrite "$root$prefix"
    done
    for prefix in config/ init/ finish/; do
      etcdctl role grant-permission --prefix "$pserver" read "$root$prefix"
    done
    etcdctl role grant-permission "$pserver" read "${root}reshape"
    etcdctl role grant-permission "$pserver" read "${root}reshape/live"
    etcdctl role grant-permission "$pserver" readwrite "${root}reshape/decision"
    if [[ $# -eq 4 ]]; then
      add_user "$master" "$master_password"
      add_user "$pserver" "$pserver_password"
    else
      add_user "$master"
      add_user "$pserver"
    fi
    etcdctl user grant-role "$master" "$master"
    etcdctl user grant-role "$pserver" "$pserver"
    ;;
  *) usage ;;
esac
