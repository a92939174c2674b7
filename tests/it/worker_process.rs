//! The `sudokud run` binary as operators run it: SIGTERM with jobs in
//! flight, two workers sharing a queue, its log lines, settings errors, and
//! a broker that stays unreachable or refuses the login.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::common::*;
use lapin::BasicProperties;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_jobs_in_flight_loses_nothing_and_exits_0() {
    let settings = settings("sigterm");
    let client = Client::connect(&settings).await;
    let mut results = client.results().await;
    // The queue is full before the worker starts, so it is still deep when
    // the signal comes.
    let n = 10_000;
    let puzzles = puzzles(n);
    client.publish_all(jobs(&puzzles)).await;
    let mut worker = WorkerProcess::start(&settings, &[]);
    let answered = results.take_ids(200).await;
    worker.terminate();
    let status = worker.exit_status().await;
    assert!(status.success(), "exit status {status:?}");
    let lines = worker.lines().join("\n");
    for expected in [
        "connected",
        "topology declared",
        "consuming",
        "signal received signal=\"SIGTERM\"",
        "shutting down",
        "drained",
        "stopped",
    ] {
        assert!(lines.contains(expected), "no {expected:?} in:\n{lines}");
    }
    // The worker left jobs in the queue, and none is lost: another worker
    // answers every one the first did not.
    client
        .nothing_lost_after_stop(&mut results, answered, &puzzles)
        .await;
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_share_one_queue() {
    let mut settings = settings("two_workers");
    settings.worker.threads = 1;
    settings.worker.prefetch = 8;
    let client = Client::connect(&settings).await;
    let mut a = WorkerProcess::start(&settings, &[]);
    let mut b = WorkerProcess::start(&settings, &[]);
    // Both consume before any job is sent, so the broker deals to both.
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 2)
        .await;
    let mut results = client.results().await;

    let n = 3000;
    let puzzles = puzzles(n);
    client.publish_all(jobs(&puzzles)).await;
    let mut per_worker: HashMap<String, usize> = HashMap::new();
    let answered = by_id(results.take(n).await);
    for (i, puzzle) in puzzles.iter().enumerate() {
        let result = &answered[&i.to_string()];
        assert!(is_solution_of(
            result.body["solution"].as_str().unwrap(),
            puzzle
        ));
        *per_worker
            .entry(result.body["worker"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let expected: HashSet<String> = [a.pid(), b.pid()]
        .iter()
        .map(|pid| format!("{}/{pid}", gethostname()))
        .collect();
    assert_eq!(
        per_worker.keys().cloned().collect::<HashSet<_>>(),
        expected,
        "both workers took jobs: {per_worker:?}"
    );
    assert!(results.try_next(Duration::from_millis(200)).await.is_none());
    a.terminate();
    b.terminate();
    assert!(a.exit_status().await.success());
    assert!(b.exit_status().await.success());
    client.cleanup().await;
}

fn gethostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// A throughput line's figures: rates and latencies as floats, counts as
/// integers.
fn assert_throughput_fields(t: &Value) {
    for field in [
        "jobs_per_sec",
        "puzzles_per_sec",
        "latency_p50_ms",
        "latency_p99_ms",
        "interval_secs",
    ] {
        assert!(t[field].is_f64(), "{field} in {t}");
    }
    for field in [
        "jobs",
        "puzzles",
        "solved",
        "unsolvable",
        "invalid",
        "timeout",
        "error",
        "in_flight",
    ] {
        assert!(t[field].is_u64(), "{field} in {t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_exact_throughput_fields_and_no_password() {
    let mut settings = classic(settings("json_logs"));
    settings.log.throughput_secs = 1;
    let client = Client::connect(&settings).await;
    let mut worker = WorkerProcess::start(&settings, &[("SUDOKUD__LOG__FORMAT", "json")]);
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 1)
        .await;
    let mut results = client.results().await;
    let puzzles = puzzles(100);
    client.publish_all(jobs(&puzzles)).await;
    client
        .publish(
            serde_json::to_vec(&json!({"id": "batch", "puzzles": [PUZZLE, "bad"]})).unwrap(),
            BasicProperties::default(),
        )
        .await;
    results.take(puzzles.len() + 1).await;

    // Every line is one JSON object.
    let parse = |line: &str| -> Value {
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    };
    let line = worker
        .wait_for_line(|l| {
            l.contains("\"throughput\"")
                && serde_json::from_str::<Value>(l).is_ok_and(|v| v["jobs"].as_u64() > Some(0))
        })
        .await;
    let t = parse(&line);
    assert_eq!(t["message"], "throughput");
    assert_eq!(t["level"], "INFO");
    assert_throughput_fields(&t);
    // The throughput lines (the last one at exit) count every job once.
    worker.terminate();
    assert!(worker.exit_status().await.success());
    let lines: Vec<Value> = worker.lines().iter().map(|l| parse(l)).collect();
    let sum = |field: &str| -> u64 {
        lines
            .iter()
            .filter(|l| l["message"] == "throughput")
            .map(|l| l[field].as_u64().unwrap())
            .sum()
    };
    assert_eq!(sum("jobs"), 101);
    assert_eq!(sum("puzzles"), 102);
    assert_eq!(sum("solved"), 101);
    assert_eq!(sum("invalid"), 1);
    assert_eq!(sum("timeout") + sum("error") + sum("unsolvable"), 0);
    let consuming = lines
        .iter()
        .find(|l| l["message"] == "consuming")
        .expect("a consuming line");
    assert_eq!(consuming["threads"], 2);
    assert_eq!(consuming["prefetch"], 128);
    let connected = lines
        .iter()
        .find(|l| l["message"] == "connected")
        .expect("a connected line");
    assert_eq!(connected["url"], "amqp://guest:***@127.0.0.1:5672/%2f");
    let all = worker.lines().join("\n");
    assert!(!all.contains("guest:guest"), "the password was logged");
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_stop_the_worker_with_the_key_named() {
    let settings = settings("bad_settings");
    let mut worker = WorkerProcess::start(&settings, &[("SUDOKUD__WORKER__PREFETCH", "lots")]);
    let status = worker.exit_status().await;
    assert!(!status.success());
    let lines = worker.lines().join("\n");
    assert!(lines.contains("prefetch"), "{lines}");

    let file = std::env::temp_dir().join(format!("{}.toml", unique("bad_settings")));
    std::fs::write(&file, "[solver]\ndefault_timeout_ms = 0\n").unwrap();
    let mut sudokud = command(None, &[]);
    sudokud.args(["run", "--config"]).arg(&file);
    let run = run_to_end(sudokud, "");
    std::fs::remove_file(&file).unwrap();
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("invalid setting solver.default_timeout_ms"),
        "{}",
        run.stderr
    );
}

/// A local port nothing listens on: connections to it are refused.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_broker_is_retried_then_given_up_as_configured() {
    let mut settings = settings("give_up");
    settings.amqp.url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", closed_port());
    let started = std::time::Instant::now();
    let mut worker = WorkerProcess::start(
        &settings,
        &[
            ("SUDOKUD__AMQP__RECONNECT_INITIAL_MS", "100"),
            ("SUDOKUD__AMQP__RECONNECT_MAX_MS", "400"),
            ("SUDOKUD__AMQP__RECONNECT_GIVE_UP_SECS", "2"),
        ],
    );
    let status = worker.exit_status().await;
    let waited = started.elapsed();
    let lines = worker.lines().join("\n");
    assert_eq!(status.code(), Some(1), "{lines}");
    // It retried with backoff for the configured time, not less.
    let retries = worker
        .lines()
        .iter()
        .filter(|l| l.contains("cannot reach the broker; retrying"))
        .count();
    assert!(retries >= 3, "{retries} retries:\n{lines}");
    assert!(waited >= Duration::from_secs(2), "gave up after {waited:?}");
    assert!(
        lines.contains("unreachable for") && lines.contains("amqp.reconnect_give_up_secs is 2"),
        "{lines}"
    );
    assert!(!lines.contains("guest:guest"), "the password was logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_stops_the_worker_without_retrying() {
    let mut settings = settings("bad_login");
    settings.amqp.url = settings.amqp.url.replace("guest:guest", "guest:wrong");
    let mut worker = WorkerProcess::start(&settings, &[]);
    let status = worker.exit_status().await;
    let lines = worker.lines().join("\n");
    assert_eq!(status.code(), Some(1), "{lines}");
    assert!(
        !lines.contains("cannot reach the broker; retrying"),
        "a wrong password is not worth retrying:\n{lines}"
    );
    assert!(
        lines.contains("ACCESS") || lines.contains("access"),
        "{lines}"
    );
    assert!(!lines.contains("guest:wrong"), "the password was logged");
}
