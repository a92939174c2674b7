//! `sudokud health`: whether the broker takes connections with these
//! settings and the jobs queue exists, for probes (Kubernetes, systemd,
//! compose) that need no HTTP server.

use std::fmt;
use std::time::{Duration, Instant};

use anyhow::bail;

use super::broker::{QueueCounts, connect, inspect_jobs_queue};
use crate::config::AmqpSettings;

/// What a passing check saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthReport {
    /// The broker node connected to, password masked.
    pub url: String,
    pub queue: String,
    pub counts: QueueCounts,
}

impl fmt::Display for HealthReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ok: {} reachable; queue {}: {} ready, {} consumers",
            self.url, self.queue, self.counts.ready, self.counts.consumers
        )
    }
}

/// One check: connect (within `timeout`), log in, and find the jobs queue
/// with at least `min_consumers` consumers. Declares nothing.
pub async fn check(
    amqp: &AmqpSettings,
    min_consumers: u32,
    timeout: Duration,
) -> anyhow::Result<HealthReport> {
    let opened = connect(amqp, "health", timeout).await?;
    let connection = opened.connection;
    let counts = tokio::time::timeout(timeout, inspect_jobs_queue(&connection, amqp)).await;
    let _ = connection.close(200, "OK".into()).await;
    let counts = match counts {
        Ok(counts) => counts?,
        Err(_) => bail!(
            "the broker did not answer about queue {} within {} s",
            amqp.jobs_queue,
            timeout.as_secs_f64()
        ),
    };
    let Some(counts) = counts else {
        bail!(
            "queue {} does not exist on {} (a worker declares it when it starts)",
            amqp.jobs_queue,
            opened.node
        );
    };
    if counts.consumers < min_consumers {
        bail!(
            "queue {} has {} consumers, fewer than the {} required",
            amqp.jobs_queue,
            counts.consumers,
            min_consumers
        );
    }
    Ok(HealthReport {
        url: opened.node,
        queue: amqp.jobs_queue.clone(),
        counts,
    })
}

/// [`check`] again every `interval` until it passes or `wait` has passed;
/// the last failure is the error.
pub async fn check_until(
    amqp: &AmqpSettings,
    min_consumers: u32,
    timeout: Duration,
    wait: Duration,
    interval: Duration,
) -> anyhow::Result<HealthReport> {
    retry_until(wait, interval, || check(amqp, min_consumers, timeout)).await
}

/// Runs `check` until it passes, again every `interval` for as long as
/// `wait` allows; the last failure is the error.
pub async fn retry_until<T, F: Future<Output = anyhow::Result<T>>>(
    wait: Duration,
    interval: Duration,
    mut check: impl FnMut() -> F,
) -> anyhow::Result<T> {
    let start = Instant::now();
    loop {
        match check().await {
            Ok(passed) => return Ok(passed),
            Err(e) if start.elapsed() + interval > wait => return Err(e),
            Err(_) => tokio::time::sleep(interval).await,
        }
    }
}
