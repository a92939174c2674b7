//! The `[worker]` section: the solver pool, flow control and message
//! limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// The solver pool, flow control and message limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSettings {
    /// Solver threads; 0 means one per core.
    pub threads: usize,
    /// Unacknowledged jobs the broker may hand this worker at once
    /// (`basic.qos`); 0 means `prefetch_per_thread` times `threads`.
    pub prefetch: u16,
    /// Prefetch per solver thread when `prefetch` is 0.
    pub prefetch_per_thread: u16,
    /// On SIGINT/SIGTERM, how long to finish the jobs in flight before
    /// leaving the rest unacknowledged for redelivery.
    pub shutdown_grace_secs: u64,
    /// Job messages larger than this are answered `invalid` unparsed.
    pub max_message_bytes: usize,
    /// Most puzzles in one batch job.
    pub max_batch: usize,
    /// Most puzzles one generation job may ask for (`generate.count`).
    pub max_generate: u64,
    /// Deadline of a whole job, from its delivery, in milliseconds: puzzles
    /// of a batch not reached by then are answered `timeout`. Keep it well
    /// under the broker's `consumer_timeout` (30 minutes by default), past
    /// which the broker takes the job back.
    pub max_job_ms: u64,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            threads: 0,
            prefetch: 0,
            prefetch_per_thread: 64,
            shutdown_grace_secs: 30,
            max_message_bytes: 1024 * 1024,
            max_batch: 10_000,
            max_generate: 1_000,
            max_job_ms: 600_000,
        }
    }
}

impl WorkerSettings {
    /// Checks the section; the error names the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.threads > 1024 {
            return Err(invalid("worker.threads", "at most 1024"));
        }
        if self.prefetch == 0 && self.prefetch_per_thread == 0 {
            return Err(invalid(
                "worker.prefetch_per_thread",
                "must be at least 1 when worker.prefetch is 0",
            ));
        }
        if self.max_message_bytes == 0 {
            return Err(invalid("worker.max_message_bytes", "must be at least 1"));
        }
        if self.max_job_ms == 0 {
            return Err(invalid("worker.max_job_ms", "must be at least 1"));
        }
        if self.max_generate == 0 {
            return Err(invalid("worker.max_generate", "must be at least 1"));
        }
        if self.max_batch == 0 {
            return Err(invalid("worker.max_batch", "must be at least 1"));
        }
        Ok(())
    }

    /// Solver threads, with 0 resolved to the number of cores.
    pub fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// The `basic.qos` prefetch count, with 0 resolved from the pool size.
    pub fn prefetch(&self) -> u16 {
        match self.prefetch {
            0 => {
                let n = self
                    .threads()
                    .saturating_mul(self.prefetch_per_thread as usize);
                u16::try_from(n).unwrap_or(u16::MAX).max(1)
            }
            n => n,
        }
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    /// Deadline of a whole job, from its delivery.
    pub fn max_job(&self) -> Duration {
        Duration::from_millis(self.max_job_ms)
    }
}
