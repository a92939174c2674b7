//! `sudokud submit`: the round trip from a shell. Jobs go out with
//! `reply_to` a private queue (exclusive, auto-delete, named by the broker)
//! and a `correlation_id` each; results are written as JSON lines as they
//! come back, or in input order.
//!
//! A batch this command packed (`--batch`) is written back as one line per
//! puzzle, each with the `id` that puzzle's line would have had on its own,
//! so the output looks the same whatever the batch size. A JSON job line's
//! result is written as the worker sent it.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use lapin::message::Delivery;
use lapin::options::{BasicConsumeOptions, QueueDeclareOptions};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Connection};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;

use super::broker::{Publisher, connect, ensure_jobs_queue};
use super::input::{Batch, JobOptions, Message, Shape};
use crate::config::AmqpSettings;
use crate::protocol::{AnswerStatus, StatusCounts};

/// How `submit` waits and writes.
#[derive(Debug, Clone)]
pub struct SubmitOptions {
    /// Write results in input order rather than as they arrive.
    pub ordered: bool,
    /// Once every job is confirmed, how long to wait for the rest of the
    /// answers; `None` waits as long as it takes.
    pub timeout: Option<Duration>,
    pub connect_timeout: Duration,
}

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmitSummary {
    pub messages: usize,
    pub puzzles: usize,
    /// Messages answered.
    pub answered: usize,
    /// Puzzles answered, by status.
    pub statuses: StatusCounts,
    /// Answers to messages already answered (a redelivered job), skipped.
    pub duplicates: usize,
    /// Input lines of the messages that got no answer, in order.
    pub unanswered_lines: Vec<usize>,
    pub elapsed: Duration,
}

impl fmt::Display for SubmitSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        write!(
            f,
            "{} of {} jobs answered ({} puzzles) in {:.2} s ({:.0} puzzles/s):",
            self.answered,
            self.messages,
            self.puzzles,
            secs,
            self.statuses.total() as f64 / secs.max(1e-9)
        )?;
        for status in AnswerStatus::ALL {
            write!(f, " {} {}", status.as_str(), self.statuses.get(status))?;
        }
        if self.duplicates > 0 {
            write!(
                f,
                "; {} answers arrived twice (redelivered jobs) and were skipped",
                self.duplicates
            )?;
        }
        Ok(())
    }
}

/// What an answer is read against: the input lines of its message.
struct Sent {
    lines: Vec<usize>,
    shape: Shape,
}

/// The fields of a result this command reads.
#[derive(Deserialize)]
struct ResultView<'a> {
    #[serde(borrow)]
    status: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    results: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    worker: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct StatusView<'a> {
    #[serde(borrow)]
    status: Option<&'a str>,
}

fn status_named(status: Option<&str>) -> Option<AnswerStatus> {
    AnswerStatus::ALL
        .into_iter()
        .find(|s| Some(s.as_str()) == status)
}

/// Publishes every message of `batch` and writes each answer to `out` as a
/// JSON line. Returns when every message is answered, or when the wait
/// after the last confirm runs out; the summary lists what got no answer.
pub async fn submit(
    amqp: &AmqpSettings,
    batch: Batch,
    job_options: &JobOptions,
    options: &SubmitOptions,
    out: &mut impl Write,
    mut progress: impl FnMut(usize),
) -> anyhow::Result<SubmitSummary> {
    let connection = connect(amqp, "submit", options.connect_timeout)
        .await?
        .connection;
    ensure_jobs_queue(&connection, amqp).await?;
    let (reply_queue, mut consumer) = reply_queue(&connection).await?;
    let publisher = Publisher::open(&connection, amqp).await?;
    let (mut publishing, sent) = start_publishing(publisher, batch.messages, reply_queue);

    let start = Instant::now();
    let mut answers = Answers::new(sent, batch.puzzles);
    let mut published = false;
    let deadline = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(deadline);
    while !answers.complete() {
        tokio::select! {
            delivery = consumer.next() => {
                let delivery = match delivery {
                    Some(Ok(delivery)) => delivery,
                    Some(Err(e)) => return Err(e).context("lost the reply queue"),
                    None => bail!("the broker cancelled the reply queue's consumer"),
                };
                if answers.take(&delivery, job_options, options.ordered, out)? {
                    progress(answers.summary.answered);
                }
            }
            joined = &mut publishing, if !published => {
                published = true;
                joined.context("the publishing task failed")??;
                if let Some(timeout) = options.timeout {
                    deadline.as_mut().reset(tokio::time::Instant::now() + timeout);
                }
            }
            _ = &mut deadline => break,
        }
    }
    if !published {
        // Every answer came back before the last confirm did.
        publishing.await.context("the publishing task failed")??;
    }
    let summary = answers.finish(out, start.elapsed())?;
    let _ = connection.close(200, "OK".into()).await;
    Ok(summary)
}

/// Publishing runs as a task of its own, so answers are read while jobs
/// are still going out: the bodies go to that task, with `reply_to` this
/// run's reply queue and the message's index as `correlation_id`; what a
/// message's answer is read against stays here, in message order.
fn start_publishing(
    mut publisher: Publisher,
    messages: Vec<Message>,
    reply_to: ShortString,
) -> (JoinHandle<anyhow::Result<()>>, Vec<Sent>) {
    let (bodies, sent): (Vec<Vec<u8>>, Vec<Sent>) = messages
        .into_iter()
        .map(|m| {
            let sent = Sent {
                lines: m.lines,
                shape: m.shape,
            };
            (m.body, sent)
        })
        .unzip();
    let publishing = tokio::spawn(async move {
        for (index, body) in bodies.iter().enumerate() {
            let properties = BasicProperties::default()
                .with_reply_to(reply_to.clone())
                .with_correlation_id(index.to_string().into());
            publisher.publish(index, body, properties).await?;
        }
        publisher.finish().await?;
        publisher.close().await;
        anyhow::Ok(())
    });
    (publishing, sent)
}

/// The answers so far: which messages have one, the counts, and in
/// ordered mode the lines held behind a missing answer.
struct Answers {
    sent: Vec<Sent>,
    answered: Vec<bool>,
    summary: SubmitSummary,
    /// In ordered mode: lines of answered messages not yet written.
    held: BTreeMap<usize, Vec<u8>>,
    next_to_write: usize,
}

impl Answers {
    fn new(sent: Vec<Sent>, puzzles: usize) -> Answers {
        Answers {
            answered: vec![false; sent.len()],
            summary: SubmitSummary {
                messages: sent.len(),
                puzzles,
                answered: 0,
                statuses: StatusCounts::default(),
                duplicates: 0,
                unanswered_lines: Vec::new(),
                elapsed: Duration::ZERO,
            },
            held: BTreeMap::new(),
            next_to_write: 0,
            sent,
        }
    }

    /// Whether every message has its answer.
    fn complete(&self) -> bool {
        self.summary.answered >= self.sent.len()
    }

    /// Reads one delivery of the reply queue and writes its lines (in
    /// ordered mode, holds them until their turn). Returns whether it was
    /// a first answer to one of this run's messages.
    fn take(
        &mut self,
        delivery: &Delivery,
        job_options: &JobOptions,
        ordered: bool,
        out: &mut impl Write,
    ) -> anyhow::Result<bool> {
        let Some(index) = correlation_index(delivery.properties.correlation_id())
            .filter(|&i| i < self.answered.len())
        else {
            // Not one of ours (nothing else should come here).
            return Ok(false);
        };
        if self.answered[index] {
            self.summary.duplicates += 1;
            return Ok(false);
        }
        self.answered[index] = true;
        self.summary.answered += 1;
        let lines = render(
            &delivery.data,
            &self.sent[index],
            job_options,
            &mut self.summary.statuses,
        );
        if ordered {
            self.held.insert(index, lines);
            while let Some(lines) = self.held.remove(&self.next_to_write) {
                out.write_all(&lines).context("cannot write the results")?;
                self.next_to_write += 1;
            }
        } else {
            out.write_all(&lines).context("cannot write the results")?;
        }
        out.flush().context("cannot write the results")?;
        Ok(true)
    }

    /// Writes what is still held (ordered output: what waits behind a
    /// missing answer) and returns the summary.
    fn finish(self, out: &mut impl Write, elapsed: Duration) -> anyhow::Result<SubmitSummary> {
        for lines in self.held.into_values() {
            out.write_all(&lines).context("cannot write the results")?;
        }
        out.flush().context("cannot write the results")?;
        let mut summary = self.summary;
        summary.elapsed = elapsed;
        summary.unanswered_lines = self
            .answered
            .iter()
            .zip(&self.sent)
            .filter(|(done, _)| !**done)
            .flat_map(|(_, message)| message.lines.iter().copied())
            .collect();
        Ok(summary)
    }
}

/// Declares this run's reply queue and starts consuming it (no
/// acknowledgements: the queue is private and dies with the connection).
async fn reply_queue(connection: &Connection) -> anyhow::Result<(ShortString, lapin::Consumer)> {
    let channel = connection
        .create_channel()
        .await
        .context("cannot open the reply channel")?;
    let queue = channel
        .queue_declare(
            "".into(),
            QueueDeclareOptions {
                exclusive: true,
                auto_delete: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .context("cannot declare a reply queue")?;
    let name = queue.name().clone();
    let consumer = channel
        .basic_consume(
            name.clone(),
            "".into(),
            BasicConsumeOptions {
                no_ack: true,
                exclusive: true,
                ..BasicConsumeOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .context("cannot consume the reply queue")?;
    Ok((name, consumer))
}

/// A raw `status` value as a string, if it is one.
fn status_of(raw: Option<&RawValue>) -> Option<&str> {
    raw.and_then(|r| serde_json::from_str::<&str>(r.get()).ok())
}

fn correlation_index(id: &Option<ShortString>) -> Option<usize> {
    id.as_ref()?.as_str().parse().ok()
}

/// The output lines for the answer to `message`, counting statuses.
fn render(
    body: &[u8],
    message: &Sent,
    job_options: &JobOptions,
    statuses: &mut StatusCounts,
) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut count = |status: Option<&str>| {
        if let Some(status) = status_named(status) {
            statuses.add(status);
        }
    };
    let view: Option<ResultView> = serde_json::from_str(text).ok();
    let Some(view) = view else {
        // Not what the protocol promises; pass it on as it came.
        return format!("{text}\n").into_bytes();
    };
    if message.shape != Shape::Packed {
        match &view.results {
            Some(entries) => {
                for entry in entries {
                    let status = serde_json::from_str::<StatusView>(entry.get())
                        .ok()
                        .and_then(|s| s.status);
                    count(status);
                }
            }
            None => count(status_of(view.status)),
        }
        return format!("{text}\n").into_bytes();
    }
    // A batch this command packed: one line per puzzle, with its own id.
    let worker = view.worker.map_or("null", RawValue::get);
    let mut out = String::new();
    for (i, &line) in message.lines.iter().enumerate() {
        let id = job_options.id_for(line);
        match view.results.as_ref().and_then(|entries| entries.get(i)) {
            Some(entry) => {
                let status = serde_json::from_str::<StatusView>(entry.get())
                    .ok()
                    .and_then(|s| s.status);
                count(status);
                let inner = entry.get().trim();
                let inner = inner
                    .strip_prefix('{')
                    .and_then(|s| s.strip_suffix('}'))
                    .unwrap_or("")
                    .trim();
                let sep = if inner.is_empty() { "" } else { "," };
                out.push_str(&format!(
                    "{{\"id\":{id}{sep}{inner},\"worker\":{worker}}}\n"
                ));
            }
            None => {
                // The batch as a whole was refused: each puzzle shares why.
                count(status_of(view.status).or(Some("error")));
                let status = view.status.map_or("\"error\"", RawValue::get);
                let error = view
                    .error
                    .map_or("\"the result has no entry for this puzzle\"", RawValue::get);
                out.push_str(&format!(
                    "{{\"id\":{id},\"status\":{status},\"error\":{error},\"worker\":{worker}}}\n"
                ));
            }
        }
    }
    out.into_bytes()
}

impl SubmitSummary {
    /// An error naming the input lines whose jobs got no answer within the
    /// wait (the first 20 of them), if any did not.
    pub fn check_answered(&self) -> anyhow::Result<()> {
        const SHOWN: usize = 20;
        let lines = &self.unanswered_lines;
        if lines.is_empty() {
            return Ok(());
        }
        let mut list: Vec<String> = lines.iter().take(SHOWN).map(|l| l.to_string()).collect();
        if lines.len() > SHOWN {
            list.push(format!("and {} more", lines.len() - SHOWN));
        }
        bail!(
            "no answer within the wait for {} of {} jobs ({} puzzles), input lines {}",
            self.messages - self.answered,
            self.messages,
            lines.len(),
            list.join(", ")
        );
    }
}
