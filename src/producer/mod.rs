//! The producer side: the commands that put jobs on the queue and read
//! answers back, and the health check probes use.
//!
//! - `input`: input files (a puzzle or a JSON job a line), checked as a
//!   worker would check them, packed into job messages.
//! - [`enqueue()`]: publish them with pipelined publisher confirms.
//! - [`submit()`]: publish them with `reply_to` a private queue and write
//!   the answers as JSON lines.
//! - [`health`]: is the broker reachable and the jobs queue there.
//! - [`dead`]: list, re-queue or purge dead-lettered jobs.
//!
//! The connection settings are the worker's own (`[amqp]`), from the same
//! layers, so a producer and a worker configured alike always agree on the
//! queues.

mod broker;
pub mod dead;
mod enqueue;
pub mod health;
mod input;
mod submit;

pub use broker::{MAX_UNCONFIRMED, QueueCounts};
pub use enqueue::{EnqueueSummary, enqueue};
pub use input::{
    BadLine, Batch, InputError, JobMode, JobOptions, Message, Shape, Source, read, read_source,
};
pub use submit::{SubmitOptions, SubmitSummary, submit};
