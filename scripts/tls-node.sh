#!/usr/bin/env bash
# A TLS-only RabbitMQ node for the TLS tests (tests/it/tls.rs): AMQP over TLS
# on port 5671 and no plain listener at all. It verifies its peers: a client
# must show a certificate signed by the test CA.
#
#   scripts/tls-node.sh start     make the certificates (if missing), start the
#                                 node (if not running) and wait for it
#   scripts/tls-node.sh stop      stop it and delete its data and certificates
#   scripts/tls-node.sh ctl ARGS  rabbitmqctl on it, e.g. `ctl list_consumers`
#   scripts/tls-node.sh certs     the certificate directory
#   scripts/tls-node.sh url       its AMQP URL (amqps://, user guest)
#
# The certificates are made with openssl in $TLS_DIR/certs, readable by the
# rabbitmq user:
#   ca.pem                the test CA
#   server.pem/.key       the node's certificate, for localhost and 127.0.0.1
#   client.pem/.key       a client certificate signed by the test CA
#   other-ca.pem/.key     another CA, which signed nothing the node uses
#
# Settings (environment): TLS_NODE (default sudokud-tls@localhost), TLS_PORT
# (default 5671; Erlang distribution on TLS_PORT + 20000), TLS_DIR (default
# /tmp/sudokud-tls-node). Needs Debian's rabbitmq-server and openssl, run as
# root or as the rabbitmq user (the Erlang cookie of the default node is
# shared).
set -euo pipefail

# shellcheck source=lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/node.sh"

node="${TLS_NODE:-sudokud-tls@localhost}"
port="${TLS_PORT:-5671}"
dir="${TLS_DIR:-/tmp/sudokud-tls-node}"
certs="$dir/certs"

# A self-signed CA: $1 the file stem, $2 its name.
make_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$certs/$1.key" -out "$certs/$1.pem" -days 3650 -subj "/CN=$2" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# A certificate signed by the test CA: $1 the file stem, $2 its name, $3 its
# extensions.
make_cert() {
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$certs/$1.key" -out "$certs/$1.csr" -subj "/CN=$2" 2>/dev/null
    printf '%s\n' "$3" >"$certs/$1.ext"
    openssl x509 -req -in "$certs/$1.csr" -CA "$certs/ca.pem" -CAkey "$certs/ca.key" \
        -CAcreateserial -out "$certs/$1.pem" -days 3650 -extfile "$certs/$1.ext" 2>/dev/null
    rm -f "$certs/$1.csr" "$certs/$1.ext"
}

make_certs() {
    if [ -s "$certs/client.pem" ]; then
        return 0
    fi
    mkdir -p "$certs"
    make_ca ca "sudokud test CA"
    make_ca other-ca "sudokud other CA"
    make_cert server localhost "subjectAltName=DNS:localhost,IP:127.0.0.1
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"
    make_cert client sudokud-test-client "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
}

start() {
    if node_running "$node"; then
        return 0
    fi
    mkdir -p "$dir/mnesia" "$dir/log"
    # Not 0700: the node runs as the rabbitmq user and reads these.
    chmod 0755 "$dir"
    make_certs
    # No plugins: in particular not the management plugin, whose HTTP port
    # the default node may hold.
    echo '[].' >"$dir/enabled_plugins"
    cat >"$dir/rabbitmq.conf" <<EOF
listeners.tcp = none
listeners.ssl.default = $port
ssl_options.cacertfile = $certs/ca.pem
ssl_options.certfile = $certs/server.pem
ssl_options.keyfile = $certs/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = true
EOF
    node_launch "$node" "$port" "$dir"
    node_await "$node" 120 "the TLS node" "$dir"
}

stop() {
    if node_running "$node"; then
        node_ctl "$node" stop >/dev/null
    fi
    rm -rf "$dir"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
ctl) shift; node_ctl "$node" "$@" ;;
certs) echo "$certs" ;;
url) echo "amqps://guest:guest@localhost:$port/%2f" ;;
*)
    echo "usage: $0 start|stop|ctl ARGS...|certs|url" >&2
    exit 2
    ;;
esac
