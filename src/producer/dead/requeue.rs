//! `sudokud dead requeue`: dead letters moved back to the jobs queue,
//! each removed from the dead-letter queue only once the broker has
//! confirmed its copy.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use anyhow::{Context, bail};
use lapin::message::BasicGetMessage;
use lapin::options::{BasicAckOptions, BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, Connection, PublisherConfirm};

use super::letter::job_ids;
use super::{get, give_back, open_dead_letters, within};
use crate::config::AmqpSettings;
use crate::producer::broker::{connect, inspect_jobs_queue};

/// Re-queued jobs published and not yet confirmed, at most.
const REQUEUE_WINDOW: usize = 256;

/// What `sudokud dead requeue` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequeueSummary {
    pub from: String,
    pub to: String,
    /// Dead letters moved to the jobs queue.
    pub requeued: usize,
    /// Dead letters left in the dead-letter queue.
    pub left: usize,
    /// The `--id`s asked for that matched no dead letter.
    pub not_found: Vec<String>,
}

/// Which dead letters to re-queue.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// At most this many; `None`: no limit.
    pub limit: Option<usize>,
    /// Only dead letters whose id is one of these; empty: any.
    pub ids: Vec<String>,
}

/// Moves dead letters back to the jobs queue: each is published there
/// (persistent properties and body unchanged, without the headers the
/// broker added when it dead-lettered it), and removed from the
/// dead-letter queue once the broker has confirmed the copy. Dead letters
/// not selected stay where they were.
pub async fn requeue(
    amqp: &AmqpSettings,
    selection: &Selection,
    timeout: Duration,
) -> anyhow::Result<RequeueSummary> {
    let connection = connect(amqp, "dead requeue", timeout).await?.connection;
    let result = requeue_on(&connection, amqp, selection, timeout).await;
    let _ = connection.close(200, "OK".into()).await;
    result
}

async fn requeue_on(
    connection: &Connection,
    amqp: &AmqpSettings,
    selection: &Selection,
    timeout: Duration,
) -> anyhow::Result<RequeueSummary> {
    ensure_jobs_queue(connection, amqp, timeout).await?;
    let (channel, total) = open_dead_letters(connection, amqp, timeout).await?;
    let publisher = open_publisher(connection, timeout).await?;
    let wanted_ids: HashSet<&str> = selection.ids.iter().map(String::as_str).collect();
    let mut found_ids: HashSet<String> = HashSet::new();
    let mut unconfirmed: VecDeque<(u64, PublisherConfirm)> = VecDeque::new();
    let mut requeued = 0;
    // The last message held and not re-queued: `multiple` nack gives back
    // every held message up to it.
    let mut last_kept = None;
    for _ in 0..total {
        if selection.limit.is_some_and(|limit| requeued >= limit) {
            break;
        }
        let Some(message) = get(&channel, amqp, timeout).await? else {
            break;
        };
        let tag = message.delivery.delivery_tag;
        if !wanted_ids.is_empty() && !is_wanted(&message, &wanted_ids, &mut found_ids) {
            last_kept = Some(tag);
            continue;
        }
        let confirm = republish(&publisher, amqp, &message, timeout).await?;
        unconfirmed.push_back((tag, confirm));
        requeued += 1;
        if unconfirmed.len() >= REQUEUE_WINDOW {
            settle_oldest(&channel, &mut unconfirmed, amqp, timeout).await?;
        }
    }
    while !unconfirmed.is_empty() {
        settle_oldest(&channel, &mut unconfirmed, amqp, timeout).await?;
    }
    if let Some(tag) = last_kept {
        give_back(&channel, tag, timeout).await?;
    }
    let _ = publisher.close(200, "OK".into()).await;
    let _ = channel.close(200, "OK".into()).await;
    let not_found = selection
        .ids
        .iter()
        .filter(|id| !found_ids.contains(id.as_str()))
        .cloned()
        .collect();
    Ok(RequeueSummary {
        from: amqp.dead_letter_queue.clone(),
        to: amqp.jobs_queue.clone(),
        requeued,
        left: (total as usize).saturating_sub(requeued),
        not_found,
    })
}

/// An error unless the jobs queue exists: a re-queued job must have
/// somewhere to go.
async fn ensure_jobs_queue(
    connection: &Connection,
    amqp: &AmqpSettings,
    timeout: Duration,
) -> anyhow::Result<()> {
    let jobs_queue = tokio::time::timeout(timeout, inspect_jobs_queue(connection, amqp))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "no answer from the broker about queue {} within {} s",
                amqp.jobs_queue,
                timeout.as_secs_f64()
            )
        })??;
    if jobs_queue.is_none() {
        bail!(
            "queue {} does not exist: start a worker (it declares the queues) before re-queueing",
            amqp.jobs_queue
        );
    }
    Ok(())
}

/// A channel with publisher confirms, for the re-queued jobs.
async fn open_publisher(connection: &Connection, timeout: Duration) -> anyhow::Result<Channel> {
    let publisher = connection
        .create_channel()
        .await
        .context("cannot open the publishing channel")?;
    within(
        timeout,
        "publisher confirms",
        publisher.confirm_select(ConfirmSelectOptions::default()),
    )
    .await?;
    Ok(publisher)
}

/// Whether one of the ids of `message` is in `wanted_ids`; that id goes
/// into `found_ids`.
fn is_wanted(
    message: &BasicGetMessage,
    wanted_ids: &HashSet<&str>,
    found_ids: &mut HashSet<String>,
) -> bool {
    let ids = job_ids(message);
    match ids.iter().find(|id| wanted_ids.contains(id.as_str())) {
        Some(id) => {
            found_ids.insert(id.clone());
            true
        }
        None => false,
    }
}

/// Publishes a dead letter's job to the jobs queue, as a fresh job.
async fn republish(
    publisher: &Channel,
    amqp: &AmqpSettings,
    message: &BasicGetMessage,
    timeout: Duration,
) -> anyhow::Result<PublisherConfirm> {
    let properties = fresh_properties(&message.delivery.properties);
    within(
        timeout,
        "re-publishing a job",
        publisher.basic_publish(
            ShortString::from(""),
            ShortString::from(amqp.jobs_queue.as_str()),
            BasicPublishOptions {
                mandatory: true,
                immediate: false,
            },
            &message.delivery.data,
            properties,
        ),
    )
    .await
}

/// Waits for the oldest re-published job's confirm, then removes its dead
/// letter.
async fn settle_oldest(
    channel: &Channel,
    unconfirmed: &mut VecDeque<(u64, PublisherConfirm)>,
    amqp: &AmqpSettings,
    timeout: Duration,
) -> anyhow::Result<()> {
    let Some((tag, confirm)) = unconfirmed.pop_front() else {
        return Ok(());
    };
    let confirmation = within(timeout, "the broker's confirm of a re-queued job", confirm).await?;
    match confirmation {
        Confirmation::Ack(None) => {}
        Confirmation::Ack(Some(returned)) | Confirmation::Nack(Some(returned)) => bail!(
            "the broker returned a re-queued job: {} {} (does the queue {} still exist?); it stays a dead letter",
            returned.reply_code,
            returned.reply_text,
            amqp.jobs_queue
        ),
        Confirmation::Nack(None) => {
            bail!("the broker refused a re-queued job (nack); it stays a dead letter")
        }
        Confirmation::NotRequested => bail!("publisher confirms are not enabled"),
    }
    within(
        timeout,
        "removing a re-queued dead letter",
        channel.basic_ack(tag, BasicAckOptions { multiple: false }),
    )
    .await
}

/// The original properties, without the headers dead-lettering added.
fn fresh_properties(properties: &BasicProperties) -> BasicProperties {
    let Some(headers) = properties.headers() else {
        return properties.clone();
    };
    let kept: std::collections::BTreeMap<ShortString, AMQPValue> = headers
        .inner()
        .iter()
        .filter(|(key, _)| !is_death_header(key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    properties.clone().with_headers(FieldTable::from(kept))
}

/// Whether the broker added this header when it dead-lettered or
/// redelivered the message, or the worker when it dead-lettered the job
/// itself; a re-queued job leaves without them, as a fresh job.
fn is_death_header(key: &str) -> bool {
    key == "x-death"
        || key == crate::protocol::DEAD_REASON_HEADER
        || key == "x-delivery-count"
        || key.starts_with("x-first-death-")
        || key.starts_with("x-last-death-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::FieldArray;

    #[test]
    fn fresh_properties_drop_only_the_death_headers() {
        let mut death = FieldTable::default();
        death.insert("count".into(), AMQPValue::LongLongInt(6));
        let mut headers = FieldTable::default();
        headers.insert(
            "x-death".into(),
            AMQPValue::FieldArray(FieldArray::from(vec![AMQPValue::FieldTable(death)])),
        );
        for key in [
            "x-first-death-reason",
            "x-first-death-queue",
            "x-first-death-exchange",
            "x-last-death-reason",
            "x-delivery-count",
            "x-sudokud-reason",
        ] {
            headers.insert(key.into(), AMQPValue::LongString("x".into()));
        }
        headers.insert("traceparent".into(), AMQPValue::LongString("00-ab".into()));
        headers.insert("x-custom".into(), AMQPValue::LongInt(1));
        let properties = BasicProperties::default()
            .with_headers(headers)
            .with_correlation_id("c-1".into())
            .with_delivery_mode(2);
        let fresh = fresh_properties(&properties);
        let kept: Vec<&str> = fresh
            .headers()
            .as_ref()
            .unwrap()
            .inner()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(kept, ["traceparent", "x-custom"]);
        assert_eq!(fresh.correlation_id(), properties.correlation_id());
        assert_eq!(fresh.delivery_mode(), &Some(2));
    }
}
