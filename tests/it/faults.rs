//! Faults, injected mid-stream into the real `sudokud` binary working
//! against a real RabbitMQ: a broker restart, a network cut and a silent
//! network (missed heartbeats), a worker killed with SIGKILL, a poison job,
//! a flood of pathological puzzles, a memory alarm, and memory with a deep
//! backlog of large batches.
//!
//! These disturb the whole broker node, so they run against a node of
//! their own (`scripts/fault-node.sh`, AMQP port 5673), started on first
//! use and left running for the next run (`scripts/fault-node.sh stop`
//! stops it), one test at a time. Every test publishes a few thousand
//! jobs, checks that each was answered at least once with a correct result
//! (solutions verified), counts and reports duplicates (delivery is at
//! least once), and checks that no job is left in the queues.
//!
//! Built only with `--features fault-injection` (the poison job needs it):
//! `cargo test --features fault-injection --test it -- faults::`. Set `TEST_LOG=1`
//! to see the workers' logs.

use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::common::http::{free_port, get_ok};
use crate::common::*;
use lapin::BasicProperties;
use serde_json::json;
use sudokud::Settings;
use sudokud_testkit::Collector;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A failure guard for whole streams of jobs, never a speed requirement.
const STREAM_PATIENCE: Duration = Duration::from_secs(300);

fn script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fault-node.sh")
}

/// The dedicated node, started once per run; the guard keeps the tests
/// apart, since each of them disturbs the whole node.
async fn fault_node() -> tokio::sync::MutexGuard<'static, ()> {
    // Each test runs on a runtime of its own: an async mutex, since the
    // guard is held across the whole test.
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    static URL: OnceLock<String> = OnceLock::new();
    let guard = LOCK.lock().await;
    URL.get_or_init(|| {
        let status = Command::new(script())
            .arg("start")
            .status()
            .expect("cannot run scripts/fault-node.sh");
        assert!(status.success(), "the fault node did not start");
        String::new()
    });
    // A test that failed half-way may have left the node stopped or in
    // alarm: put it back.
    ctl(&["start_app"]);
    ctl(&["set_vm_memory_high_watermark", "0.4"]);
    guard
}

/// `rabbitmqctl` on the fault node.
fn ctl(args: &[&str]) {
    ctl_with(Command::new(script()).arg("ctl").args(args), args);
}

fn fault_url() -> String {
    let output = Command::new(script())
        .arg("url")
        .output()
        .expect("cannot run scripts/fault-node.sh");
    String::from_utf8(output.stdout)
        .expect("a URL")
        .trim()
        .to_string()
}

/// Settings for a test on the fault node: its own queues, two threads,
/// quick reconnects.
fn fault_settings(test: &str) -> Settings {
    let mut settings = settings(test);
    settings.amqp.url = fault_url();
    settings
}

/// Environment for a worker process beyond what `settings_env` passes.
const QUICK_RECONNECT: [(&str, &str); 2] = [
    ("SUDOKUD__AMQP__RECONNECT_INITIAL_MS", "200"),
    ("SUDOKUD__AMQP__RECONNECT_MAX_MS", "2000"),
];

/// A collector of `queue` that checks each answer solves its puzzle (ids
/// index `puzzles`).
fn solutions(url: &str, queue: &str, puzzles: &[String]) -> Collector {
    Collector::start(url, queue, solves_its_puzzle(puzzles))
}

/// Waits until `n` jobs are answered at least once, each correctly.
async fn wait_for(results: &Collector, n: usize) {
    eventually_within(STREAM_PATIENCE, POLL, async || {
        assert_none_wrong(results);
        match results.answered() {
            answered if answered >= n => Ok(()),
            answered => Err(format!("{answered} of {n} jobs answered")),
        }
    })
    .await;
}

/// Checks that exactly the jobs `ids` were answered, every answer correct,
/// and returns how many extra answers came (duplicates).
fn report(results: &Collector, ids: impl IntoIterator<Item = u64>) -> u64 {
    assert_none_wrong(results);
    let seen = results.seen();
    let expected: HashSet<u64> = ids.into_iter().collect();
    let answered: HashSet<u64> = seen.answered_ids().collect();
    let lost: Vec<_> = expected.difference(&answered).collect();
    assert!(lost.is_empty(), "jobs never answered: {lost:?}");
    let unknown: Vec<_> = answered.difference(&expected).collect();
    assert!(
        unknown.is_empty(),
        "answers to jobs never sent: {unknown:?}"
    );
    seen.duplicates
}

/// After the workers stopped: nothing left in the jobs queue, and the
/// dead-letter queue holds exactly `dead` messages.
async fn assert_queues_drained(settings: &Settings, dead: u32) -> Client {
    let client = Client::connect(settings).await;
    client.wait_for_ready(&settings.amqp.jobs_queue, 0).await;
    client
        .wait_for_ready(&settings.amqp.dead_letter_queue, dead)
        .await;
    client
}

fn lines_with(worker: &WorkerProcess, text: &str) -> usize {
    worker.lines().iter().filter(|l| l.contains(text)).count()
}

/// Lines at ERROR level: a fault the worker survives is a warning.
fn errors(worker: &WorkerProcess) -> Vec<String> {
    worker
        .lines()
        .into_iter()
        .filter(|l| l.contains(" ERROR "))
        .collect()
}

async fn stop_worker(mut worker: WorkerProcess) -> WorkerProcess {
    worker.terminate();
    let status = worker.exit_status().await;
    assert!(
        status.success(),
        "exit status {status:?}; the worker logged:\n{}",
        worker.lines().join("\n")
    );
    worker
}

/// The outages the worker reported when it reconnected, in seconds.
fn outages(worker: &WorkerProcess) -> Vec<f64> {
    worker
        .lines()
        .iter()
        .filter(|l| l.contains("reconnected"))
        .filter_map(|l| {
            let value = l.split("outage_secs=").nth(1)?;
            value.split_whitespace().next()?.parse().ok()
        })
        .collect()
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 100.0).round() / 100.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_mid_stream_loses_nothing() {
    let _node = fault_node().await;
    let settings = fault_settings("restart");
    let client = Client::connect(&settings).await;
    // Long enough that the fault, which `rabbitmqctl` takes about a second
    // to apply, lands mid-stream: the worker answers easy jobs at several
    // thousand a second.
    let n = 40_000;
    let puzzles = puzzles(n);
    client.publish_all(jobs(&puzzles)).await;
    let mut results = solutions(&settings.amqp.url, &settings.amqp.results_queue, &puzzles);
    let worker = WorkerProcess::start(&settings, &QUICK_RECONNECT);
    wait_for(&results, n / 10).await;

    let stopping = Instant::now();
    ctl(&["stop_app"]);
    let stopped = results.answered();
    worker
        .wait_for_line(|l| l.contains("cannot reach the broker; retrying"))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    ctl(&["start_app"]);
    let back = Instant::now();
    worker.wait_for_line(|l| l.contains("reconnected")).await;
    wait_for(&results, n).await;
    assert!(
        stopped < n,
        "the stream was over before the broker stopped ({stopped} answered)"
    );
    let resumed = results.seen().resumed_after(back);

    let worker = stop_worker(worker).await;
    let again = report(&results, 0..n as u64);
    assert_eq!(
        lines_with(&worker, "connection to the broker lost; reconnecting"),
        1
    );
    let outage = outages(&worker);
    assert_eq!(outage.len(), 1);
    assert!(errors(&worker).is_empty(), "{:?}", errors(&worker));
    results.stop().await;
    drop(client);
    let client = assert_queues_drained(&settings, 0).await;
    eprintln!(
        "broker restart: {n} jobs, {stopped} answered before the stop, broker away {} s \
         (stop_app to start_app done), worker reconnected after {} s without a broker, \
         first new answer {resumed:?} after the broker was back, {again} answered twice",
        secs(back - stopping),
        outage[0]
    );
    client.cleanup().await;
}

/// A TCP proxy in front of the broker that can cut every connection
/// through it, or go silent (forwarding nothing, closing nothing) as a
/// network that drops packets does.
struct Proxy {
    port: u16,
    /// (forwarding, cuts so far): a connection opened before a cut closes.
    state: watch::Sender<(bool, u64)>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (state, watching) = watch::channel((true, 0u64));
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let watching = watching.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await {
                        pipe(client, server, watching).await;
                    }
                });
            }
        });
        Proxy { port, state, task }
    }

    /// Closes every connection open now.
    fn cut(&self) {
        self.state.send_modify(|s| s.1 += 1);
    }

    /// Stops (`false`) or resumes (`true`) forwarding, on every connection.
    fn forward(&self, on: bool) {
        self.state.send_modify(|s| s.0 = on);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut();
    }
}

async fn pipe(
    mut client: TcpStream,
    mut server: TcpStream,
    mut state: watch::Receiver<(bool, u64)>,
) {
    let cuts = state.borrow().1;
    let (mut client_in, mut client_out) = client.split();
    let (mut server_in, mut server_out) = server.split();
    let mut up = vec![0u8; 64 * 1024];
    let mut down = vec![0u8; 64 * 1024];
    loop {
        let (forwarding, now) = *state.borrow_and_update();
        if now != cuts {
            return;
        }
        if !forwarding {
            if state.changed().await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            read = client_in.read(&mut up) => match read {
                Ok(n) if n > 0 => {
                    if server_out.write_all(&up[..n]).await.is_err() {
                        return;
                    }
                }
                _ => return,
            },
            read = server_in.read(&mut down) => match read {
                Ok(n) if n > 0 => {
                    if client_out.write_all(&down[..n]).await.is_err() {
                        return;
                    }
                }
                _ => return,
            },
            changed = state.changed() => if changed.is_err() {
                return;
            },
        }
    }
}

fn port_of(url: &str) -> u16 {
    url.rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .and_then(|port| port.parse().ok())
        .expect("a port in the URL")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_cut_and_a_silent_network_lose_nothing() {
    let _node = fault_node().await;
    let mut settings = fault_settings("network");
    let broker_url = settings.amqp.url.clone();
    let proxy = Proxy::start(port_of(&broker_url)).await;
    let client = Client::connect(&settings).await;
    let n = 4000;
    let puzzles = hard_puzzles(n);
    client.publish_all(jobs(&puzzles)).await;
    let mut results = solutions(&broker_url, &settings.amqp.results_queue, &puzzles);
    // The worker goes through the proxy, with 2-second heartbeats: a
    // silent connection counts as lost after about 4 seconds.
    settings.amqp.url = broker_url.replace(
        &format!(":{}/", port_of(&broker_url)),
        &format!(":{}/", proxy.port),
    );
    let mut env = QUICK_RECONNECT.to_vec();
    env.extend([
        ("SUDOKUD__AMQP__HEARTBEAT_SECS", "2"),
        ("SUDOKUD__AMQP__CONNECT_TIMEOUT_SECS", "2"),
    ]);
    let worker = WorkerProcess::start(&settings, &env);

    wait_for(&results, n / 10).await;
    proxy.cut();
    let at_cut = results.answered();
    worker
        .wait_for_line(|l| l.contains("connection to the broker lost"))
        .await;
    // Back through the proxy before it goes silent: the answers read since
    // the cut may all have been published before it (the reader lags), and
    // a worker still reconnecting when the silence starts never connects,
    // so it never misses a heartbeat.
    worker.wait_for_line(|l| l.contains("reconnected")).await;
    wait_for(&results, at_cut + n / 10).await;

    let silent_at = Instant::now();
    proxy.forward(false);
    let at_silence = results.answered();
    worker
        .wait_for_line(|l| l.contains("no heartbeat received"))
        .await;
    let noticed = silent_at.elapsed();
    // Still silent: attempts to reconnect time out.
    worker
        .wait_for_line(|l| {
            l.contains("cannot reach the broker; retrying") && l.contains("no answer within")
        })
        .await;
    proxy.forward(true);
    let back = Instant::now();
    wait_for(&results, n).await;
    assert!(
        at_silence < n,
        "the stream was over before the network went silent ({at_silence} answered)"
    );
    let worker = stop_worker(worker).await;
    let again = report(&results, 0..n as u64);
    assert_eq!(
        lines_with(&worker, "connection to the broker lost; reconnecting"),
        2,
        "{}",
        worker.lines().join("\n")
    );
    assert!(errors(&worker).is_empty(), "{:?}", errors(&worker));
    let outage = outages(&worker);
    assert_eq!(outage.len(), 2);
    let after_silence = results.seen().resumed_after(back);
    results.stop().await;
    drop(client);
    let client = assert_queues_drained(&settings, 0).await;
    eprintln!(
        "network: {n} jobs; cut after {at_cut} answered, reconnected in {} s; silent after \
         {at_silence} answered, loss noticed {} s later (heartbeat 2 s), answers again \
         {after_silence:?} after the network came back; {again} answered twice",
        outage[0],
        secs(noticed),
    );
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_one_of_two_workers_loses_nothing() {
    let _node = fault_node().await;
    let mut settings = fault_settings("sigkill");
    settings.worker.threads = 1;
    let client = Client::connect(&settings).await;
    // Long enough that the first worker still holds jobs when it is
    // killed: the two answer several thousand a second, and the kill
    // comes only once every job is published.
    let n = 12_000;
    let puzzles = hard_puzzles(n);
    let a = WorkerProcess::start(&settings, &[]);
    let b = WorkerProcess::start(&settings, &[]);
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 2)
        .await;
    // The reader first: started after the jobs are published, it would
    // find the workers done with most of them (they run as they arrive),
    // and the kill would catch the first worker with nothing left to
    // give back.
    let mut results = solutions(&settings.amqp.url, &settings.amqp.results_queue, &puzzles);
    client.publish_all(jobs(&puzzles)).await;
    wait_for(&results, n / 5).await;
    let status = Command::new("kill")
        .args(["-KILL", &a.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let killed_at = Instant::now();
    let at_kill = results.answered();
    wait_for(&results, n).await;
    assert!(at_kill < n, "the stream was over before the kill");
    let b = stop_worker(b).await;
    let again = report(&results, 0..n as u64);
    // The jobs the killed worker held came back to the other one, which
    // ran them one at a time.
    assert!(
        lines_with(&b, "a redelivered job arrived") >= 1,
        "{}",
        b.lines().join("\n")
    );
    assert!(errors(&b).is_empty(), "{:?}", errors(&b));
    drop(a);
    let resumed = results.seen().resumed_after(killed_at);
    results.stop().await;
    let client = assert_queues_drained(&settings, 0).await;
    eprintln!(
        "SIGKILL: {n} jobs, one of two workers killed after {at_kill} answered; the other \
         answered the rest, new answers {resumed:?} after the kill; {again} answered twice"
    );
    client.cleanup().await;
}

/// The id a poison job carries, as JSON text.
const POISON_ID: &str = "\"poison\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_job_is_dead_lettered_and_the_others_flow() {
    let _node = fault_node().await;
    let settings = fault_settings("poison");
    let delivery_limit = settings.amqp.delivery_limit as usize;
    let client = Client::connect(&settings).await;
    let n = 2000;
    let puzzles = puzzles(n);
    let mut bodies = jobs(&puzzles);
    let poison = serde_json::to_vec(&json!({"id": "poison", "puzzle": PUZZLE})).unwrap();
    bodies.insert(n / 2, (poison.clone(), BasicProperties::default()));
    let env = [("SUDOKUD_FAULT_ABORT_ON_ID", POISON_ID)];
    // A supervisor: two workers, each restarted when it dies.
    let mut workers = vec![
        WorkerProcess::start(&settings, &env),
        WorkerProcess::start(&settings, &env),
    ];
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 2)
        .await;
    client.publish_all(bodies).await;
    let mut results = solutions(&settings.amqp.url, &settings.amqp.results_queue, &puzzles);
    let mut crashes: Vec<(std::process::ExitStatus, Vec<String>)> = Vec::new();
    // Until every job is answered and the poison job is dead-lettered. The
    // exits are read after the queues: the broker dead-letters the poison
    // only once the worker that held it is gone, so the crash that got it
    // dead-lettered has been seen too.
    eventually_within(STREAM_PATIENCE, POLL, async || {
        let dead = client.ready(&settings.amqp.dead_letter_queue).await;
        let answered = results.answered();
        for worker in &mut workers {
            if let Some(status) = worker.exited() {
                crashes.push((status, worker.lines()));
                *worker = WorkerProcess::start(&settings, &env);
            }
        }
        if answered >= n && dead >= 1 {
            return Ok(());
        }
        // On a timeout, what each live worker logged last says where the
        // poison is, and how each crashed worker ended: a delivery counted
        // without a crash (a lost connection) would show there.
        let tail = |lines: &[String]| lines[lines.len().saturating_sub(8)..].join("\n");
        let tails: Vec<String> = workers.iter().map(|worker| tail(&worker.lines())).collect();
        let ends: Vec<String> = crashes.iter().map(|(_, lines)| tail(lines)).collect();
        Err(format!(
            "{answered} of {n} answered, {} crashes, {dead} dead-lettered, {} jobs ready; the \
             workers logged last:\n{}\nthe crashed workers logged last:\n{}",
            crashes.len(),
            client.ready(&settings.amqp.jobs_queue).await,
            tails.join("\n--\n"),
            ends.join("\n--\n")
        ))
    })
    .await;
    // A worker restarted by the last round may not have set up its signal
    // handling yet: stop the workers once both consume.
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 2)
        .await;
    let mut logs: Vec<Vec<String>> = crashes.iter().map(|(_, lines)| lines.clone()).collect();
    for worker in workers {
        logs.push(stop_worker(worker).await.lines());
    }
    let again = report(&results, 0..n as u64);
    // Each delivery of the poison the broker counted killed a worker,
    // except that a quarantine's `basic.cancel` can return a job the
    // broker had sent and the worker never saw, with one more delivery
    // counted (RabbitMQ 3.10, see `worker::intake`). The queue gave up on
    // the poison after the delivery limit.
    let quarantines = logs
        .iter()
        .flatten()
        .filter(|l| l.contains("a redelivered job arrived"))
        .count();
    assert!(
        crashes.len() <= delivery_limit + 1 && crashes.len() + quarantines > delivery_limit,
        "{} crashes and {quarantines} quarantines for a delivery limit of {delivery_limit}",
        crashes.len()
    );
    for (status, lines) in &crashes {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(6), "{status:?}: {}", lines.join("\n"));
        assert!(
            lines
                .iter()
                .any(|l| l.contains("fault injection: aborting"))
        );
    }
    results.stop().await;
    let client = assert_queues_drained(&settings, 1).await;
    let mut dead = client.reader(&settings.amqp.dead_letter_queue).await;
    let dead_letter = dead.next_raw().await;
    assert_eq!(dead_letter, poison, "only the poison job is dead-lettered");
    eprintln!(
        "poison: {n} jobs and one poison job; {} worker crashes and {quarantines} quarantines \
         (delivery limit {delivery_limit}); the poison dead-lettered, no other job; {again} \
         answered twice",
        crashes.len()
    );
    drop(dead);
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_pathological_puzzles_times_out_and_easy_jobs_still_flow() {
    let _node = fault_node().await;
    let settings = fault_settings("flood");
    let client = Client::connect(&settings).await;
    let deadline_ms = 300u64;
    let hard = 40u64;
    let easy = 1000usize;
    let easy_puzzles = puzzles(easy);
    // Expensive: the empty grid and grids of 8 givens (from real puzzles,
    // so consistent), counting solutions up to a billion.
    let sparse: Vec<String> = hard_puzzles(hard as usize)
        .iter()
        .map(|p| {
            let mut kept = 0;
            p.chars()
                .map(|c| {
                    if c.is_ascii_digit() && c != '0' && kept < 8 {
                        kept += 1;
                        c
                    } else {
                        '.'
                    }
                })
                .collect()
        })
        .collect();
    let mut bodies = Vec::new();
    for k in 0..hard {
        let puzzle = if k % 2 == 0 {
            ".".repeat(81)
        } else {
            sparse[k as usize].clone()
        };
        bodies.push(json!({
            "id": 1_000_000 + k, "puzzle": puzzle, "mode": "count",
            "limit": 1_000_000_000u64, "timeout_ms": deadline_ms,
        }));
    }
    for (i, p) in easy_puzzles.iter().enumerate() {
        bodies.push(json!({"id": i, "puzzle": p}));
    }
    let published_at = Instant::now();
    client
        .publish_all(
            bodies
                .iter()
                .map(|b| (serde_json::to_vec(b).unwrap(), BasicProperties::default())),
        )
        .await;
    let easy_check = easy_puzzles.clone();
    // The longest a pathological job ran, over all its answers.
    let longest_us = Arc::new(AtomicU64::new(0));
    let longest = Arc::clone(&longest_us);
    let mut results = Collector::start(
        &settings.amqp.url,
        &settings.amqp.results_queue,
        Arc::new(move |id, result| {
            if id >= 1_000_000 {
                let elapsed_us = result["elapsed_us"].as_u64().unwrap_or(0);
                longest.fetch_max(elapsed_us, Ordering::Relaxed);
                let error = result["error"].as_str().unwrap_or_default();
                return if result["status"] == "timeout"
                    && error.starts_with(&format!(
                        "no answer within the deadline of {deadline_ms} ms"
                    ))
                    && elapsed_us >= deadline_ms * 1000
                {
                    Ok(())
                } else {
                    Err(format!("not a timeout at its deadline: {result}"))
                };
            }
            let puzzle = easy_check
                .get(id as usize)
                .ok_or_else(|| format!("unknown id {id}"))?;
            if is_solution_of(result["solution"].as_str().unwrap_or_default(), puzzle) {
                Ok(())
            } else {
                Err(format!("not a solution: {result}"))
            }
        }),
    );
    let worker = WorkerProcess::start(
        &settings,
        &[("SUDOKUD__SOLVER__MAX_COUNT_LIMIT", "1000000000")],
    );
    wait_for(&results, easy + hard as usize).await;
    let worker = stop_worker(worker).await;
    let ids = (0..easy as u64).chain((0..hard).map(|k| 1_000_000 + k));
    let again = report(&results, ids);
    assert!(errors(&worker).is_empty(), "{:?}", errors(&worker));
    let overshoot_ms = (longest_us.load(Ordering::Relaxed) / 1000).saturating_sub(deadline_ms);
    let (latencies, hard_done) = {
        let seen = results.seen();
        let first = |id: u64| seen.first(id).expect("answered");
        let mut latencies: Vec<Duration> =
            (0..easy as u64).map(|i| first(i) - published_at).collect();
        latencies.sort();
        let hard_done = (0..hard).map(|k| first(1_000_000 + k)).max().unwrap();
        (latencies, hard_done)
    };
    results.stop().await;
    let client = assert_queues_drained(&settings, 0).await;
    eprintln!(
        "flood: {hard} pathological jobs ({deadline_ms} ms deadline, 2 threads) then {easy} \
         easy ones; every pathological one timed out, at most {overshoot_ms} ms past its \
         deadline; the last after {} s; easy jobs answered after p50 {} s, max {} s (from \
         publication); {again} answered twice",
        secs(hard_done - published_at),
        secs(latencies[latencies.len() / 2]),
        secs(latencies[latencies.len() - 1]),
    );
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_alarm_pauses_the_worker_without_errors_or_losses() {
    let _node = fault_node().await;
    let settings = fault_settings("alarm");
    let client = Client::connect(&settings).await;
    // Long enough that the fault, which `rabbitmqctl` takes about a second
    // to apply, lands mid-stream: the worker answers easy jobs at several
    // thousand a second.
    let n = 40_000;
    let puzzles = puzzles(n);
    client.publish_all(jobs(&puzzles)).await;
    let mut results = solutions(&settings.amqp.url, &settings.amqp.results_queue, &puzzles);
    // `/livez` with its shortest timeout: it fails if the event loop
    // stalls for a second.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let worker = WorkerProcess::start(
        &settings,
        &[
            ("SUDOKUD__METRICS__LISTEN", listen.as_str()),
            ("SUDOKUD__METRICS__LIVENESS_TIMEOUT_SECS", "1"),
        ],
    );
    wait_for(&results, n / 10).await;

    ctl(&["set_vm_memory_high_watermark", "0.000001"]);
    let alarm_at = Instant::now();
    worker
        .wait_for_line(|l| l.contains("the broker blocked the connection"))
        .await;
    let noticed = alarm_at.elapsed();
    // Results already routed drain to the reader; then nothing moves,
    // while the worker stays live: its event loop waits on nothing the
    // alarm holds up.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let paused = results.answered();
    let quiet_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < quiet_until {
        let (status, body) = get_ok(port, "/livez").await;
        assert_eq!(status, 200, "/livez while blocked: {body}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (status, body) = get_ok(port, "/readyz").await;
    assert_eq!(
        (status, body.trim()),
        (
            503,
            "not ready: the broker blocks the connection (resource alarm)"
        )
    );
    let metrics = get_ok(port, "/metrics").await.1;
    assert!(
        metrics.lines().any(|l| l == "sudokud_broker_blocked 1"),
        "{metrics}"
    );
    assert_eq!(
        results.answered(),
        paused,
        "jobs were answered while the broker blocked publishing"
    );
    assert!(paused < n, "the stream was over before the alarm");
    ctl(&["set_vm_memory_high_watermark", "0.4"]);
    let cleared_at = Instant::now();
    worker
        .wait_for_line(|l| l.contains("the broker unblocked the connection"))
        .await;
    assert_eq!(get_ok(port, "/readyz").await.0, 200);
    wait_for(&results, n).await;
    let worker = stop_worker(worker).await;
    let again = report(&results, 0..n as u64);
    assert!(errors(&worker).is_empty(), "{:?}", errors(&worker));
    assert_eq!(lines_with(&worker, "connection to the broker lost"), 0);
    let resumed = results.seen().resumed_after(cleared_at);
    results.stop().await;
    let client = assert_queues_drained(&settings, 0).await;
    eprintln!(
        "memory alarm: {n} jobs; blocked after {paused} answered (noticed {} s after the \
         alarm), none answered while blocked, /livez 200 and /readyz 503 meanwhile, answers again \
         {resumed:?} after it cleared; {again} answered twice",
        secs(noticed),
    );
    client.cleanup().await;
}

/// The worker's resident set, in KiB (Linux).
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_flat_through_a_deep_backlog_of_the_largest_batches() {
    let _node = fault_node().await;
    let settings = fault_settings("memory");
    let client = Client::connect(&settings).await;
    // Batches as large as a job may be (close to max_message_bytes),
    // thirty times as many as the worker may hold.
    let prefetch = 2usize;
    let batches = 30 * prefetch;
    let per_batch = settings.worker.max_batch;
    let pool = puzzles(4 * per_batch);
    // Where each batch starts in `pool`.
    let starts: Vec<usize> = (0..batches)
        .map(|b| (b * 7919) % (pool.len() - per_batch))
        .collect();
    let bodies: Vec<Vec<u8>> = starts
        .iter()
        .enumerate()
        .map(|(b, &start)| {
            let slice = &pool[start..start + per_batch];
            serde_json::to_vec(&json!({"id": b, "puzzles": slice})).unwrap()
        })
        .collect();
    let max_bytes = settings.worker.max_message_bytes;
    for body in &bodies {
        assert!(
            body.len() <= max_bytes && body.len() * 5 >= max_bytes * 4,
            "a batch of {} bytes, not within 80 % of the limit {max_bytes}",
            body.len()
        );
    }
    let batch_bytes = bodies.iter().map(Vec::len).max().unwrap_or(0);
    let prefetch_env = prefetch.to_string();
    let worker = WorkerProcess::start(
        &settings,
        &[("SUDOKUD__WORKER__PREFETCH", prefetch_env.as_str())],
    );
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 1)
        .await;
    let idle = rss_kib(worker.pid()).expect("the worker's RSS");
    client.publish_bodies(bodies).await;
    let check_pool = pool.clone();
    let mut results = Collector::start(
        &settings.amqp.url,
        &settings.amqp.results_queue,
        Arc::new(move |id, result| {
            let start = *starts
                .get(id as usize)
                .ok_or_else(|| format!("unknown id {id}"))?;
            let entries = result["results"]
                .as_array()
                .ok_or_else(|| format!("batch {id}: no results: {}", result["error"]))?;
            if entries.len() != per_batch {
                return Err(format!("batch {id}: {} results", entries.len()));
            }
            for (k, entry) in entries.iter().enumerate() {
                let solution = entry["solution"].as_str().unwrap_or_default();
                if !is_solution_of(solution, &check_pool[start + k]) {
                    return Err(format!("batch {id}, puzzle {k}: {entry}"));
                }
            }
            Ok(())
        }),
    );
    // Sample the resident set until every batch is answered.
    let mut samples: Vec<(usize, u64)> = Vec::new();
    eventually_within(STREAM_PATIENCE, Duration::from_millis(50), async || {
        let answered = results.answered();
        if answered >= batches {
            return Ok(());
        }
        assert_none_wrong(&results);
        if let Some(rss) = rss_kib(worker.pid()) {
            samples.push((results.answered(), rss));
        }
        Err(format!("{answered} of {batches} batches answered"))
    })
    .await;
    // And once more when the backlog is worked off: this test's own
    // consumer can fall behind on a loaded host and take the last third's
    // answers in one burst, between two samples; the idle worker's
    // resident set still holds what working them off kept.
    if let Some(rss) = rss_kib(worker.pid()) {
        samples.push((batches, rss));
    }
    let worker = stop_worker(worker).await;
    let again = report(&results, 0..batches as u64);
    assert!(errors(&worker).is_empty(), "{:?}", errors(&worker));
    results.stop().await;
    let client = assert_queues_drained(&settings, 0).await;

    // Flat: the peak while the last third of the backlog is worked off is
    // no higher than the peak over the first third, give or take the
    // allocator's slack (10 %).
    let peak = |from: usize, to: usize| {
        samples
            .iter()
            .filter(|(answered, _)| (from..to).contains(answered))
            .map(|s| s.1)
            .max()
            .unwrap_or(0)
    };
    let first = peak(0, batches / 3);
    let last = peak(2 * batches / 3, batches + 1);
    let overall = samples.iter().map(|s| s.1).max().unwrap_or(0);
    assert!(first > 0 && last > 0, "too few samples: {samples:?}");
    assert!(
        last <= first + first / 10,
        "RSS grew with the backlog worked off: peak {first} KiB over the first third, \
         {last} KiB over the last"
    );
    // Bounded by what it may hold, not by the backlog: over its idle size,
    // a held batch costs a few times its message (the message, its parsed
    // puzzles, the answers, the encoded result and the client's copy of
    // it), plus the allocator's slack; far less than the backlog.
    let held_kib = (8 * prefetch * batch_bytes / 1024) as u64;
    let bound_kib = idle + held_kib + 6 * 1024;
    let backlog_kib = (batches * batch_bytes / 1024) as u64;
    assert!(bound_kib < idle + backlog_kib / 2, "the test cannot tell");
    assert!(
        overall <= bound_kib,
        "peak RSS {overall} KiB over the bound of {bound_kib} KiB (idle {idle} KiB)"
    );
    eprintln!(
        "memory: {batches} batches of {per_batch} puzzles ({} KiB each, limit {} KiB), \
         prefetch {prefetch}, backlog {} MiB; RSS idle {} MiB, peak {} MiB over the first \
         third, {} MiB over the last, {} MiB overall ({} samples); {again} answered twice",
        batch_bytes / 1024,
        max_bytes / 1024,
        backlog_kib / 1024,
        idle / 1024,
        first / 1024,
        last / 1024,
        overall / 1024,
        samples.len()
    );
    client.cleanup().await;
}
