//! Opening a connection for the worker: attempts retried with exponential
//! backoff and jitter ([`Backoff`]) until one succeeds, the broker refuses
//! for good (a login or the queue arguments), the outage outlasts
//! `amqp.reconnect_give_up_secs`, or the worker is asked to stop.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{debug, warn};

use super::amqp::{self, Opened, Session};
use super::backoff::Backoff;
use super::jobs::Solved;
use super::serve::Worker;
use super::shutdown::Shutdown;

impl Worker {
    /// Opens a connection, retrying with backoff. `Ok(None)`: asked to stop
    /// meanwhile. Errors: a permanent refusal, or the broker unreachable
    /// for longer than `amqp.reconnect_give_up_secs` since `since`.
    pub(super) async fn connect<F: Future<Output = ()>>(
        &mut self,
        shutdown: &mut Shutdown<F>,
        backoff: &mut Backoff,
        since: Instant,
    ) -> anyhow::Result<Option<Opened>> {
        loop {
            let broker = self.broker.clone();
            let worker_id = Arc::clone(&self.ctx.worker_id);
            let attempt = async move { Session::open(&broker, &worker_id).await };
            // An attempt is never dropped half-way: lapin keeps a consumer
            // whose `basic.consume` was sent but not yet answered, with its
            // channel and connection, alive and holding its deliveries. So
            // a stop waits for the attempt (bounded by the connect timeout)
            // and then closes what it opened.
            let (opened, stopping) = self.finishing(shutdown, attempt).await;
            if stopping {
                if let Ok(opened) = opened {
                    opened.session.close().await;
                }
                return Ok(None);
            }
            let error = match opened {
                Ok(opened) => return Ok(Some(opened)),
                Err(e) if amqp::is_permanent(&e) => return Err(e),
                Err(e) => e,
            };
            let down = since.elapsed();
            let give_up = self.amqp.reconnect_give_up();
            if let Some(limit) = give_up
                && down >= limit
            {
                return Err(error.context(format!(
                    "the broker has been unreachable for {} s (amqp.reconnect_give_up_secs is {})",
                    round_secs(down),
                    limit.as_secs()
                )));
            }
            let mut wait = backoff.next_delay();
            if let Some(limit) = give_up {
                // One last attempt when the time is up.
                wait = wait.min(limit.saturating_sub(down));
            }
            warn!(
                error = format!("{error:#}"),
                attempt = backoff.attempts(),
                retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "cannot reach the broker; retrying"
            );
            if self
                .unless_stopped(shutdown, tokio::time::sleep(wait))
                .await
                .is_none()
            {
                return Ok(None);
            }
        }
    }

    /// Runs `future` while no connection is open: answers coming back from
    /// the pool meanwhile are dropped (their jobs are redelivered). `None`:
    /// asked to stop first.
    async fn unless_stopped<F: Future<Output = ()>, T>(
        &mut self,
        shutdown: &mut Shutdown<F>,
        future: impl Future<Output = T>,
    ) -> Option<T> {
        let mut future = std::pin::pin!(future);
        let mut pulse = crate::metrics::pulse();
        loop {
            tokio::select! {
                biased;
                () = shutdown.wait(), if !shutdown.fired() => return None,
                output = &mut future => return Some(output),
                Some(solved) = self.solved.recv() => self.discard(solved),
                _ = pulse.tick() => self.stats.metrics.tick(),
            }
        }
    }

    /// Runs `future` to its end while no connection is open, like
    /// [`Self::unless_stopped`], and says whether the worker was asked to
    /// stop meanwhile.
    async fn finishing<F: Future<Output = ()>, T>(
        &mut self,
        shutdown: &mut Shutdown<F>,
        future: impl Future<Output = T>,
    ) -> (T, bool) {
        let mut future = std::pin::pin!(future);
        let mut pulse = crate::metrics::pulse();
        let mut stopping = false;
        loop {
            tokio::select! {
                biased;
                () = shutdown.wait(), if !shutdown.fired() => stopping = true,
                output = &mut future => return (output, stopping),
                Some(solved) = self.solved.recv() => self.discard(solved),
                _ = pulse.tick() => self.stats.metrics.tick(),
            }
        }
    }

    /// A pool result that arrived while no connection was open.
    fn discard(&mut self, solved: Solved) {
        self.in_pool -= 1;
        debug!(
            key = solved.key,
            "answer to a job of a lost connection dropped"
        );
    }
}

/// Seconds, to a tenth, for logs.
pub(super) fn round_secs(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 10.0).round() / 10.0
}
