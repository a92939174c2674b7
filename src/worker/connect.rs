//! Opening a connection for the worker ([`Connector`]): attempts retried
//! with exponential backoff and jitter ([`Backoff`]) until one succeeds,
//! the broker refuses for good (a login or the queue arguments), the
//! outage outlasts `amqp.reconnect_give_up_secs`, or the worker is asked
//! to stop.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

use super::amqp::{self, Opened, Session};
use super::backoff::Backoff;
use super::jobs::{Solved, Solvers};
use super::shutdown::Shutdown;
use crate::broker::Broker;
use crate::config::AmqpSettings;
use crate::telemetry::{Stats, round_secs};

/// Opens the worker's connections, and remembers the outage between them.
pub(super) struct Connector {
    broker: Broker,
    worker_id: Arc<str>,
    backoff: Backoff,
    give_up: Option<Duration>,
    /// A connection that stayed up this long starts the waits afresh.
    reconnect_max: Duration,
    /// When the last connection was lost; `None` before the first one.
    lost_at: Option<Instant>,
    opened_at: Instant,
    stats: Arc<Stats>,
}

impl Connector {
    pub fn new(
        amqp: &AmqpSettings,
        broker: Broker,
        worker_id: Arc<str>,
        stats: Arc<Stats>,
    ) -> Connector {
        Connector {
            broker,
            worker_id,
            backoff: Backoff::new(amqp.reconnect_initial(), amqp.reconnect_max()),
            give_up: amqp.reconnect_give_up(),
            reconnect_max: amqp.reconnect_max(),
            lost_at: None,
            opened_at: Instant::now(),
            stats,
        }
    }

    /// Opens a connection, retrying with backoff; answers coming back from
    /// the pool meanwhile are dropped (their jobs are redelivered).
    /// `Ok(None)`: asked to stop meanwhile. Errors: a permanent refusal, or
    /// the broker unreachable for longer than `amqp.reconnect_give_up_secs`
    /// since the connection was lost.
    pub async fn open<F: Future<Output = ()>>(
        &mut self,
        shutdown: &mut Shutdown<F>,
        solvers: &mut Solvers,
    ) -> anyhow::Result<Option<Opened>> {
        let since = self.lost_at.unwrap_or_else(Instant::now);
        loop {
            let broker = self.broker.clone();
            let worker_id = Arc::clone(&self.worker_id);
            let attempt = async move { Session::open(&broker, &worker_id).await };
            // An attempt is never dropped half-way: lapin keeps a consumer
            // whose `basic.consume` was sent but not yet answered, with its
            // channel and connection, alive and holding its deliveries. So
            // a stop waits for the attempt (bounded by the connect timeout)
            // and then closes what it opened.
            let (opened, stopping) = self.finishing(shutdown, solvers, attempt).await;
            if stopping {
                if let Ok(opened) = opened {
                    opened.session.close().await;
                }
                return Ok(None);
            }
            let error = match opened {
                Ok(opened) => {
                    self.opened();
                    return Ok(Some(opened));
                }
                Err(e) if amqp::is_permanent(&e) => return Err(e),
                Err(e) => e,
            };
            let down = since.elapsed();
            if let Some(limit) = self.give_up
                && down >= limit
            {
                return Err(error.context(format!(
                    "the broker has been unreachable for {} s (amqp.reconnect_give_up_secs is {})",
                    round_secs(down),
                    limit.as_secs()
                )));
            }
            let mut wait = self.backoff.next_delay();
            if let Some(limit) = self.give_up {
                // One last attempt when the time is up.
                wait = wait.min(limit.saturating_sub(down));
            }
            warn!(
                error = format!("{error:#}"),
                attempt = self.backoff.attempts(),
                retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "cannot reach the broker; retrying"
            );
            if unless_stopped(shutdown, solvers, &self.stats, tokio::time::sleep(wait))
                .await
                .is_none()
            {
                return Ok(None);
            }
        }
    }

    /// A connection is open: log the outage it ends, if any.
    fn opened(&mut self) {
        self.opened_at = Instant::now();
        if let Some(lost_at) = self.lost_at.take() {
            self.stats.metrics.reconnected();
            info!(
                outage_secs = round_secs(lost_at.elapsed()),
                attempts = self.backoff.attempts(),
                "reconnected"
            );
        }
    }

    /// The connection opened last is lost: the outage starts now.
    pub fn lost(&mut self) {
        // A connection that stayed up a while starts the waits afresh; one
        // that failed at once keeps backing off.
        if self.opened_at.elapsed() >= self.reconnect_max {
            self.backoff.reset();
        }
        self.lost_at = Some(Instant::now());
    }

    /// Runs `future` to its end while no connection is open, like
    /// [`unless_stopped`], and says whether the worker was asked to stop
    /// meanwhile.
    async fn finishing<F: Future<Output = ()>, T>(
        &self,
        shutdown: &mut Shutdown<F>,
        solvers: &mut Solvers,
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
                Some(solved) = solvers.next() => discard(&solved),
                _ = pulse.tick() => self.stats.metrics.tick(),
            }
        }
    }
}

/// Runs `future` while no connection is open: answers coming back from the
/// pool meanwhile are dropped (their jobs are redelivered). `None`: asked
/// to stop first.
async fn unless_stopped<F: Future<Output = ()>, T>(
    shutdown: &mut Shutdown<F>,
    solvers: &mut Solvers,
    stats: &Stats,
    future: impl Future<Output = T>,
) -> Option<T> {
    let mut future = std::pin::pin!(future);
    let mut pulse = crate::metrics::pulse();
    loop {
        tokio::select! {
            biased;
            () = shutdown.wait(), if !shutdown.fired() => return None,
            output = &mut future => return Some(output),
            Some(solved) = solvers.next() => discard(&solved),
            _ = pulse.tick() => stats.metrics.tick(),
        }
    }
}

/// A pool result that arrived while no connection was open.
fn discard(solved: &Solved) {
    debug!(
        tag = solved.key.tag,
        "answer to a job of a lost connection dropped"
    );
}
