//! `sudokud dead`: the dead-letter queue (`amqp.dead_letter_queue`) for
//! operators: list what is in it, move jobs back to the jobs queue, or
//! empty it.
//!
//! Listing and re-queueing read the queue from its head with `basic.get`,
//! holding every message unacknowledged until the end, so each is seen
//! once; messages that stay are then handed back together (`basic.nack`,
//! `requeue`), which puts them back where they were: a classic queue (the
//! dead-letter queue the worker declares) restores each message's
//! position, and the held messages were the head of the queue anyway. If
//! the command dies half-way, the broker hands them back the same way when
//! its connection closes. Nothing is removed except a re-queued message,
//! and that only after the broker has confirmed its copy on the jobs
//! queue.
//!
//! This file holds the listing, the purge and the queue access they and
//! the re-queueing share; `letter.rs` reads a dead letter's headers and
//! prints the listing, `requeue.rs` moves jobs back.

mod letter;
mod requeue;

use std::future::Future;
use std::time::Duration;

use anyhow::{Context, bail};
use lapin::message::BasicGetMessage;
use lapin::options::{BasicGetOptions, BasicNackOptions, QueueDeclareOptions, QueuePurgeOptions};
use lapin::types::{FieldTable, ShortString};
use lapin::{Channel, Connection};

use super::broker::connect;
use crate::config::AmqpSettings;
use letter::describe;
pub use letter::{DeadLetter, write_listing};
pub use requeue::{RequeueSummary, Selection, requeue};

/// What `sudokud dead list` saw.
#[derive(Debug, Clone)]
pub struct DeadList {
    pub queue: String,
    /// Messages in the queue when the listing started.
    pub total: u32,
    /// The first of them, in queue order, up to the limit asked for.
    pub letters: Vec<DeadLetter>,
}

/// Lists the first `limit` dead letters (all if `None`) and leaves the
/// queue as it was. `timeout` bounds connecting and each broker round trip.
pub async fn list(
    amqp: &AmqpSettings,
    limit: Option<usize>,
    timeout: Duration,
) -> anyhow::Result<DeadList> {
    let connection = connect(amqp, "dead list", timeout).await?.connection;
    let result = async {
        let (channel, total) = open_dead_letters(&connection, amqp, timeout).await?;
        let wanted = limit.map_or(total as usize, |limit| limit.min(total as usize));
        let mut letters = Vec::with_capacity(wanted);
        let mut last_tag = None;
        while letters.len() < wanted {
            let Some(message) = get(&channel, amqp, timeout).await? else {
                break;
            };
            last_tag = Some(message.delivery.delivery_tag);
            letters.push(describe(letters.len() + 1, &message));
        }
        if let Some(tag) = last_tag {
            give_back(&channel, tag, timeout).await?;
        }
        let _ = channel.close(200, "OK".into()).await;
        Ok(DeadList {
            queue: amqp.dead_letter_queue.clone(),
            total,
            letters,
        })
    }
    .await;
    let _ = connection.close(200, "OK".into()).await;
    result
}

/// Empties the dead-letter queue; returns how many messages it removed.
pub async fn purge(amqp: &AmqpSettings, timeout: Duration) -> anyhow::Result<u32> {
    let connection = connect(amqp, "dead purge", timeout).await?.connection;
    let result = async {
        let (channel, _) = open_dead_letters(&connection, amqp, timeout).await?;
        let purged = within(
            timeout,
            "purging the dead-letter queue",
            channel.queue_purge(
                ShortString::from(amqp.dead_letter_queue.as_str()),
                QueuePurgeOptions::default(),
            ),
        )
        .await?;
        let _ = channel.close(200, "OK".into()).await;
        Ok(purged)
    }
    .await;
    let _ = connection.close(200, "OK".into()).await;
    result
}

/// A channel for the dead-letter queue, and the number of messages ready
/// in it. An error if the queue does not exist.
async fn open_dead_letters(
    connection: &Connection,
    amqp: &AmqpSettings,
    timeout: Duration,
) -> anyhow::Result<(Channel, u32)> {
    let channel = connection
        .create_channel()
        .await
        .context("cannot open a channel")?;
    let queue = within(
        timeout,
        "the dead-letter queue",
        channel.queue_declare(
            ShortString::from(amqp.dead_letter_queue.as_str()),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        ),
    )
    .await
    .with_context(|| {
        format!(
            "cannot find the dead-letter queue {} (a worker declares it when it starts)",
            amqp.dead_letter_queue
        )
    })?;
    Ok((channel, queue.message_count()))
}

/// The next message of the dead-letter queue, held unacknowledged.
async fn get(
    channel: &Channel,
    amqp: &AmqpSettings,
    timeout: Duration,
) -> anyhow::Result<Option<BasicGetMessage>> {
    within(
        timeout,
        "reading the dead-letter queue",
        channel.basic_get(
            ShortString::from(amqp.dead_letter_queue.as_str()),
            BasicGetOptions { no_ack: false },
        ),
    )
    .await
}

/// Hands back every message held up to `tag` that is not yet settled, in
/// their places.
async fn give_back(channel: &Channel, tag: u64, timeout: Duration) -> anyhow::Result<()> {
    within(
        timeout,
        "handing back the dead letters",
        channel.basic_nack(
            tag,
            BasicNackOptions {
                multiple: true,
                requeue: true,
            },
        ),
    )
    .await
}

/// `future`'s result, or an error naming `what` after `timeout`.
async fn within<T, E>(
    timeout: Duration,
    what: &str,
    future: impl Future<Output = Result<T, E>>,
) -> anyhow::Result<T>
where
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(timeout, future).await {
        Ok(result) => result.with_context(|| format!("broker error on {what}")),
        Err(_) => bail!(
            "no answer from the broker on {what} within {} s",
            timeout.as_secs_f64()
        ),
    }
}
