#!/usr/bin/env bash
# From a fresh Debian or Ubuntu machine to Sudoku puzzles solved through
# RabbitMQ, in one command:
#
#   scripts/demo.sh
#
# Installs RabbitMQ (Debian's rabbitmq-server) if it is missing and starts
# it if it is not running, builds sudokud, starts a worker, sends it sample
# puzzles and prints the answers, then stops the worker with SIGTERM. The
# puzzles are the public sets in the directory named by SUDOKUD_DATA
# (README.md, "Puzzle sets"), or, without it, 50,010 generated ones. Its
# queues are its own (demo.<pid>.*) and are deleted at the end; a broker
# it started keeps running (stop it with `rabbitmqctl stop`). Needs Rust
# (https://rustup.rs) and, for the install, root or sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v cargo >/dev/null 2>&1; then
    echo "demo: cargo not found; install Rust from https://rustup.rs and run this again" >&2
    exit 1
fi
if ! command -v rabbitmq-server >/dev/null 2>&1 && [ ! -x /usr/sbin/rabbitmq-server ]; then
    log "installing rabbitmq-server"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq rabbitmq-server >/dev/null
fi
export PATH="$PATH:/usr/sbin"
if ! as_root rabbitmqctl -q status >/dev/null 2>&1; then
    log "starting rabbitmq-server"
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        as_root systemctl start rabbitmq-server
    else
        as_root rabbitmq-server -detached
    fi
fi
# `await_startup` fails at once until a freshly started node has registered
# with epmd: retry it for up to two minutes.
for _ in $(seq 1 120); do
    as_root rabbitmqctl -q await_startup >/dev/null 2>&1 && break
    sleep 1
done
as_root rabbitmqctl -q await_startup >/dev/null

log "building sudokud"
cargo build --release --locked --bin sudokud
sudokud="${CARGO_TARGET_DIR:-target}/release/sudokud"

prefix="demo.$$"
export SUDOKUD__AMQP__JOBS_QUEUE="$prefix.jobs"
export SUDOKUD__AMQP__RESULTS_QUEUE="$prefix.results"
export SUDOKUD__AMQP__DEAD_LETTER_QUEUE="$prefix.dead"
export SUDOKUD__LOG__THROUGHPUT_SECS=5
worker_log="$(mktemp -t sudokud-demo-worker.XXXXXX.log)"
worker_pid=""
cleanup() {
    if [ -n "$worker_pid" ] && kill -0 "$worker_pid" 2>/dev/null; then
        kill -TERM "$worker_pid" 2>/dev/null || true
        wait "$worker_pid" 2>/dev/null || true
    fi
    for queue in jobs results dead; do
        as_root rabbitmqctl -q delete_queue "$prefix.$queue" >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT

log "starting a worker (log: $worker_log)"
"$sudokud" run 2>"$worker_log" &
worker_pid=$!
"$sudokud" health --wait-secs 30 --min-consumers 1

if [ -n "${SUDOKUD_DATA:-}" ]; then
    # The public sets (README.md, "Puzzle sets").
    log "the 11 puzzles of norvig_hardest.txt ($SUDOKUD_DATA), through the queue"
    "$sudokud" submit --ordered --mode unique "$SUDOKUD_DATA/norvig_hardest.txt"
    log "the 49,158 puzzles of puzzles2_17_clue.txt, in batches of 100"
    "$sudokud" submit --batch 100 "$SUDOKUD_DATA/puzzles2_17_clue.txt" >"$prefix.answers.jsonl"
else
    echo "demo: SUDOKUD_DATA is unset: generated puzzles instead of the public sets (README.md, \"Puzzle sets\")" >&2
    log "10 hard puzzles (difficulty 6.0 to 8.5), generated, through the queue"
    "$sudokud" generate --count 10 --seed 1 --difficulty 6..8.5 \
        | "$sudokud" submit --ordered --mode unique -
    log "50,000 puzzles, generated, in batches of 100"
    "$sudokud" generate --count 50000 --seed 1 >"$prefix.puzzles.txt"
    "$sudokud" submit --batch 100 "$prefix.puzzles.txt" >"$prefix.answers.jsonl"
    rm -f "$prefix.puzzles.txt"
fi
echo "answers: $(wc -l <"$prefix.answers.jsonl") lines, e.g.:"
head -n 2 "$prefix.answers.jsonl"
rm -f "$prefix.answers.jsonl"

log "stopping the worker (SIGTERM)"
kill -TERM "$worker_pid"
status=0
wait "$worker_pid" || status=$?
worker_pid=""
grep -E "consuming|throughput|drained|stopped" "$worker_log" || true
if [ "$status" -ne 0 ]; then
    echo "demo: the worker exited with status $status; its log: $worker_log" >&2
    exit 1
fi
rm -f "$worker_log"
log "done: the broker is still running (rabbitmqctl stop to stop it)"
