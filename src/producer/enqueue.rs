//! `sudokud enqueue`: publish a file's jobs to the jobs queue, each one
//! confirmed by the broker; results go to the results queue.

use std::fmt;
use std::time::{Duration, Instant};

use anyhow::Context;
use lapin::BasicProperties;

use super::broker::{Publisher, connect, ensure_jobs_queue};
use super::input::Batch;
use crate::config::AmqpSettings;

/// What an enqueue did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnqueueSummary {
    /// Job messages the broker confirmed.
    pub messages: usize,
    /// Puzzles in them.
    pub puzzles: usize,
    /// From the first publish to the last confirm.
    pub elapsed: Duration,
}

impl fmt::Display for EnqueueSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        write!(
            f,
            "enqueued {} puzzles in {} messages in {:.2} s ({:.0} puzzles/s, {:.0} messages/s)",
            self.puzzles,
            self.messages,
            self.elapsed.as_secs_f64(),
            self.puzzles as f64 / secs,
            self.messages as f64 / secs
        )
    }
}

/// Publishes every message of `batch` and waits for all the confirms.
/// `progress` is called with the messages and puzzles confirmed so far.
///
/// On an error, the jobs confirmed before it are in the queue; the error
/// says how many.
pub async fn enqueue(
    amqp: &AmqpSettings,
    batch: &Batch,
    connect_timeout: Duration,
    mut progress: impl FnMut(usize, usize),
) -> anyhow::Result<EnqueueSummary> {
    let connection = connect(amqp, "enqueue", connect_timeout).await?.connection;
    ensure_jobs_queue(&connection, amqp).await?;
    let mut publisher = Publisher::open(&connection, amqp).await?;
    let start = Instant::now();
    let (mut messages, mut puzzles) = (0usize, 0usize);
    let mut count = |publisher: &mut Publisher| {
        for index in publisher.take_confirmed() {
            messages += 1;
            puzzles += batch.messages[index].puzzles;
        }
        progress(messages, puzzles);
        (messages, puzzles)
    };
    let mut result = Ok(());
    for (index, message) in batch.messages.iter().enumerate() {
        result = publisher
            .publish(index, &message.body, BasicProperties::default())
            .await;
        if result.is_err() {
            break;
        }
        // Count confirms a few times a second's worth, not per message.
        if index % 256 == 255 {
            count(&mut publisher);
        }
    }
    if result.is_ok() {
        result = publisher.finish().await;
    }
    let (messages, puzzles) = count(&mut publisher);
    let elapsed = start.elapsed();
    publisher.close().await;
    let _ = connection.close(200, "OK".into()).await;
    result.with_context(|| {
        format!(
            "{messages} of {} messages ({puzzles} puzzles) were confirmed before this error",
            batch.messages.len()
        )
    })?;
    Ok(EnqueueSummary {
        messages,
        puzzles,
        elapsed,
    })
}
