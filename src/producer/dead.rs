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

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use lapin::message::BasicGetMessage;
use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions, ConfirmSelectOptions,
    QueueDeclareOptions, QueuePurgeOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, Connection, PublisherConfirm};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::broker::{connect, inspect_jobs_queue};
use crate::config::AmqpSettings;

/// Re-queued jobs published and not yet confirmed, at most.
const REQUEUE_WINDOW: usize = 256;

/// One dead-lettered job, as `sudokud dead list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// 1 for the head of the queue.
    pub position: usize,
    /// The job's `id` (a string as it is, anything else as JSON text), else
    /// its `message_id` property; `None` if it has neither.
    pub id: Option<String>,
    /// Why it was first dead-lettered: `x-first-death-reason`, else the
    /// oldest `x-death` entry's reason (`delivery_limit`, `rejected`,
    /// `expired`, `maxlen`).
    pub reason: Option<String>,
    /// The queue it was first dead-lettered from.
    pub queue: Option<String>,
    /// Times it was dead-lettered: the sum of the `x-death` counts.
    pub deaths: u64,
    /// When it was last dead-lettered.
    pub time: Option<SystemTime>,
    /// Size of the job message.
    pub bytes: usize,
}

/// What `sudokud dead list` saw.
#[derive(Debug, Clone)]
pub struct DeadList {
    pub queue: String,
    /// Messages in the queue when the listing started.
    pub total: u32,
    /// The first of them, in queue order, up to the limit asked for.
    pub letters: Vec<DeadLetter>,
}

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
    let (channel, total) = open_dead_letters(connection, amqp, timeout).await?;
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
        if !wanted_ids.is_empty() {
            let ids = job_ids(&message);
            match ids.iter().find(|id| wanted_ids.contains(id.as_str())) {
                Some(id) => {
                    found_ids.insert(id.clone());
                }
                None => {
                    last_kept = Some(tag);
                    continue;
                }
            }
        }
        let properties = fresh_properties(&message.delivery.properties);
        let confirm = within(
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
        .await?;
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
/// redelivered the message; a re-queued job leaves without them, as a
/// fresh job.
fn is_death_header(key: &str) -> bool {
    key == "x-death"
        || key == "x-delivery-count"
        || key.starts_with("x-first-death-")
        || key.starts_with("x-last-death-")
}

/// The ids a dead letter answers to in `--id`: the job's `id` and its
/// `message_id` property.
fn job_ids(message: &BasicGetMessage) -> Vec<String> {
    let mut ids = Vec::with_capacity(2);
    if let Some(id) = body_id(&message.delivery.data) {
        ids.push(id);
    }
    if let Some(id) = message.delivery.properties.message_id() {
        ids.push(id.to_string());
    }
    ids
}

/// The `id` field of a JSON job: a string as it is, anything else as its
/// JSON text; `None` if the body is not a JSON object with an `id`.
fn body_id(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    let head: Head<'_> = serde_json::from_slice(body).ok()?;
    let raw = head.id?;
    match serde_json::from_str::<String>(raw.get()) {
        Ok(text) => Some(text),
        Err(_) => Some(raw.get().to_string()),
    }
}

fn describe(position: usize, message: &BasicGetMessage) -> DeadLetter {
    let properties = &message.delivery.properties;
    let headers = properties.headers().as_ref();
    let header = |name: &str| headers.and_then(|h| h.inner().get(name));
    let deaths: Vec<&FieldTable> = match header("x-death") {
        Some(AMQPValue::FieldArray(entries)) => entries
            .as_slice()
            .iter()
            .filter_map(|entry| match entry {
                AMQPValue::FieldTable(table) => Some(table),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    // x-death lists the most recent death first.
    let reason = header("x-first-death-reason").and_then(text).or_else(|| {
        deaths
            .last()
            .and_then(|d| d.inner().get("reason"))
            .and_then(text)
    });
    let queue = header("x-first-death-queue").and_then(text).or_else(|| {
        deaths
            .last()
            .and_then(|d| d.inner().get("queue"))
            .and_then(text)
    });
    let count = deaths
        .iter()
        .map(|d| d.inner().get("count").and_then(number).unwrap_or(1))
        .sum();
    let time = deaths
        .iter()
        .filter_map(|d| d.inner().get("time").and_then(number))
        .max()
        .map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
    DeadLetter {
        position,
        id: body_id(&message.delivery.data)
            .or_else(|| properties.message_id().as_ref().map(|id| id.to_string())),
        reason,
        queue,
        deaths: count,
        time,
        bytes: message.delivery.data.len(),
    }
}

fn text(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_string()),
        _ => None,
    }
}

fn number(value: &AMQPValue) -> Option<u64> {
    match *value {
        AMQPValue::ShortShortUInt(n) => Some(n.into()),
        AMQPValue::ShortUInt(n) => Some(n.into()),
        AMQPValue::LongUInt(n) => Some(n.into()),
        AMQPValue::Timestamp(n) => Some(n),
        AMQPValue::ShortShortInt(n) => u64::try_from(n).ok(),
        AMQPValue::ShortInt(n) => u64::try_from(n).ok(),
        AMQPValue::LongInt(n) => u64::try_from(n).ok(),
        AMQPValue::LongLongInt(n) => u64::try_from(n).ok(),
        _ => None,
    }
}

/// A table (or JSON lines) of dead letters.
pub fn write_listing(
    out: &mut impl std::io::Write,
    letters: &[DeadLetter],
    json: bool,
) -> std::io::Result<()> {
    let time = |letter: &DeadLetter| {
        letter
            .time
            .map(|t| humantime::format_rfc3339_seconds(t).to_string())
    };
    if json {
        for letter in letters {
            let line = serde_json::json!({
                "position": letter.position,
                "id": letter.id,
                "reason": letter.reason,
                "deaths": letter.deaths,
                "time": time(letter),
                "queue": letter.queue,
                "bytes": letter.bytes,
            });
            writeln!(out, "{line}")?;
        }
        return Ok(());
    }
    if letters.is_empty() {
        return Ok(());
    }
    let rows: Vec<[String; 7]> = letters
        .iter()
        .map(|letter| {
            let or_dash = |value: Option<String>| value.unwrap_or_else(|| "-".into());
            [
                letter.position.to_string(),
                or_dash(letter.id.clone()),
                or_dash(letter.reason.clone()),
                letter.deaths.to_string(),
                or_dash(time(letter)),
                or_dash(letter.queue.clone()),
                letter.bytes.to_string(),
            ]
        })
        .collect();
    let header = [
        "#",
        "ID",
        "REASON",
        "DEATHS",
        "LAST DEATH",
        "QUEUE",
        "BYTES",
    ]
    .map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::FieldArray;

    #[test]
    fn ids_come_from_the_body() {
        assert_eq!(
            body_id(br#"{"id": "job-42", "puzzle": "1"}"#).as_deref(),
            Some("job-42")
        );
        assert_eq!(
            body_id(br#"{"puzzle": "1", "id": 7}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            body_id(br#"{"id": {"a": 1}}"#).as_deref(),
            Some(r#"{"a": 1}"#)
        );
        assert_eq!(body_id(br#"{"puzzle": "1"}"#), None);
        assert_eq!(body_id(b"not json"), None);
    }

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
