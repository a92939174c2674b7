#!/usr/bin/env bash
# A RabbitMQ node of its own for the fault tests and the soak: they restart
# it, cut it off and raise alarms on it, so they never disturb the default
# node on port 5672 that other tests and programs use.
#
#   scripts/fault-node.sh start     start it (if not running) and wait for it
#   scripts/fault-node.sh stop      stop it
#   scripts/fault-node.sh ctl ARGS  rabbitmqctl on it, e.g. `ctl list_queues`
#   scripts/fault-node.sh url       its AMQP URL
#
# Settings (environment): FAULT_NODE (default sudokud-faults@localhost),
# FAULT_PORT (AMQP port, default 5673; Erlang distribution on FAULT_PORT +
# 20000), FAULT_DIR (data and logs, default /tmp/sudokud-faults-node).
# Needs Debian's rabbitmq-server, run as root or as the rabbitmq user (the
# Erlang cookie of the default node is shared).
set -euo pipefail

# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"

node="${FAULT_NODE:-sudokud-faults@localhost}"
port="${FAULT_PORT:-5673}"
dir="${FAULT_DIR:-/tmp/sudokud-faults-node}"

start() {
    if node_running "$node"; then
        return 0
    fi
    mkdir -p "$dir/mnesia" "$dir/log"
    # No plugins but the shovel (the operator's guide re-queues
    # dead-lettered jobs with it); in particular not the management
    # plugin, whose HTTP port the default node may hold.
    echo '[rabbitmq_shovel].' >"$dir/enabled_plugins"
    node_launch "$node" "$port" "$dir"
    node_await "$node" 120 "the fault node" "$dir"
}

stop() {
    if node_running "$node"; then
        node_ctl "$node" stop >/dev/null
    fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
ctl) shift; node_ctl "$node" "$@" ;;
url) echo "amqp://guest:guest@127.0.0.1:$port/%2f" ;;
*)
    echo "usage: $0 start|stop|ctl ARGS...|url" >&2
    exit 2
    ;;
esac
