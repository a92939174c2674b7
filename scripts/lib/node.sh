# Shared by the scripts that run RabbitMQ nodes of their own beside the
# default one (fault-node.sh, tls-node.sh, cluster.sh): rabbitmqctl on a
# node, launching a node with every path and port its own, and waiting for
# it to boot. Sourced, not run.

# node_ctl NAME ARGS...: rabbitmqctl on node NAME.
node_ctl() {
    local name="$1"
    shift
    rabbitmqctl -q -n "$name" "$@"
}

# node_running NAME: whether node NAME answers.
node_running() { node_ctl "$1" status >/dev/null 2>&1; }

# node_launch NAME PORT DIR: starts node NAME detached, AMQP on PORT, Erlang
# distribution on PORT + 20000, data, logs and configuration in DIR (which
# must hold enabled_plugins; rabbitmq.conf and advanced.config are read if
# there).
node_launch() {
    local name="$1" port="$2" dir="$3"
    if [ "$(id -u)" = 0 ] && id rabbitmq >/dev/null 2>&1; then
        chown -R rabbitmq:rabbitmq "$dir"
    fi
    # The Debian wrapper runs the server as the rabbitmq user and keeps
    # these variables; every path and port differs from the default node.
    RABBITMQ_NODENAME="$name" \
    RABBITMQ_NODE_PORT="$port" \
    RABBITMQ_DIST_PORT="$((port + 20000))" \
    RABBITMQ_MNESIA_BASE="$dir/mnesia" \
    RABBITMQ_LOG_BASE="$dir/log" \
    RABBITMQ_PID_FILE="$dir/node.pid" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
    RABBITMQ_CONFIG_FILE="$dir/rabbitmq" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config" \
        rabbitmq-server -detached
}

# node_await NAME SECONDS WHAT DIR: waits up to SECONDS for node NAME to
# boot; if it does not, says that WHAT did not start (see DIR/log) and
# fails. `await_startup` fails at once while the node is not yet registered
# with epmd, so it is asked again until it answers.
node_await() {
    local name="$1" limit="$2" what="$3" dir="$4"
    local deadline=$((SECONDS + limit))
    until node_ctl "$name" await_startup >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "$what did not start; see $dir/log" >&2
            return 1
        fi
        sleep 0.5
    done
}
