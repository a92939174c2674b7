//! The worker's HTTP listener (`metrics.listen`) against a real RabbitMQ:
//! `/metrics` after a known mix of jobs, counted exactly, and after jobs
//! redelivered by the broker; `/readyz` and
//! `/livez` through a broker outage; a clear error when the address is
//! taken.
//!
//! The outage test stops and starts a RabbitMQ node of its own
//! (`scripts/fault-node.sh` with `FAULT_NODE=sudokud-metrics@localhost`,
//! AMQP port 5674), started on first use and left running
//! (`FAULT_NODE=sudokud-metrics@localhost FAULT_PORT=5674
//! FAULT_DIR=/tmp/sudokud-metrics-node scripts/fault-node.sh stop` stops
//! it); every other test uses the default node.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::http::*;
use crate::common::*;
use lapin::BasicProperties;
use serde_json::{Value, json};
use tokio_stream::StreamExt;

/// The samples of a Prometheus text exposition: `name{labels}` to value.
/// Also checks that every sample line is well formed and belongs to a
/// declared family.
fn samples(text: &str) -> HashMap<String, f64> {
    let mut types = HashMap::new();
    let mut samples = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample: series value");
        let name = series.split('{').next().unwrap();
        let family = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| {
                name.strip_suffix(suffix)
                    .filter(|base| types.get(*base).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(name);
        assert!(types.contains_key(family), "{line}: no # TYPE for {family}");
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("{line}: bad value"));
        assert!(
            samples.insert(series.to_string(), value).is_none(),
            "{series} twice"
        );
    }
    samples
}

fn sample(samples: &HashMap<String, f64>, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("no {series} in {samples:?}"))
}

const STATUSES: [&str; 5] = ["solved", "unsolvable", "invalid", "timeout", "error"];

/// The protocol's order, best to worst: a batch counts under the last
/// status any of its puzzles has.
fn overall(statuses: &[&str]) -> String {
    STATUSES
        .iter()
        .rev()
        .find(|s| statuses.contains(s))
        .expect("at least one status")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_known_mix_of_jobs_exactly() {
    let (settings, port) = with_listener(settings("metrics_mix"));
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 1)
        .await;
    let mut results = client.results().await;

    // Before any job: every status at 0, connected, ready and live.
    let (status, text) = get_ok(port, "/metrics").await;
    assert_eq!(status, 200);
    assert_all_zero(&samples(&text));
    assert_eq!(get_ok(port, "/readyz").await.0, 200);
    assert_eq!(get_ok(port, "/livez").await.0, 200);

    let bodies = a_known_mix();
    let n = bodies.len();
    client.publish_bodies(bodies).await;

    // What the answers say, job by job and puzzle by puzzle.
    let (jobs, puzzles, by_job) = tally(results.take(n).await);
    // The mix is what it was meant to be.
    assert_eq!(by_job["easy0"], "solved");
    assert_eq!(by_job["unsolvable1"], "unsolvable");
    assert_eq!(by_job["repeated"], "invalid");
    assert_eq!(by_job["bad mode"], "invalid");
    assert_eq!(by_job["batch mixed"], "invalid");
    assert_eq!(by_job["batch solved"], "solved");
    assert_eq!(by_job["batch unsolvable"], "unsolvable");
    assert_eq!(jobs.values().sum::<f64>(), n as f64);
    assert_eq!(puzzles.values().sum::<f64>(), (n + 3 + 2 + 1) as f64);

    let text = metrics_once_counted(port, n).await;
    let after = samples(&text);
    assert_counts(&after, &text, &jobs, &puzzles, n);
    assert_histogram(&after, n);
    assert_eq!(sample(&after, "sudokud_jobs_in_flight"), 0.0);
    assert_eq!(sample(&after, "sudokud_broker_connected"), 1.0);
    assert_eq!(sample(&after, "sudokud_broker_reconnects_total"), 0.0);
    assert_eq!(sample(&after, "sudokud_jobs_redelivered_total"), 0.0);
    assert_eq!(sample(&after, "sudokud_quarantines_total"), 0.0);
    assert_eq!(sample(&after, "sudokud_solver_threads"), 2.0);
    assert_eq!(
        sample(
            &after,
            &format!(
                "sudokud_build_info{{version=\"{}\"}}",
                env!("CARGO_PKG_VERSION")
            )
        ),
        1.0
    );

    // Other paths and methods.
    assert_eq!(get_ok(port, "/").await.0, 404);
    worker.stop().await.expect("the worker stops cleanly");
    // The listener goes with the worker.
    assert!(get(port, "/livez").await.is_none());
    client.cleanup().await;
}

/// Every status counted 0 and no job timed: the metrics of a worker that
/// has answered nothing.
fn assert_all_zero(before: &HashMap<String, f64>) {
    for status in STATUSES {
        assert_eq!(
            sample(
                before,
                &format!("sudokud_jobs_total{{status=\"{status}\"}}")
            ),
            0.0
        );
        assert_eq!(
            sample(
                before,
                &format!("sudokud_puzzles_total{{status=\"{status}\"}}")
            ),
            0.0
        );
    }
    assert_eq!(sample(before, "sudokud_job_duration_seconds_count"), 0.0);
    assert_eq!(sample(before, "sudokud_job_duration_seconds_count"), 0.0);
}

/// Job bodies of every status: six easy puzzles, two unsolvable ones, a
/// puzzle with a repeated given, a body that is not JSON, a bad mode, and
/// three batches (one with an invalid puzzle, one all solved, one with an
/// unsolvable puzzle).
fn a_known_mix() -> Vec<Vec<u8>> {
    let easy = puzzles(6);
    let unsolvable = format!("12345678.{}9{}", ".".repeat(8), ".".repeat(63));
    let repeated = format!("11{}", ".".repeat(79));
    let mut bodies: Vec<Vec<u8>> = Vec::new();
    for (i, puzzle) in easy.iter().enumerate() {
        bodies.push(
            serde_json::to_vec(&json!({"id": format!("easy{i}"), "puzzle": puzzle})).unwrap(),
        );
    }
    for i in 0..2 {
        bodies.push(
            serde_json::to_vec(&json!({"id": format!("unsolvable{i}"), "puzzle": unsolvable}))
                .unwrap(),
        );
    }
    bodies.push(serde_json::to_vec(&json!({"id": "repeated", "puzzle": repeated})).unwrap());
    bodies.push(br#"{"id": "not json"#.to_vec());
    bodies.push(
        serde_json::to_vec(&json!({"id": "bad mode", "puzzle": PUZZLE, "mode": "all"})).unwrap(),
    );
    bodies.push(
        serde_json::to_vec(
            &json!({"id": "batch mixed", "puzzles": [PUZZLE, unsolvable, repeated, easy[0]]}),
        )
        .unwrap(),
    );
    bodies.push(
        serde_json::to_vec(&json!({"id": "batch solved", "puzzles": [easy[1], easy[2], PUZZLE]}))
            .unwrap(),
    );
    bodies.push(
        serde_json::to_vec(&json!({"id": "batch unsolvable", "puzzles": [easy[3], unsolvable]}))
            .unwrap(),
    );
    bodies
}

/// Jobs and puzzles counted by status, as the answers say, and each job's
/// status by its id.
type Tally = (
    HashMap<String, f64>,
    HashMap<String, f64>,
    HashMap<String, String>,
);

fn tally(results: Vec<Received>) -> Tally {
    let mut jobs: HashMap<String, f64> = HashMap::new();
    let mut puzzles: HashMap<String, f64> = HashMap::new();
    let mut by_job: HashMap<String, String> = HashMap::new();
    for result in results {
        let statuses: Vec<&str> = match result.body["results"].as_array() {
            Some(entries) => entries
                .iter()
                .map(|e| e["status"].as_str().unwrap())
                .collect(),
            None => vec![result.body["status"].as_str().unwrap()],
        };
        for status in &statuses {
            *puzzles.entry(status.to_string()).or_default() += 1.0;
        }
        let job_status = overall(&statuses);
        *jobs.entry(job_status.clone()).or_default() += 1.0;
        by_job.insert(
            result.body["id"].as_str().unwrap_or("(no id)").to_string(),
            job_status,
        );
    }
    (jobs, puzzles, by_job)
}

/// The metrics text once `n` jobs are counted: a result reaches the test as
/// soon as the broker has it, and the worker counts the job when the
/// broker's confirm reaches it, a moment later.
async fn metrics_once_counted(port: u16, n: usize) -> String {
    let mut text = String::new();
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        text = get_ok(port, "/metrics").await.1;
        if sample(&samples(&text), "sudokud_job_duration_seconds_count") >= n as f64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    text
}

/// The jobs and puzzles counted by status are those of the answers.
fn assert_counts(
    after: &HashMap<String, f64>,
    text: &str,
    jobs: &HashMap<String, f64>,
    puzzles: &HashMap<String, f64>,
    n: usize,
) {
    let mut jobs_sum = 0.0;
    for status in STATUSES {
        let counted = sample(after, &format!("sudokud_jobs_total{{status=\"{status}\"}}"));
        assert_eq!(
            counted,
            jobs.get(status).copied().unwrap_or(0.0),
            "jobs {status}:\n{text}"
        );
        jobs_sum += counted;
        assert_eq!(
            sample(
                after,
                &format!("sudokud_puzzles_total{{status=\"{status}\"}}")
            ),
            puzzles.get(status).copied().unwrap_or(0.0),
            "puzzles {status}:\n{text}"
        );
    }
    assert_eq!(jobs_sum, n as f64);
}

/// The latency histogram counts `n` jobs, in buckets that only rise.
fn assert_histogram(after: &HashMap<String, f64>, n: usize) {
    assert_eq!(
        sample(after, "sudokud_job_duration_seconds_count"),
        n as f64
    );
    assert_eq!(
        sample(after, "sudokud_job_duration_seconds_bucket{le=\"+Inf\"}"),
        n as f64
    );
    let mut buckets: Vec<(f64, f64)> = after
        .iter()
        .filter_map(|(series, value)| {
            let le = series
                .strip_prefix("sudokud_job_duration_seconds_bucket{le=\"")?
                .strip_suffix("\"}")?;
            Some((le.parse().unwrap(), *value))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(buckets.len() > 10, "{buckets:?}");
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    assert!(sample(after, "sudokud_job_duration_seconds_sum") > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redelivered_jobs_and_quarantines_are_counted() {
    let (settings, port) = with_listener(settings("metrics_redelivered"));
    let client = Client::connect(&settings).await;
    let mut results = client.results().await;
    // A consumer of the test's takes 20 jobs and holds them unacknowledged.
    let held = 20;
    let puzzles = puzzles(held + 1);
    let (channel, mut consumer) = client
        .consumer(&settings.amqp.jobs_queue, Some(held as u16))
        .await;
    client.publish_all(jobs(&puzzles[..held])).await;
    for _ in 0..held {
        let delivery = tokio::time::timeout(PATIENCE, consumer.next())
            .await
            .expect("the test's consumer gets the jobs");
        assert!(delivery.is_some_and(|d| d.is_ok_and(|d| !d.redelivered)));
    }
    // The worker answers a fresh job, which takes it to the full prefetch.
    let worker = TestWorker::start(&settings);
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 2)
        .await;
    client
        .publish(
            serde_json::to_vec(&json!({"id": held, "puzzle": puzzles[held]})).unwrap(),
            BasicProperties::default(),
        )
        .await;
    assert_eq!(results.take_ids(1).await, [held as u64].into());
    // The consumer holding the 20 goes away, as a crashed worker would:
    // the quorum queue counts a delivery for each and hands them to the
    // worker, which runs them alone.
    channel.close(200, "OK".into()).await.unwrap();
    assert_eq!(results.take_ids(held).await, (0..held as u64).collect());

    let mut text = String::new();
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        text = get_ok(port, "/metrics").await.1;
        if sample(&samples(&text), "sudokud_job_duration_seconds_count") > held as f64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = samples(&text);
    assert_eq!(
        sample(&after, "sudokud_jobs_total{status=\"solved\"}"),
        (held + 1) as f64,
        "{text}"
    );
    // Each of the 20 reached the worker once, as a redelivery; the fresh
    // job did not count.
    assert_eq!(
        sample(&after, "sudokud_jobs_redelivered_total"),
        held as f64,
        "{text}"
    );
    // The first of them found the worker at the full prefetch: one
    // quarantine at least, and never more than one per job.
    let quarantines = sample(&after, "sudokud_quarantines_total");
    assert!(
        (1.0..=held as f64).contains(&quarantines),
        "{quarantines} quarantines:\n{text}"
    );
    worker.stop().await.expect("the worker stops cleanly");
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_address_stops_the_worker_with_an_error_naming_the_setting() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut settings = settings("metrics_taken");
    settings.metrics.listen = taken.local_addr().unwrap().to_string();
    let error = TestWorker::start(&settings)
        .finished()
        .await
        .expect_err("the worker cannot listen there");
    let message = format!("{error:#}");
    assert!(message.contains("metrics.listen"), "{message}");
    assert!(message.contains(&settings.metrics.listen), "{message}");
}

#[tokio::test]
async fn health_worker_names_what_is_missing() {
    // No listener configured: the error names the setting.
    let mut command = command(None, &[("SUDOKUD__METRICS__LISTEN", "")]);
    command.args(["health", "--worker"]);
    let run = tokio::task::spawn_blocking(move || run_to_end(command, ""))
        .await
        .unwrap();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("metrics.listen"), "{}", run.stderr);
    // Nothing listens there: said so, within the wait.
    let port = free_port();
    let run = health_worker(&format!("127.0.0.1:{port}"), &["--wait-secs", "2"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("no worker listens on 127.0.0.1:{port}")),
        "{}",
        run.stderr
    );
    // A broker option does not mix with it.
    let run = health_worker("127.0.0.1:9", &["--min-consumers", "1"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
}

/// `sudokud health --worker ARGS` for a worker listening on `listen`.
async fn health_worker(listen: &str, args: &[&str]) -> Run {
    let mut command = command(None, &[("SUDOKUD__METRICS__LISTEN", listen)]);
    command.args(["health", "--worker"]).args(args);
    tokio::task::spawn_blocking(move || run_to_end(command, ""))
        .await
        .expect("the run completes")
}

/// `scripts/fault-node.sh` for this file's own node.
fn node() -> Command {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fault-node.sh");
    let mut command = Command::new(script);
    command
        .env("FAULT_NODE", "sudokud-metrics@localhost")
        .env("FAULT_PORT", "5674")
        .env("FAULT_DIR", "/tmp/sudokud-metrics-node");
    command
}

/// Runs the script and tells whether it succeeded. Not through pipes: a
/// node it starts keeps its standard streams.
fn node_run(args: &[&str]) -> bool {
    node()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("cannot run scripts/fault-node.sh")
        .success()
}

fn node_ok(args: &[&str]) {
    assert!(node_run(args), "scripts/fault-node.sh {args:?} failed");
}

fn node_url() -> String {
    let output = node()
        .arg("url")
        .output()
        .expect("cannot run scripts/fault-node.sh");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// Stops the fault node's broker app and checks the worker while it is
/// away: /readyz answers 503 with one line, /livez stays 200 (the worker
/// keeps retrying), the metrics say disconnected, `sudokud health --worker`
/// fails, and the worker keeps running.
async fn stop_the_broker_and_watch_the_probes(port: u16, listen: &str, worker: &mut TestWorker) {
    node_ok(&["ctl", "stop_app"]);
    let not_ready = wait_for_status(port, "/readyz", 503, |_, _| {}).await;
    assert_eq!(not_ready.lines().count(), 1, "{not_ready}");
    assert!(not_ready.contains("not connected"), "{not_ready}");
    // While the broker is away: the worker keeps retrying, stays live,
    // and says it is disconnected.
    let away = Instant::now();
    let mut checks = 0;
    while checks < 5 || away.elapsed() < Duration::from_secs(6) {
        let (status, body) = get_ok(port, "/livez").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(get_ok(port, "/readyz").await.0, 503);
        checks += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let down = samples(&get_ok(port, "/metrics").await.1);
    assert_eq!(sample(&down, "sudokud_broker_connected"), 0.0);
    let unhealthy = health_worker(listen, &["--timeout-secs", "2"]).await;
    assert_eq!(unhealthy.code, 1, "{}", unhealthy.stderr);
    assert!(
        unhealthy
            .stderr
            .contains("/readyz answered 503: not ready: not connected to the broker"),
        "{}",
        unhealthy.stderr
    );
    worker.assert_running().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_fails_while_the_broker_is_away_and_livez_stays_up() {
    // A run that failed half-way may have left the node running with its
    // app stopped, which `start` would take for a node not running: start
    // the app first (this fails harmlessly when there is no node yet).
    let _ = node_run(&["ctl", "start_app"]);
    node_ok(&["start"]);
    let url = node_url();
    let (mut settings, port) = with_listener(settings("metrics_outage"));
    settings.amqp.url = url;
    settings.amqp.reconnect_initial_ms = 200;
    settings.amqp.reconnect_max_ms = 2000;
    // Shorter than the outage below: /livez stays 200 only because the
    // event loop keeps ticking (once a second) while it reconnects.
    settings.metrics.liveness_timeout_secs = 4;
    let client = Client::connect(&settings).await;
    let mut worker = TestWorker::start(&settings);
    let ready = wait_for_status(port, "/readyz", 200, |_, _| {}).await;
    assert!(ready.starts_with("ready"), "{ready}");
    let listen = format!("0.0.0.0:{port}");
    let healthy = health_worker(&listen, &[]).await;
    assert_eq!(healthy.code, 0, "{}", healthy.stderr);
    assert_eq!(
        healthy.stdout.trim(),
        format!("ok: the worker on 127.0.0.1:{port}: ready: connected to the broker and consuming")
    );
    let mut results = client.results().await;
    client
        .publish(
            json!({"id": "before", "puzzle": PUZZLE}).to_string(),
            BasicProperties::default(),
        )
        .await;
    assert_eq!(results.next().await.body["id"], "before");
    drop(results);

    stop_the_broker_and_watch_the_probes(port, &listen, &mut worker).await;

    node_ok(&["ctl", "start_app"]);
    let ready = wait_for_status(port, "/readyz", 200, |_, _| {}).await;
    assert!(ready.starts_with("ready"), "{ready}");
    assert_eq!(get_ok(port, "/livez").await.0, 200);
    let up = samples(&get_ok(port, "/metrics").await.1);
    assert_eq!(sample(&up, "sudokud_broker_connected"), 1.0);
    assert_eq!(sample(&up, "sudokud_broker_reconnects_total"), 1.0);

    // Ready means consuming: a job sent now is answered. The first
    // client's connection died with the broker.
    client.cleanup().await;
    let client = Client::connect(&settings).await;
    let mut results = client.results().await;
    client
        .publish(
            json!({"id": "after", "puzzle": PUZZLE}).to_string(),
            BasicProperties::default(),
        )
        .await;
    let answer: Value = results.next().await.body;
    assert_eq!(answer["id"], "after");
    assert_eq!(answer["solution"], SOLUTION);
    worker.stop().await.expect("the worker stops cleanly");
    client.cleanup().await;
}

#[tokio::test]
async fn livez_fails_once_the_event_loop_stops_ticking() {
    // The listener alone, over state no event loop ticks.
    let stats = std::sync::Arc::new(sudokud::telemetry::Stats::default());
    let settings = sudokud::config::MetricsSettings {
        listen: "127.0.0.1:0".into(),
        liveness_timeout_secs: 1,
    };
    let server = sudokud::metrics::serve(&settings, std::sync::Arc::clone(&stats))
        .await
        .unwrap()
        .expect("a listener");
    let port = server.local_addr().port();
    stats.metrics.tick();
    let (status, body) = get_ok(port, "/livez").await;
    assert_eq!(status, 200, "{body}");
    // Never ticked again: stale once the timeout has passed.
    let stale = wait_for_status(port, "/livez", 503, |_, _| {}).await;
    assert!(stale.contains("has not ticked"), "{stale}");
    assert!(stats.metrics.since_tick() > Duration::from_secs(1));
    stats.metrics.tick();
    assert_eq!(get_ok(port, "/livez").await.0, 200);
    // Not connected: not ready.
    let (status, body) = get_ok(port, "/readyz").await;
    assert_eq!(
        (status, body.trim()),
        (503, "not ready: not connected to the broker")
    );
    drop(server);
    assert!(get(port, "/livez").await.is_none());
}
