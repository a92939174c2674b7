//! The producer's side of the broker: connecting through
//! [`crate::broker`] (the worker's address list, TLS and heartbeat), making
//! sure the jobs queue exists, and publishing with pipelined publisher
//! confirms.

use std::collections::VecDeque;
use std::time::Duration;

use anyhow::{Context, bail};
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::protocol::{AMQPErrorKind, AMQPSoftError};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, Connection, ErrorKind};

use crate::broker::{Broker, Opened, open_confirm_channel};
use crate::config::AmqpSettings;

/// Messages published and not yet confirmed, at most. Confirms of
/// persistent messages come in groups when the broker syncs its log, every
/// few milliseconds; this many in flight keeps the connection busy through
/// that wait without holding much memory.
pub const MAX_UNCONFIRMED: usize = 2048;

/// Connects to a node of the broker, each node tried within `timeout`,
/// naming the connection after `role` so the broker's management views
/// tell producers from workers. `node` of the result is the node
/// connected to, its password masked.
pub async fn connect(
    amqp: &AmqpSettings,
    role: &str,
    timeout: Duration,
) -> anyhow::Result<Opened<()>> {
    let broker = Broker::new(amqp)?.with_connect_timeout(timeout);
    let name = format!("sudokud {role} {}", crate::telemetry::process_name());
    let opened = broker
        .open(&name, |_, _| Box::pin(std::future::ready(Ok(()))))
        .await?;
    tracing::debug!(url = %opened.node, role, "connected");
    Ok(opened)
}

/// Counts of a queue, as a passive declare reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueCounts {
    /// Messages ready for delivery (not counting unacknowledged ones).
    pub ready: u32,
    pub consumers: u32,
}

/// Whether a broker error is 404 NOT_FOUND (a passive declare of a queue
/// that does not exist).
fn is_not_found(error: &lapin::Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::ProtocolError(e) if matches!(e.kind(), AMQPErrorKind::Soft(AMQPSoftError::NOTFOUND))
    )
}

/// The jobs queue's counts, or `None` if it does not exist.
pub async fn inspect_jobs_queue(
    connection: &Connection,
    amqp: &AmqpSettings,
) -> anyhow::Result<Option<QueueCounts>> {
    // A failed passive declare closes its channel: use one of its own.
    let channel = connection
        .create_channel()
        .await
        .context("cannot open a channel")?;
    let declared = channel
        .queue_declare(
            amqp.jobs_queue.as_str().into(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await;
    match declared {
        Ok(queue) => {
            let _ = channel.close(200, "OK".into()).await;
            Ok(Some(QueueCounts {
                ready: queue.message_count(),
                consumers: queue.consumer_count(),
            }))
        }
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => {
            Err(e).with_context(|| format!("cannot check the jobs queue {}", amqp.jobs_queue))
        }
    }
}

/// Makes sure the jobs queue exists. An existing queue is used as it is,
/// whatever its arguments; a missing one is declared with the worker's
/// topology (the same arguments, from the same settings), so jobs can be
/// queued before any worker has started.
pub async fn ensure_jobs_queue(connection: &Connection, amqp: &AmqpSettings) -> anyhow::Result<()> {
    if inspect_jobs_queue(connection, amqp).await?.is_some() {
        return Ok(());
    }
    let channel = connection
        .create_channel()
        .await
        .context("cannot open a channel")?;
    crate::broker::declare_topology(&channel, amqp).await?;
    let _ = channel.close(200, "OK".into()).await;
    Ok(())
}

/// Publishes job messages to the jobs queue (default exchange, persistent,
/// `mandatory`) and keeps up to [`MAX_UNCONFIRMED`] confirms outstanding:
/// publishing never waits for one confirm before sending the next.
pub struct Publisher {
    channel: Channel,
    queue: ShortString,
    /// Outstanding confirms, oldest first, with the caller's tag.
    unconfirmed: VecDeque<(usize, lapin::PublisherConfirm)>,
    /// Tags confirmed so far, in order, not yet taken by the caller.
    confirmed: Vec<usize>,
}

impl Publisher {
    /// Opens a channel in confirm mode on `connection`.
    pub async fn open(connection: &Connection, amqp: &AmqpSettings) -> anyhow::Result<Publisher> {
        let channel = open_confirm_channel(connection, "the publishing channel").await?;
        Ok(Publisher {
            channel,
            queue: amqp.jobs_queue.as_str().into(),
            unconfirmed: VecDeque::new(),
            confirmed: Vec::new(),
        })
    }

    /// Publishes one job; `tag` identifies it in errors and in
    /// [`Publisher::take_confirmed`]. Waits for the oldest confirm first
    /// when [`MAX_UNCONFIRMED`] are outstanding.
    pub async fn publish(
        &mut self,
        tag: usize,
        body: &[u8],
        properties: BasicProperties,
    ) -> anyhow::Result<()> {
        if self.unconfirmed.len() >= MAX_UNCONFIRMED {
            self.settle_oldest().await?;
        }
        let properties = properties
            .with_delivery_mode(2)
            .with_content_type("application/json".into());
        let confirm = self
            .channel
            .basic_publish(
                "".into(),
                self.queue.clone(),
                BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                },
                body,
                properties,
            )
            .await
            .with_context(|| format!("cannot publish to {}", self.queue))?;
        self.unconfirmed.push_back((tag, confirm));
        Ok(())
    }

    /// Waits for every outstanding confirm.
    pub async fn finish(&mut self) -> anyhow::Result<()> {
        while !self.unconfirmed.is_empty() {
            self.settle_oldest().await?;
        }
        Ok(())
    }

    /// Tags confirmed since the last call, in publishing order.
    pub fn take_confirmed(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.confirmed)
    }

    async fn settle_oldest(&mut self) -> anyhow::Result<()> {
        let Some((tag, confirm)) = self.unconfirmed.pop_front() else {
            return Ok(());
        };
        let confirmation = confirm
            .await
            .context("lost the broker before it confirmed the jobs sent")?;
        match confirmation {
            Confirmation::Ack(None) => {
                self.confirmed.push(tag);
                Ok(())
            }
            Confirmation::Ack(Some(returned)) | Confirmation::Nack(Some(returned)) => bail!(
                "the broker returned a job: {} {} (does the queue {} still exist?)",
                returned.reply_code,
                returned.reply_text,
                self.queue
            ),
            Confirmation::Nack(None) => bail!(
                "the broker refused a job (nack): it could not store it in {}",
                self.queue
            ),
            Confirmation::NotRequested => bail!("publisher confirms are not enabled"),
        }
    }

    /// Closes the channel politely.
    pub async fn close(self) {
        let _ = self.channel.close(200, "OK".into()).await;
    }
}
