//! Helpers for the tests that run the worker against a real RabbitMQ
//! (`amqp://guest:guest@127.0.0.1:5672/%2f`, or `AMQP_URL`).
//!
//! Every test gets its own queue names and deletes its queues when done,
//! even when it fails. Logs stay quiet unless `TEST_LOG=1`. Waiting for
//! something to happen is [`eventually`]; running the `sudokud` binary is
//! [`command`] (with [`run_to_end`] or [`WorkerProcess`]).

pub mod http;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, Consumer};
use serde_json::Value;
use sudokud::Settings;
use sudokud::config::QueueType;
use sudokud::protocol::Answer;
use sudokud::solver::{Generator, Spec};
use sudokud_testkit::{Check, Collector, inspect_queue};
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;

pub use sudokud_testkit::{FAMOUS, PUZZLE, SOLUTION, UNSOLVABLE};

/// A generous guard against a hung test, never a speed requirement.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// How often [`eventually`] looks again.
pub const POLL: Duration = Duration::from_millis(20);

/// Polls `check` every [`POLL`] until it returns `Ok`, and returns that;
/// panics with the last `Err` (what was seen instead) after [`PATIENCE`].
pub async fn eventually<T>(check: impl AsyncFnMut() -> Result<T, String>) -> T {
    eventually_within(PATIENCE, POLL, check).await
}

/// [`eventually`], polling every `poll` for up to `patience`.
pub async fn eventually_within<T>(
    patience: Duration,
    poll: Duration,
    mut check: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let start = Instant::now();
    loop {
        match check().await {
            Ok(done) => return done,
            Err(seen) => assert!(start.elapsed() < patience, "{seen}"),
        }
        tokio::time::sleep(poll).await;
    }
}

pub fn amqp_url() -> String {
    std::env::var("AMQP_URL").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// Logs to the test output when `TEST_LOG=1`.
pub fn init_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var("TEST_LOG").is_ok_and(|v| v == "1") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(sudokud::telemetry::filter("info").unwrap())
                .with_test_writer()
                .try_init();
        }
    });
}

/// `scripts/NAME` of this repository.
pub fn script(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

/// Runs `scripts/NAME ARGS`: its standard output, trimmed. Fails the test,
/// with the script's standard error, if the script fails.
pub fn run_script(name: &str, args: &[&str]) -> String {
    try_run_script(name, args).unwrap_or_else(|e| panic!("{e}"))
}

/// [`run_script`] for a poll that may meet a passing failure (a broker
/// node paused for a moment): the script's standard error as the error.
pub fn try_run_script(name: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(script(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run scripts/{name}: {e}"));
    if !output.status.success() {
        return Err(format!(
            "{name} {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A name no other test, run or process uses.
pub fn unique(test: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "test.{test}.{}.{}.{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Worker settings for one test: its own queues, two threads, no
/// throughput lines.
pub fn settings(test: &str) -> Settings {
    let prefix = unique(test);
    let mut settings = Settings::default();
    settings.amqp.url = amqp_url();
    settings.amqp.jobs_queue = format!("{prefix}.jobs");
    settings.amqp.results_queue = format!("{prefix}.results");
    settings.amqp.dead_letter_queue = format!("{prefix}.dead");
    settings.worker.threads = 2;
    settings.log.throughput_secs = 0;
    settings
}

/// The same settings as `SUDOKUD__*` variables, for a worker process.
pub fn settings_env(settings: &Settings) -> Vec<(String, String)> {
    let mut vars = vec![
        ("SUDOKUD__AMQP__URL", settings.amqp.url.clone()),
        (
            "SUDOKUD__AMQP__JOBS_QUEUE",
            settings.amqp.jobs_queue.clone(),
        ),
        (
            "SUDOKUD__AMQP__RESULTS_QUEUE",
            settings.amqp.results_queue.clone(),
        ),
        (
            "SUDOKUD__AMQP__DEAD_LETTER_QUEUE",
            settings.amqp.dead_letter_queue.clone(),
        ),
        (
            "SUDOKUD__AMQP__QUEUE_TYPE",
            settings.amqp.queue_type.as_str().to_string(),
        ),
        (
            "SUDOKUD__AMQP__RESULTS_QUEUE_TYPE",
            settings.amqp.results_queue_type.as_str().to_string(),
        ),
        (
            "SUDOKUD__WORKER__THREADS",
            settings.worker.threads.to_string(),
        ),
        (
            "SUDOKUD__WORKER__SHUTDOWN_GRACE_SECS",
            settings.worker.shutdown_grace_secs.to_string(),
        ),
        ("SUDOKUD__LOG__FORMAT", "text".to_string()),
        (
            "SUDOKUD__LOG__THROUGHPUT_SECS",
            settings.log.throughput_secs.to_string(),
        ),
    ];
    if let Some(prefetch) = (settings.worker.prefetch > 0).then_some(settings.worker.prefetch) {
        vars.push(("SUDOKUD__WORKER__PREFETCH", prefetch.to_string()));
    }
    vars.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// A worker running in this process, stopped through its shutdown future.
pub struct TestWorker {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: JoinHandle<anyhow::Result<()>>,
}

impl TestWorker {
    pub fn start(settings: &Settings) -> TestWorker {
        init_logs();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let settings = settings.clone();
        let handle = tokio::spawn(sudokud::worker::run(settings, async move {
            let _ = stopped.await;
        }));
        TestWorker {
            stop: Some(stop),
            handle,
        }
    }

    /// Panics with the worker's error if `run` has returned.
    pub async fn assert_running(&mut self) {
        if self.handle.is_finished() {
            let result = (&mut self.handle).await;
            panic!("the worker stopped on its own: {result:?}");
        }
    }

    /// Waits for `run` to return on its own.
    pub async fn finished(mut self) -> anyhow::Result<()> {
        match tokio::time::timeout(PATIENCE, &mut self.handle).await {
            Ok(joined) => joined.map_err(anyhow::Error::from)?,
            Err(_) => panic!("the worker did not stop within {PATIENCE:?}"),
        }
    }

    /// Asks the worker to shut down and waits for `run` to return.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match tokio::time::timeout(PATIENCE, &mut self.handle).await {
            Ok(joined) => joined.map_err(anyhow::Error::from)?,
            Err(_) => panic!("the worker did not stop within {PATIENCE:?}"),
        }
    }
}

/// A producer and result reader, the way a user of the service would be
/// one. Deletes the queues it was told about when dropped.
pub struct Client {
    pub connection: Connection,
    pub channel: Channel,
    pub settings: Settings,
    cleanup: Vec<String>,
}

/// `rabbitmqctl` on the default node.
pub fn ctl(args: &[&str]) {
    ctl_with(Command::new("rabbitmqctl").args(args), args);
}

/// Runs `command`, a `rabbitmqctl` given `args`, and panics with what it
/// said unless it succeeds.
pub fn ctl_with(command: &mut Command, args: &[&str]) {
    let output = command.output().expect("cannot run rabbitmqctl");
    assert!(
        output.status.success(),
        "rabbitmqctl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

impl Client {
    /// Has `queue` refuse (nack) every message published to it, by a
    /// policy (so it works on a queue the worker declares with arguments of
    /// its own), and waits until it does. Returns the policy's name, for
    /// `rabbitmqctl clear_policy`.
    pub async fn refuse_all(&self, queue: &str) -> String {
        let policy = format!("{queue}.refuse");
        ctl(&[
            "set_policy",
            "--apply-to",
            "queues",
            &policy,
            &format!("^{}$", queue.replace('.', "\\.")),
            r#"{"max-length": 0, "overflow": "reject-publish"}"#,
        ]);
        // Policies apply asynchronously: wait until the queue refuses.
        eventually(async || {
            let confirm = self
                .channel
                .basic_publish(
                    "".into(),
                    queue.into(),
                    BasicPublishOptions::default(),
                    b"probe",
                    BasicProperties::default(),
                )
                .await
                .unwrap()
                .await
                .unwrap();
            if confirm.is_nack() {
                Ok(())
            } else {
                Err(format!("{queue} still takes messages"))
            }
        })
        .await;
        policy
    }
}

impl Client {
    /// A client of the queues another client declared, for publishing
    /// only (through another node, say): dropped, it leaves the queues to
    /// that client.
    pub async fn publisher(settings: &Settings) -> Client {
        let mut client = Client::connect(settings).await;
        client.cleanup.clear();
        client
    }

    /// Connects and declares the worker's topology (the same arguments the
    /// worker uses, so the order they start in does not matter).
    pub async fn connect(settings: &Settings) -> Client {
        init_logs();
        let connection = Connection::connect(&settings.amqp.url, ConnectionProperties::default())
            .await
            .expect("the tests need RabbitMQ on localhost (see .ci/run)");
        let channel = connection.create_channel().await.unwrap();
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .unwrap();
        sudokud::broker::declare_topology(&channel, &settings.amqp)
            .await
            .unwrap();
        Client {
            connection,
            channel,
            settings: settings.clone(),
            cleanup: vec![
                settings.amqp.jobs_queue.clone(),
                settings.amqp.results_queue.clone(),
                settings.amqp.dead_letter_queue.clone(),
            ],
        }
    }

    /// Declares a durable queue of its own (deleted with the others).
    pub async fn declare_queue(&mut self, name: &str) {
        self.declare_queue_with(name, QueueDeclareOptions::durable(), FieldTable::default())
            .await;
    }

    /// Declares a queue of its own with `options` and `arguments` (deleted
    /// with the others).
    pub async fn declare_queue_with(
        &mut self,
        name: &str,
        options: QueueDeclareOptions,
        arguments: FieldTable,
    ) {
        self.channel
            .queue_declare(name.into(), options, arguments)
            .await
            .unwrap();
        self.cleanup.push(name.to_string());
    }

    /// A consumer of `queue` on a channel of its own, with a prefetch of
    /// `prefetch` when given: jobs it takes stay unacknowledged until the
    /// test settles them, and go back to the queue when the channel closes.
    pub async fn consumer(&self, queue: &str, prefetch: Option<u16>) -> (Channel, Consumer) {
        let channel = self.connection.create_channel().await.unwrap();
        if let Some(prefetch) = prefetch {
            channel
                .basic_qos(prefetch, BasicQosOptions::default())
                .await
                .unwrap();
        }
        let consumer = channel
            .basic_consume(
                queue.into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        (channel, consumer)
    }

    /// Publishes a job (persistent) and waits for the broker's confirm.
    pub async fn publish(&self, body: impl AsRef<[u8]>, properties: BasicProperties) {
        let confirm = self
            .channel
            .basic_publish(
                "".into(),
                self.settings.amqp.jobs_queue.as_str().into(),
                BasicPublishOptions::default(),
                body.as_ref(),
                properties.with_delivery_mode(2),
            )
            .await
            .unwrap()
            .await
            .unwrap();
        assert!(confirm.is_ack());
    }

    /// Publishes many job bodies with no properties of their own, then
    /// waits for all their confirms.
    pub async fn publish_bodies(&self, bodies: Vec<Vec<u8>>) {
        self.publish_all(
            bodies
                .into_iter()
                .map(|body| (body, BasicProperties::default())),
        )
        .await;
    }

    /// Publishes many jobs, then waits for all their confirms.
    pub async fn publish_all(&self, bodies: impl IntoIterator<Item = (Vec<u8>, BasicProperties)>) {
        let mut confirms = Vec::new();
        for (body, properties) in bodies {
            confirms.push(
                self.channel
                    .basic_publish(
                        "".into(),
                        self.settings.amqp.jobs_queue.as_str().into(),
                        BasicPublishOptions::default(),
                        &body,
                        properties.with_delivery_mode(2),
                    )
                    .await
                    .unwrap(),
            );
        }
        for confirm in confirms {
            assert!(confirm.await.unwrap().is_ack());
        }
    }

    /// Starts reading `queue` (results are acknowledged as they are read).
    pub async fn reader(&self, queue: &str) -> Reader {
        let (channel, consumer) = self.consumer(queue, None).await;
        Reader { channel, consumer }
    }

    pub async fn results(&self) -> Reader {
        self.reader(&self.settings.amqp.results_queue.clone()).await
    }

    /// `queue` as the broker has it now, on a channel of its own.
    async fn inspect(&self, queue: &str) -> lapin::Queue {
        let channel = self.connection.create_channel().await.unwrap();
        let inspected = inspect_queue(&channel, queue).await.unwrap();
        let _ = channel.close(200, "OK".into()).await;
        inspected
    }

    /// Messages ready in `queue` (not counting unacknowledged ones).
    pub async fn ready(&self, queue: &str) -> u32 {
        self.inspect(queue).await.message_count()
    }

    /// Waits until `queue` has `n` messages ready. A quorum queue's counts
    /// lag the acknowledgements and requeues it has been sent, so tests
    /// wait for the count to settle rather than read it once.
    pub async fn wait_for_ready(&self, queue: &str, n: u32) {
        self.wait_for_count(queue, n, "messages ready", lapin::Queue::message_count)
            .await;
    }

    /// Waits until `count` of `queue` as the broker has it is `n`; `what`
    /// names the count in the message of a test that gives up.
    async fn wait_for_count(
        &self,
        queue: &str,
        n: u32,
        what: &str,
        count: fn(&lapin::Queue) -> u32,
    ) {
        eventually(async || match count(&self.inspect(queue).await) {
            found if found == n => Ok(()),
            found => Err(format!("{queue} has {found} {what}, expected {n}")),
        })
        .await;
    }

    /// After a worker that had answered `answered` stopped: reads the
    /// results it still published (each once: one worker never answers a
    /// delivery twice), checks that it left jobs in the queue, then runs
    /// another worker until every one of the jobs (`puzzles`, ids their
    /// index) has been answered at least once, checking each answer.
    /// Panics if a job is never answered: lost. Answers given twice are
    /// allowed (delivery is at least once) and reported.
    pub async fn nothing_lost_after_stop(
        &self,
        results: &mut Reader,
        mut answered: HashSet<u64>,
        puzzles: &[String],
    ) {
        while let Some(result) = results.try_next(Duration::from_millis(500)).await {
            let id = result.body["id"].as_u64().expect("a numeric id");
            assert!(answered.insert(id), "job {id} answered twice by one worker");
        }
        eventually(
            async || match self.ready(&self.settings.amqp.jobs_queue).await {
                0 => Err("no job left in the queue: the worker did not stop consuming".to_string()),
                _ => Ok(()),
            },
        )
        .await;
        let next = TestWorker::start(&self.settings);
        let mut again = 0;
        while answered.len() < puzzles.len() {
            let result = results.next().await;
            let id = result.body["id"].as_u64().expect("a numeric id");
            let puzzle = &puzzles[id as usize];
            let solution = result.body["solution"].as_str().unwrap_or_default();
            assert!(is_solution_of(solution, puzzle), "{}", result.body);
            if !answered.insert(id) {
                again += 1;
            }
        }
        next.stop().await.expect("the second worker stops cleanly");
        if again > 0 {
            eprintln!("{again} jobs answered twice across the shutdown (at least once)");
        }
    }

    /// Waits until `queue` has `n` consumers.
    pub async fn wait_for_consumers(&self, queue: &str, n: u32) {
        self.wait_for_count(queue, n, "consumers", lapin::Queue::consumer_count)
            .await;
    }

    /// Deletes this test's queues.
    pub async fn cleanup(mut self) {
        for queue in std::mem::take(&mut self.cleanup) {
            let _ = self
                .channel
                .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                .await;
        }
        let _ = self.connection.close(200, "OK".into()).await;
    }
}

impl Drop for Client {
    /// A failed test still deletes its queues, from a connection of its own.
    fn drop(&mut self) {
        let queues = std::mem::take(&mut self.cleanup);
        if queues.is_empty() {
            return;
        }
        let url = self.settings.amqp.url.clone();
        let _ = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            // Bounded: a broker that stops answering must not hang the
            // test run in a destructor.
            let cleanup = async move {
                let Ok(connection) =
                    Connection::connect(&url, ConnectionProperties::default()).await
                else {
                    return;
                };
                for queue in queues {
                    if let Ok(channel) = connection.create_channel().await {
                        let _ = channel
                            .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                            .await;
                    }
                }
                let _ = connection.close(200, "OK".into()).await;
            };
            let _ = runtime.block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(20), cleanup).await
            });
        })
        .join();
    }
}

/// A broker test's usual start: a client on the test's queues, a worker on
/// them, and a reader of the results queue.
pub struct Rig {
    pub client: Client,
    pub worker: TestWorker,
    pub results: Reader,
}

impl Rig {
    /// Connects, starts a worker with `settings`, and reads the results.
    pub async fn start(settings: &Settings) -> Rig {
        let client = Client::connect(settings).await;
        let worker = TestWorker::start(settings);
        let results = client.results().await;
        Rig {
            client,
            worker,
            results,
        }
    }

    /// Stops the worker, which must stop cleanly, and deletes the test's
    /// queues.
    pub async fn stop(self) {
        self.worker.stop().await.unwrap();
        self.client.cleanup().await;
    }
}

/// A result as read from a queue.
#[derive(Debug)]
pub struct Received {
    pub body: Value,
    pub properties: BasicProperties,
    pub raw: Vec<u8>,
}

impl Received {
    pub fn correlation_id(&self) -> Option<String> {
        self.properties
            .correlation_id()
            .as_ref()
            .map(|c| c.to_string())
    }
}

pub struct Reader {
    pub channel: Channel,
    consumer: Consumer,
}

impl Reader {
    /// The next message, acknowledged; panics after [`PATIENCE`].
    pub async fn next(&mut self) -> Received {
        let delivery: Delivery = tokio::time::timeout(PATIENCE, self.consumer.next())
            .await
            .expect("no result within the patience limit")
            .expect("the result consumer ended")
            .expect("the result consumer failed");
        delivery.ack(BasicAckOptions::default()).await.unwrap();
        let body = serde_json::from_slice(&delivery.data).unwrap_or_else(|e| {
            panic!(
                "result is not JSON ({e}): {}",
                String::from_utf8_lossy(&delivery.data)
            )
        });
        Received {
            body,
            properties: delivery.properties,
            raw: delivery.data,
        }
    }

    /// The next message's body, whatever it is.
    pub async fn next_raw(&mut self) -> Vec<u8> {
        let delivery: Delivery = tokio::time::timeout(PATIENCE, self.consumer.next())
            .await
            .expect("no message within the patience limit")
            .expect("the consumer ended")
            .expect("the consumer failed");
        delivery.ack(BasicAckOptions::default()).await.unwrap();
        delivery.data
    }

    /// The numeric ids of the next `n` results, each once.
    pub async fn take_ids(&mut self, n: usize) -> HashSet<u64> {
        let mut ids = HashSet::new();
        for result in self.take(n).await {
            assert!(ids.insert(result.body["id"].as_u64().unwrap()));
        }
        ids
    }

    /// The next `n` messages.
    pub async fn take(&mut self, n: usize) -> Vec<Received> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.next().await);
        }
        out
    }

    /// Whether a message arrives within `wait` (for checking that none
    /// does; `wait` only bounds how long the test looks).
    pub async fn try_next(&mut self, wait: Duration) -> Option<Received> {
        match tokio::time::timeout(wait, self.consumer.next()).await {
            Ok(Some(Ok(delivery))) => {
                delivery.ack(BasicAckOptions::default()).await.unwrap();
                Some(Received {
                    body: serde_json::from_slice(&delivery.data).unwrap_or(Value::Null),
                    properties: delivery.properties,
                    raw: delivery.data,
                })
            }
            _ => None,
        }
    }
}

/// Results keyed by their `id` (as JSON text).
pub fn by_id(results: Vec<Received>) -> HashMap<String, Received> {
    let mut map = HashMap::new();
    for result in results {
        let id = result.body["id"].to_string();
        assert!(
            map.insert(id.clone(), result).is_none(),
            "two results for id {id}"
        );
    }
    map
}

/// Job properties with a `message_id`.
pub fn with_message_id(id: &str) -> BasicProperties {
    BasicProperties::default().with_message_id(ShortString::from(id))
}

/// One job per puzzle, `{"id": i, "puzzle": ...}` with `i` its index.
pub fn jobs(puzzles: &[String]) -> Vec<(Vec<u8>, BasicProperties)> {
    puzzles
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                serde_json::to_vec(&serde_json::json!({"id": i, "puzzle": p})).unwrap(),
                BasicProperties::default(),
            )
        })
        .collect()
}

/// The seed of every generated puzzle in the tests.
pub const SEED: u64 = 2026;

/// How many distinct puzzles the generator makes for [`puzzles`]; beyond
/// them come copies with their digits renamed.
const GENERATED: usize = 400;

/// The generator's first [`GENERATED`] puzzles with seed [`SEED`]: each
/// has one solution and is minimal. Made once per test process, on two
/// threads (the sequence does not depend on them).
fn generated() -> &'static [String] {
    static PUZZLES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    PUZZLES.get_or_init(|| {
        let generator = Generator::new(Spec {
            seed: SEED,
            ..Spec::default()
        })
        .expect("the default parameters are valid");
        let make = |i: usize| {
            generator
                .puzzle(i as u64, || false)
                .expect("a generator never told to stop makes its puzzle")
                .puzzle
                .to_string()
        };
        std::thread::scope(|scope| {
            let odd = scope.spawn(|| (1..GENERATED).step_by(2).map(make).collect::<Vec<_>>());
            let even: Vec<String> = (0..GENERATED).step_by(2).map(make).collect();
            let odd = odd.join().expect("the generator does not panic");
            even.into_iter()
                .zip(odd)
                .flat_map(|(e, o)| [e, o])
                .collect()
        })
    })
}

/// `puzzle` with its digits renamed by a permutation drawn from `copy`
/// (`0` keeps them): the same puzzle up to names, so it has as many
/// solutions, and a valid grid stays valid.
fn renamed(puzzle: &str, copy: usize) -> String {
    let mut digits: [u8; 9] = std::array::from_fn(|d| b'1' + d as u8);
    if copy > 0 {
        // A Fisher-Yates shuffle driven by an LCG seeded with `copy`.
        let mut state = copy as u64;
        for i in (1..9).rev() {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            digits.swap(i, (state >> 33) as usize % (i + 1));
        }
    }
    puzzle
        .bytes()
        .map(|c| match c {
            b'1'..=b'9' => digits[(c - b'1') as usize] as char,
            _ => '.',
        })
        .collect()
}

/// `n` puzzles with one solution each, quick for the solver: the
/// generator's with seed [`SEED`], then copies of them with digits renamed.
pub fn puzzles(n: usize) -> Vec<String> {
    let base = generated();
    (0..n)
        .map(|i| renamed(&base[i % GENERATED], i / GENERATED))
        .collect()
}

/// `n` puzzles with one solution each, hard for the solver: the famous
/// puzzles of [`FAMOUS`] in turn, then copies of them with digits renamed.
pub fn hard_puzzles(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| renamed(FAMOUS[i % FAMOUS.len()].1, i / FAMOUS.len()))
        .collect()
}

/// A puzzle with more than one solution: puzzle `i` of [`puzzles`] with
/// one given removed. The generator's puzzles are minimal, so removing any
/// given leaves several solutions.
pub fn several_solutions(i: usize) -> String {
    let puzzle = &generated()[i % GENERATED];
    let givens: Vec<usize> = puzzle
        .bytes()
        .enumerate()
        .filter(|&(_, c)| c != b'.')
        .map(|(cell, _)| cell)
        .collect();
    let removed = givens[i % givens.len()];
    puzzle
        .char_indices()
        .map(|(cell, c)| if cell == removed { '.' } else { c })
        .collect()
}

/// The `difficulty` a result carries for `puzzle`: the library's rating
/// ([`sudokud::rate`]) written as the protocol writes it (the protocol's
/// unit tests check that writing field for field against the rating).
/// Any answer carries it the same way; an `invalid` one is the simplest.
pub fn expected_difficulty(puzzle: &str) -> Value {
    let grid = sudokud::Grid::parse(puzzle).expect("test puzzles are valid");
    let rating = sudokud::rate(&grid).expect("the puzzle has one solution");
    let answer = Answer {
        difficulty: Some(Box::new(rating)),
        ..Answer::invalid("")
    };
    serde_json::to_value(&answer).expect("an answer is JSON")["difficulty"].clone()
}

/// Whether `solution` is a complete, valid grid that keeps the givens of
/// `puzzle` (both 81-character strings, `.` or `0` for blanks).
pub fn is_solution_of(solution: &str, puzzle: &str) -> bool {
    let s: Vec<u8> = solution.bytes().collect();
    let p: Vec<u8> = puzzle.bytes().collect();
    if s.len() != 81 || p.len() != 81 || !s.iter().all(|c| (b'1'..=b'9').contains(c)) {
        return false;
    }
    if (0..81).any(|i| p[i] != b'.' && p[i] != b'0' && p[i] != s[i]) {
        return false;
    }
    let unit_ok = |cells: [usize; 9]| {
        let mut seen = 0u16;
        for c in cells {
            seen |= 1 << (s[c] - b'0');
        }
        seen == 0b11_1111_1110
    };
    (0..9).all(|i| {
        unit_ok(std::array::from_fn(|k| i * 9 + k))
            && unit_ok(std::array::from_fn(|k| k * 9 + i))
            && unit_ok(std::array::from_fn(|k| {
                (i / 3 * 3 + k / 3) * 9 + i % 3 * 3 + k % 3
            }))
    })
}

/// A quorum queue or a classic one, for tests that do not care.
pub fn classic(mut settings: Settings) -> Settings {
    settings.amqp.queue_type = QueueType::Classic;
    settings
}

/// The `sudokud` binary, run from a directory without a config file and
/// without `RUST_LOG`, with `settings` (if any) as `SUDOKUD__*` variables
/// and the `extra` variables. Every test runs the binary through this.
pub fn command(settings: Option<&Settings>, extra: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sudokud"));
    command
        .current_dir(std::env::temp_dir())
        .env_remove("RUST_LOG")
        .envs(settings.map(settings_env).unwrap_or_default())
        .envs(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    command
}

/// What a run of the binary left behind.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Run {
    /// Standard output, a JSON value a line.
    pub fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }
}

/// Runs `command` to its end with `stdin` as its input (blocking: call it
/// from `spawn_blocking` in an async test).
pub fn run_to_end(mut command: Command, stdin: &str) -> Run {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_string();
    // Written from a thread of its own, so a large input cannot block
    // while the binary waits for its output to be read.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().expect("the binary finishes");
    let _ = writer.join();
    let run = Run {
        stdout: String::from_utf8(output.stdout).expect("UTF-8 output"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 errors"),
        code: output.status.code().unwrap_or(-1),
    };
    if std::env::var("TEST_LOG").is_ok_and(|v| v == "1") {
        eprintln!("[sudokud {command:?}] exit {}\n{}", run.code, run.stderr);
    }
    run
}

/// A `sudokud run` process, its standard error collected line by line.
pub struct WorkerProcess {
    pub child: std::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
    /// Reads standard error until the process closes it; joined once the
    /// process has exited, so [`WorkerProcess::lines`] then has them all.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl WorkerProcess {
    /// Starts the real binary with `settings` as environment variables
    /// (plus `extra` ones), from a directory without a config file.
    pub fn start(settings: &Settings, extra: &[(&str, &str)]) -> WorkerProcess {
        let mut child = command(Some(settings), extra)
            .arg("run")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start sudokud");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr is piped");
        let sink = Arc::clone(&lines);
        let reader = std::thread::spawn(move || {
            let verbose = std::env::var("TEST_LOG").is_ok_and(|v| v == "1");
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if verbose {
                    eprintln!("[worker] {line}");
                }
                sink.lock().unwrap().push(line);
            }
        });
        WorkerProcess {
            child,
            lines,
            reader: Some(reader),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the process has logged so far (everything, once it exited).
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The lines logged so far that are JSON (with `log.format = "json"`:
    /// every log line).
    pub fn json_lines(&self) -> Vec<Value> {
        self.lines()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits until a logged line satisfies `pred`, and returns it.
    pub async fn wait_for_line(&self, pred: impl Fn(&str) -> bool) -> String {
        eventually(async || {
            let lines = self.lines();
            lines.iter().find(|l| pred(l)).cloned().ok_or_else(|| {
                format!("no such log line; the worker logged:\n{}", lines.join("\n"))
            })
        })
        .await
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("cannot run kill");
        assert!(status.success());
    }

    /// The exit status if the process has exited; its log is then
    /// complete (the reader has taken the last lines).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().unwrap()?;
        if let Some(reader) = self.reader.take() {
            // The process is gone, so its end of the pipe is closed: the
            // reader is at the end of the stream, or about to be.
            reader.join().expect("the log reader panicked");
        }
        Some(status)
    }

    /// Waits for the process to exit.
    pub async fn exit_status(&mut self) -> ExitStatus {
        eventually(async || self.exited().ok_or("the worker did not exit".to_string())).await
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A collector's check that each answer solves its job's puzzle (ids
/// index `puzzles`).
pub fn solves_its_puzzle(puzzles: &[String]) -> Check {
    let puzzles = puzzles.to_vec();
    Arc::new(move |id, result| {
        let puzzle = puzzles
            .get(id as usize)
            .ok_or_else(|| format!("unknown id {id}"))?;
        let solution = result["solution"].as_str().unwrap_or_default();
        if is_solution_of(solution, puzzle) {
            Ok(())
        } else {
            Err(format!("not a solution of job {id}: {result}"))
        }
    })
}

/// Declares `queues` durable with no arguments (so classic, on the node of
/// `connection`), on a channel of their own.
pub async fn declare_plain_queues(connection: &Connection, queues: &[&String]) {
    let channel = connection.create_channel().await.unwrap();
    for queue in queues {
        channel
            .queue_declare(
                queue.as_str().into(),
                QueueDeclareOptions::durable(),
                FieldTable::default(),
            )
            .await
            .unwrap();
    }
}

/// Panics if the collector saw a wrong answer.
pub fn assert_none_wrong(results: &Collector) {
    let seen = results.seen();
    assert!(
        seen.wrong == 0,
        "{} wrong answers: {:?}",
        seen.wrong,
        seen.wrong_examples
    );
}
