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

node="${FAULT_NODE:-sudokud-faults@localhost}"
port="${FAULT_PORT:-5673}"
dir="${FAULT_DIR:-/tmp/sudokud-faults-node}"

ctl() { rabbitmqctl -q -n "$node" "$@"; }

running() { ctl status >/dev/null 2>&1; }

start() {
    if running; then
        return 0
    fi
    mkdir -p "$dir/mnesia" "$dir/log"
    # No plugins but the shovel (the operator's guide re-queues
    # dead-lettered jobs with it); in particular not the management
    # plugin, whose HTTP port the default node may hold.
    echo '[rabbitmq_shovel].' >"$dir/enabled_plugins"
    if [ "$(id -u)" = 0 ] && id rabbitmq >/dev/null 2>&1; then
        chown -R rabbitmq:rabbitmq "$dir"
    fi
    # The Debian wrapper runs the server as the rabbitmq user and keeps
    # these variables; every path and port differs from the default node.
    RABBITMQ_NODENAME="$node" \
    RABBITMQ_NODE_PORT="$port" \
    RABBITMQ_DIST_PORT="$((port + 20000))" \
    RABBITMQ_MNESIA_BASE="$dir/mnesia" \
    RABBITMQ_LOG_BASE="$dir/log" \
    RABBITMQ_PID_FILE="$dir/node.pid" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
    RABBITMQ_CONFIG_FILE="$dir/rabbitmq" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config" \
        rabbitmq-server -detached
    # `await_startup` fails at once while the node is not yet registered
    # with epmd, so ask again until it answers.
    local deadline=$((SECONDS + 120))
    until ctl await_startup >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "the fault node did not start; see $dir/log" >&2
            return 1
        fi
        sleep 0.5
    done
}

stop() {
    if running; then
        ctl stop >/dev/null
    fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
ctl) shift; ctl "$@" ;;
url) echo "amqp://guest:guest@127.0.0.1:$port/%2f" ;;
*)
    echo "usage: $0 start|stop|ctl ARGS...|url" >&2
    exit 2
    ;;
esac
