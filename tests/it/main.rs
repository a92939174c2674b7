//! sudokud's integration tests: one binary, a module per area, most of
//! them against a real RabbitMQ (see [`common`]).
//!
//! `cargo test --test it` runs them all but the fault and alert tests;
//! a filter picks an area (`cargo test --test it -- worker::`).
//!
//! - `tls`, `cluster` and `metrics` run on RabbitMQ nodes of their own
//!   (scripts/tls-node.sh, scripts/cluster.sh, scripts/fault-node.sh on
//!   port 5674), which `.ci/run` starts.
//! - `faults` and `alerts` need the test-only fault injection: they are
//!   built only with `--features fault-injection` (`cargo test --features
//!   fault-injection --test it -- faults::`), on the fault node (port
//!   5673) and the metrics node.

mod common;

#[cfg(feature = "fault-injection")]
mod alerts;
mod analysis;
mod analysis_jobs;
mod cli;
mod cli_analysis;
mod cluster;
mod dead;
#[cfg(feature = "fault-injection")]
mod faults;
mod generation;
mod hostile;
mod metrics;
mod producer;
mod results_queue;
mod solver;
mod tls;
mod worker;
mod worker_process;
