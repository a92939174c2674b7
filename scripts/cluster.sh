#!/usr/bin/env bash
# A three-node RabbitMQ cluster on loopback for the cluster tests
# (tests/it/cluster.rs): nodes sudokud-c1, -c2 and -c3 on AMQP ports 5681,
# 5682 and 5683, clustered with c1, each with the broker settings of
# deploy/rabbitmq/sudokud.conf. The tests kill nodes and cut them off: it
# is throwaway.
#
#   scripts/cluster.sh start      start the nodes that are not running, join
#                                 the new ones to c1, wait for all three
#   scripts/cluster.sh stop       stop every node and delete their data
#   scripts/cluster.sh kill N     kill -9 the Erlang VM of node N (1 to 3)
#   scripts/cluster.sh restart N  stop node N as an operator does (its
#                                 clients are closed, its queue leaders
#                                 hand over), start it again, wait for it
#   scripts/cluster.sh partition N  cut node N from the other two (their
#                                 Erlang distribution traffic); clients
#                                 still reach every node
#   scripts/cluster.sh heal       undo every cut
#   scripts/cluster.sh pid N      the process id of node N's Erlang VM
#   scripts/cluster.sh ctl N ARGS rabbitmqctl on node N
#   scripts/cluster.sh url N      node N's AMQP URL
#   scripts/cluster.sh urls       the three URLs, separated by commas
#
# Settings (environment): CLUSTER_PORT (first AMQP port, default 5681; node N
# listens on CLUSTER_PORT + N - 1, Erlang distribution 20000 above),
# CLUSTER_DIR (data and logs of node N in CLUSTER_DIR-cN-node, default
# /tmp/sudokud). Needs Debian's rabbitmq-server, run as root or as the
# rabbitmq user (the Erlang cookie of the default node is shared).
#
# A cut is made with iptables on loopback: each node runs in a cgroup of
# its own (sudokud-cN, under the cgroup2 hierarchy), and `partition N`
# drops the packets node N sends to the others' distribution ports and
# those they send to its own (every connection between two nodes goes to
# one of them), matched by the sending socket's cgroup. Every rule carries
# the comment sudokud-partition; `heal` and `stop` remove them all. Needs
# root, Debian's iptables and a cgroup2 mount.
set -euo pipefail

# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"

base_port="${CLUSTER_PORT:-5681}"
base_dir="${CLUSTER_DIR:-/tmp/sudokud}"
nodes=(1 2 3)
conf="$(dirname "${BASH_SOURCE[0]}")/../deploy/rabbitmq/sudokud.conf"
tag=sudokud-partition

name() { echo "sudokud-c$1@localhost"; }
port() { echo "$((base_port + $1 - 1))"; }
dir() { echo "$base_dir-c$1-node"; }
dist_port() { echo "$(($(port "$1") + 20000))"; }

# The cgroup2 hierarchy's mount point, or nothing.
cgroup_root() { awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts; }

# Node $1's cgroup (made if need be), or nothing without cgroup2.
cgroup_of() {
    local root
    root="$(cgroup_root)"
    [ -n "$root" ] || return 0
    mkdir -p "$root/sudokud-c$1" 2>/dev/null && echo "$root/sudokud-c$1"
}

ctl() {
    local n="$1"
    shift
    node_ctl "$(name "$n")" "$@"
}

running() { ctl "$1" status >/dev/null 2>&1; }

# Whether node $1 is a member of c1's cluster (running or not).
member() { ctl 1 cluster_status 2>/dev/null | grep -q "$(name "$1")"; }

launch() {
    local n="$1" d
    d="$(dir "$n")"
    mkdir -p "$d/mnesia" "$d/log"
    # Not 0700: the node runs as the rabbitmq user.
    chmod 0755 "$d"
    # No plugins: in particular not the management plugin, whose HTTP port
    # the default node may hold.
    echo '[].' >"$d/enabled_plugins"
    cp "$conf" "$d/rabbitmq.conf"
    # In its own cgroup, so that a cut can tell its packets apart.
    (
        cg="$(cgroup_of "$n")"
        if [ -n "$cg" ]; then
            echo "$BASHPID" >"$cg/cgroup.procs"
        fi
        node_launch "$(name "$n")" "$(port "$n")" "$d"
    )
}

# Waits for node $1 to boot.
await() { node_await "$(name "$1")" 180 "cluster node $1" "$(dir "$1")"; }

start() {
    local n started=()
    for n in "${nodes[@]}"; do
        if ! running "$n"; then
            launch "$n"
            started+=("$n")
        fi
    done
    # Booting together: a node restarted after the others stopped waits
    # for its peers.
    for n in "${started[@]}"; do
        await "$n"
    done
    for n in 2 3; do
        if ! member "$n"; then
            ctl "$n" stop_app >/dev/null
            ctl "$n" join_cluster "$(name 1)" >/dev/null
            ctl "$n" start_app >/dev/null
            await "$n"
        fi
    done
    # Every node up and clustered, from c1's view.
    local deadline=$((SECONDS + 60))
    until [ "$(ctl 1 eval 'length(rabbit_nodes:all_running()).' 2>/dev/null)" = 3 ]; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "the cluster did not form:" >&2
            ctl 1 cluster_status >&2 || true
            return 1
        fi
        sleep 0.5
    done
}

# Drops what node $1 sends to node $2's distribution port, and what node $2
# sends to node $1's.
cut_pair() {
    local a="$1" b="$2"
    iptables -I OUTPUT -o lo -p tcp -m cgroup --path "sudokud-c$a" \
        --dport "$(dist_port "$b")" -m comment --comment "$tag" -j DROP
    iptables -I OUTPUT -o lo -p tcp -m cgroup --path "sudokud-c$b" \
        --dport "$(dist_port "$a")" -m comment --comment "$tag" -j DROP
}

partition() {
    local n="$1" m
    if [ -z "$(cgroup_root)" ]; then
        echo "no cgroup2 mount: cannot tell the nodes' packets apart" >&2
        return 1
    fi
    for m in "${nodes[@]}"; do
        if [ "$m" != "$n" ]; then
            cut_pair "$n" "$m"
        fi
    done
}

heal() {
    command -v iptables >/dev/null 2>&1 || return 0
    local rule
    # No rule of ours is no cut to heal: grep's failure then must not
    # end the script (pipefail), or `stop` would leave the nodes running.
    iptables -S OUTPUT 2>/dev/null | { grep -- "$tag" || true; } | while read -r rule; do
        # "-A OUTPUT ..." deleted as "-D OUTPUT ...".
        # shellcheck disable=SC2086
        iptables -D ${rule#-A }
    done
}

stop() {
    local n
    heal
    # Not only the running ones: a node whose app is stopped (a test's
    # doing, or one waiting for its cluster) is stopped as well.
    for n in "${nodes[@]}"; do
        ctl "$n" stop >/dev/null 2>&1 || true
    done
    for n in "${nodes[@]}"; do
        rm -rf "$(dir "$n")"
        local root
        root="$(cgroup_root)"
        if [ -n "$root" ] && [ -d "$root/sudokud-c$n" ]; then
            rmdir "$root/sudokud-c$n" 2>/dev/null || true
        fi
    done
}

pid() { ctl "$1" eval 'os:getpid().' | tr -d '"'; }

kill_node() {
    local n="$1"
    kill -9 "$(pid "$n")"
    # Gone once epmd no longer knows it.
    while running "$n"; do
        sleep 0.1
    done
}

restart_node() {
    local n="$1"
    ctl "$n" stop >/dev/null
    launch "$n"
    await "$n"
}

node_arg() {
    case "${1:-}" in
    1 | 2 | 3) ;;
    *)
        echo "a node number from 1 to 3, not '${1:-}'" >&2
        exit 2
        ;;
    esac
}

case "${1:-}" in
start) start ;;
stop) stop ;;
kill) node_arg "${2:-}"; kill_node "$2" ;;
restart) node_arg "${2:-}"; restart_node "$2" ;;
partition) node_arg "${2:-}"; partition "$2" ;;
heal) heal ;;
pid) node_arg "${2:-}"; pid "$2" ;;
ctl) node_arg "${2:-}"; n="$2"; shift 2; ctl "$n" "$@" ;;
url) node_arg "${2:-}"; echo "amqp://guest:guest@127.0.0.1:$(port "$2")/%2f" ;;
urls)
    echo "amqp://guest:guest@127.0.0.1:$(port 1)/%2f,amqp://guest:guest@127.0.0.1:$(port 2)/%2f,amqp://guest:guest@127.0.0.1:$(port 3)/%2f"
    ;;
*)
    echo "usage: $0 start|stop|kill N|restart N|partition N|heal|pid N|ctl N ARGS...|url N|urls" >&2
    exit 2
    ;;
esac
