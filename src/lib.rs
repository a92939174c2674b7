//! sudokud: a Sudoku solving service.
//!
//! - [`solver`]: the core. Parses every puzzle format of the wire protocol
//!   into a validated [`Grid`] and solves it by constraint propagation and
//!   fewest-candidates backtracking over bitmasks, in modes first, unique
//!   and count, with a deadline.
//! - [`protocol`]: job and result messages, exactly as docs/protocol.md says.
//! - [`offline`]: `sudokud solve`, files of puzzles on a pool of threads.
//! - [`worker`]: `sudokud run`, the RabbitMQ worker daemon: topology,
//!   bounded solver pool, confirmed results, graceful shutdown.
//! - [`broker`]: the connection to RabbitMQ for the worker and the
//!   producers: cluster addresses with failover, TLS, the queue topology.
//! - [`config`]: the worker's settings, layered from defaults, a file and
//!   the environment, and validated.
//! - [`telemetry`]: log setup and the throughput line.
//! - [`metrics`]: Prometheus metrics, `/livez` and `/readyz` over HTTP.
//! - [`producer`]: `sudokud enqueue`, `submit`, `health` and `dead`: jobs
//!   onto the queue from files, answers back, the probe of broker and
//!   queue, and the dead-letter queue listed and requeued.

#![forbid(unsafe_code)]

pub mod broker;
pub mod config;
pub mod metrics;
pub mod offline;
mod pool;
pub mod producer;
pub mod protocol;
pub mod solver;
pub mod telemetry;
pub mod worker;

pub use config::Settings;
pub use solver::{
    DEFAULT_MAX_RATE_WORK, Difficulty, Grid, GridError, Mode, Outcome, RateError, Status,
    Technique, canonical, rate, rate_with_budget, solve,
};
