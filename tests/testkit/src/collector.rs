//! The results collector of the fault tests and the soak: a task that
//! reads a results queue through any fault (a broker restart, a cut
//! network, an alarm), reconnecting as often as needed, checks every result
//! as it comes, and records when each job was first answered and how many
//! answers came twice.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Acker, Connection, ConnectionProperties};
use serde_json::Value;
use tokio_stream::StreamExt;

/// Checks a result (its job's numeric `id`, the parsed message): `Err`
/// says what is wrong with it.
pub type Check = Arc<dyn Fn(u64, &Value) -> Result<(), String> + Send + Sync>;

/// Results read at once before they are acknowledged (`basic.qos`).
const PREFETCH: u16 = 1000;
/// Acknowledged together (`multiple`), or sooner when the queue is idle.
const ACK_EVERY: usize = 256;
/// How long the reader waits for a message before acknowledging what it
/// has and checking the connection.
const IDLE: Duration = Duration::from_millis(100);
/// The wait before connecting again.
const RETRY: Duration = Duration::from_millis(200);
/// After this long without a message, the reader asks the broker whether
/// its consumer is still there (a passive declare, bounded by the same
/// time): a consumer the broker dropped without a word, or a connection
/// that no longer answers, means connecting again.
const QUIET: Duration = Duration::from_secs(2);
/// The most the reader waits for a connection and its consumer, for an
/// acknowledgement to be sent, or for a connection to close: a node that
/// pauses or dies mid-handshake can leave any of them unanswered for good,
/// and the reader must go on to the next node instead.
const PATIENCE: Duration = Duration::from_secs(5);
/// Wrong results kept as examples; the rest are only counted.
const WRONG_KEPT: usize = 10;

/// What the collector saw.
#[derive(Default)]
pub struct Seen {
    /// When each job was first answered.
    first: HashMap<u64, Instant>,
    /// Every first answer's time, in order.
    first_log: Vec<Instant>,
    /// Hashes of the distinct result messages per job.
    bodies: HashMap<u64, Vec<u64>>,
    /// Answers beyond the first per job.
    pub duplicates: u64,
    /// Result messages the broker delivered to the collector again (the
    /// same message, read before a lost connection: not a new answer).
    pub redelivered: u64,
    /// Results that were not a correct answer.
    pub wrong: u64,
    /// The first few of them, described.
    pub wrong_examples: Vec<String>,
    /// Per `worker` field of the results: its first answer, its answers.
    by_worker: HashMap<String, (Instant, u64)>,
    /// When the last message arrived.
    pub last_message: Option<Instant>,
    /// Connections the collector opened.
    pub connections: u64,
}

impl Seen {
    /// Jobs answered at least once.
    pub fn answered(&self) -> usize {
        self.first.len()
    }

    /// When job `id` was first answered.
    pub fn first(&self, id: u64) -> Option<Instant> {
        self.first.get(&id).copied()
    }

    /// The ids answered at least once.
    pub fn answered_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.first.keys().copied()
    }

    /// Jobs answered more than once.
    pub fn duplicated_ids(&self) -> usize {
        self.bodies.values().filter(|b| b.len() > 1).count()
    }

    /// The last first answer.
    pub fn last_first(&self) -> Option<Instant> {
        self.first_log.last().copied()
    }

    /// The first first-answer after `at`.
    pub fn next_first_after(&self, at: Instant) -> Option<Instant> {
        let k = self.first_log.partition_point(|&t| t <= at);
        self.first_log.get(k).copied()
    }

    /// How long after `at` a job was first answered again.
    pub fn resumed_after(&self, at: Instant) -> Option<Duration> {
        self.next_first_after(at).map(|t| t - at)
    }

    /// The longest time without a new first answer from `from` until the
    /// first answer after `end`: the outage as a client saw it.
    pub fn longest_pause(&self, from: Instant, end: Instant) -> Option<Duration> {
        let resumed = self.next_first_after(end)?;
        let first = self.first_log.partition_point(|&t| t <= from);
        let last = self.first_log.partition_point(|&t| t <= resumed);
        let mut previous = from;
        let mut longest = Duration::ZERO;
        for &t in &self.first_log[first..last] {
            longest = longest.max(t - previous);
            previous = t;
        }
        Some(longest)
    }

    /// The first answer from the worker process `pid` (a result's
    /// `worker` is `host/pid`), and how many it gave.
    pub fn worker(&self, pid: u32) -> Option<(Instant, u64)> {
        let suffix = format!("/{pid}");
        self.by_worker
            .iter()
            .find(|(name, _)| name.ends_with(&suffix))
            .map(|(_, seen)| *seen)
    }

    fn wrong(&mut self, what: String) {
        self.wrong += 1;
        if self.wrong_examples.len() < WRONG_KEPT {
            self.wrong_examples.push(what);
        }
    }

    fn record(&mut self, check: &Check, delivery: &Delivery, now: Instant) {
        self.last_message = Some(now);
        let result: Value = match serde_json::from_slice(&delivery.data) {
            Ok(result) => result,
            Err(e) => {
                return self.wrong(format!(
                    "not JSON ({e}): {}",
                    String::from_utf8_lossy(&delivery.data)
                ));
            }
        };
        let Some(id) = result["id"].as_u64() else {
            return self.wrong(format!("no numeric id: {result}"));
        };
        let mut hasher = DefaultHasher::new();
        delivery.data.hash(&mut hasher);
        let hash = hasher.finish();
        let bodies = self.bodies.entry(id).or_default();
        if delivery.redelivered && bodies.contains(&hash) {
            self.redelivered += 1;
            return;
        }
        bodies.push(hash);
        if bodies.len() > 1 {
            self.duplicates += 1;
        }
        if let Err(wrong) = check(id, &result) {
            self.wrong(wrong);
        }
        if let Some(worker) = result["worker"].as_str() {
            match self.by_worker.get_mut(worker) {
                Some(entry) => entry.1 += 1,
                None => {
                    self.by_worker.insert(worker.to_string(), (now, 1));
                }
            }
        }
        if let std::collections::hash_map::Entry::Vacant(first) = self.first.entry(id) {
            first.insert(now);
            self.first_log.push(now);
        }
    }
}

/// Reads a results queue on a task of its own until stopped.
pub struct Collector {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Collector {
    /// Starts reading `queue` on the broker at `url`, checking each result
    /// with `check`. Must be called on a Tokio runtime.
    pub fn start(url: &str, queue: &str, check: Check) -> Collector {
        Collector::start_on(&[url.to_string()], queue, check)
    }

    /// [`Collector::start`] on a cluster: each connection goes to the next
    /// of `urls` after the one before, so the collector reads on through
    /// the loss of any node.
    pub fn start_on(urls: &[String], queue: &str, check: Check) -> Collector {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(collect(
            urls.to_vec(),
            queue.to_string(),
            check,
            Arc::clone(&seen),
            Arc::clone(&stop),
        ));
        Collector { seen, stop, task }
    }

    /// What it saw so far (reading waits while this is held).
    pub fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Jobs answered at least once.
    pub fn answered(&self) -> usize {
        self.seen().answered()
    }

    /// Stops reading, acknowledging what was read (waits up to 5 s).
    pub async fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut self.task).await;
    }
}

/// Whether `queue` still has a consumer, as the broker answers on
/// `channel` within [`QUIET`] (a failed or late answer is a no).
async fn still_consuming(channel: &lapin::Channel, queue: &str) -> bool {
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    let declared = channel.queue_declare(queue.into(), passive, FieldTable::default());
    matches!(
        tokio::time::timeout(QUIET, declared).await,
        Ok(Ok(q)) if q.consumer_count() > 0
    )
}

/// Acknowledges every delivery up to `last` at once (an acknowledgement
/// not sent within [`PATIENCE`] is given up: the broker delivers those
/// messages again on the next connection).
async fn ack_up_to(last: &mut Option<Acker>, pending: &mut usize) {
    if let Some(acker) = last.take() {
        let _ = tokio::time::timeout(PATIENCE, acker.ack(BasicAckOptions { multiple: true })).await;
    }
    *pending = 0;
}

async fn collect(
    urls: Vec<String>,
    queue: String,
    check: Check,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
) {
    let mut next = 0;
    while !stop.load(Ordering::Relaxed) {
        let url = &urls[next % urls.len().max(1)];
        next += 1;
        let connecting = Connection::connect(url, ConnectionProperties::default());
        let Ok(Ok(connection)) = tokio::time::timeout(PATIENCE, connecting).await else {
            tokio::time::sleep(RETRY).await;
            continue;
        };
        let consumer = async {
            let channel = connection.create_channel().await?;
            channel
                .basic_qos(PREFETCH, BasicQosOptions::default())
                .await?;
            let consumer = channel
                .basic_consume(
                    queue.as_str().into(),
                    "".into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await?;
            Ok::<_, lapin::Error>((channel, consumer))
        };
        let Ok(Ok((channel, mut consumer))) = tokio::time::timeout(PATIENCE, consumer).await else {
            let _ = tokio::time::timeout(PATIENCE, connection.close(200, "OK".into())).await;
            tokio::time::sleep(RETRY).await;
            continue;
        };
        seen.lock().unwrap_or_else(|e| e.into_inner()).connections += 1;
        let mut last: Option<Acker> = None;
        let mut pending = 0usize;
        let mut heard = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let delivery = match tokio::time::timeout(IDLE, consumer.next()).await {
                Err(_) => {
                    ack_up_to(&mut last, &mut pending).await;
                    if !connection.status().connected() {
                        break;
                    }
                    if heard.elapsed() > QUIET {
                        heard = Instant::now();
                        if !still_consuming(&channel, &queue).await {
                            break;
                        }
                    }
                    continue;
                }
                Ok(Some(Ok(delivery))) => delivery,
                Ok(_) => break,
            };
            heard = Instant::now();
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(&check, &delivery, heard);
            last = Some(delivery.acker);
            pending += 1;
            if pending >= ACK_EVERY {
                ack_up_to(&mut last, &mut pending).await;
            }
        }
        ack_up_to(&mut last, &mut pending).await;
        let _ = tokio::time::timeout(PATIENCE, connection.close(200, "OK".into())).await;
    }
}
