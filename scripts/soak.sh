#!/usr/bin/env bash
# Soak test for fault tolerance: publishes a long stream of one-puzzle jobs
# (200,000 by default, about 5 % of them hard), then runs real `sudokud run`
# worker processes through a cycle of faults until every job is answered: a
# broker restart, a worker killed with SIGKILL (and replaced at once), a
# memory alarm, one every 15 s. Every answer is verified; the summary counts
# lost jobs, wrong answers, duplicates and recovery times, and the exit
# status is non-zero if anything was lost or wrong, a worker crashed or did
# not stop cleanly, or a queue was not empty at the end.
#
# With the defaults it takes a few minutes on a 2-core machine (the build,
# publishing the jobs, then about 1 to 3 minutes of faults); `--max-minutes`
# (default 20) fails a run that does not finish. It uses ONLY the dedicated
# fault node of scripts/fault-node.sh (AMQP port 5673, started if needed and
# left running; `scripts/fault-node.sh stop` stops it), never the default
# node on port 5672, and deletes its own queues (soak.<pid>.*) at the end.
#
#   scripts/soak.sh                       the defaults
#   scripts/soak.sh --jobs 20000 --fault-every 5
#   scripts/soak.sh --help                every option
#
# The workers' logs are kept in target/soak/<pid>/ (or --logs DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p sudokud --bin sudokud -p sudokud-tools --bin soak
scripts/fault-node.sh start
exec "${CARGO_TARGET_DIR:-target}/release/soak" "$@"
