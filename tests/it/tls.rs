//! TLS for `amqps://`, against a TLS-only RabbitMQ node of its own
//! (`scripts/tls-node.sh`: port 5671, no plain listener, client
//! certificates required), started on first use and left running
//! (`scripts/tls-node.sh stop` stops it). The script makes the
//! certificates with openssl: a test CA, the node's certificate for
//! `localhost` and `127.0.0.1`, a client certificate, and another CA.
//!
//! Checked: `amqps://` starts with a TLS handshake, never a plain AMQP
//! byte; the worker and `submit` complete a round trip with the CA file;
//! a certificate from another CA, or no CA file at all, is refused with
//! the certificate problem named, retried, given up as configured, and no
//! consumer is ever registered; the host name is checked; a client key
//! that is not the certificate's is a settings error. Set `TEST_LOG=1` to
//! see the workers' logs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;
use sudokud::Settings;
use tokio::io::AsyncReadExt;

/// Starts the TLS node once per run; its certificate directory.
fn tls_node() -> &'static Path {
    static CERTS: OnceLock<PathBuf> = OnceLock::new();
    CERTS.get_or_init(|| {
        run_script("tls-node.sh", &["start"]);
        PathBuf::from(run_script("tls-node.sh", &["certs"]))
    })
}

/// rabbitmqctl on the TLS node.
fn ctl(args: &[&str]) -> String {
    run_script("tls-node.sh", &[&["ctl"], args].concat())
}

/// Settings of one test against the TLS node (host name `localhost`, as
/// in its certificate), with the client certificate it requires.
fn tls_settings(test: &str) -> Settings {
    let certs = tls_node();
    let mut settings = settings(test);
    settings.amqp.url = "amqps://guest:guest@localhost:5671/%2f".into();
    settings.amqp.tls_cert_file = file(certs, "client.pem");
    settings.amqp.tls_key_file = file(certs, "client.key");
    settings
}

fn file(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

/// The TLS settings as environment variables (`settings_env` has the rest).
fn tls_env(settings: &Settings) -> Vec<(String, String)> {
    let amqp = &settings.amqp;
    let mut vars = vec![
        ("SUDOKUD__AMQP__TLS_CERT_FILE", amqp.tls_cert_file.clone()),
        ("SUDOKUD__AMQP__TLS_KEY_FILE", amqp.tls_key_file.clone()),
        ("SUDOKUD__LOG__FORMAT", "json".into()),
    ];
    if !amqp.tls_ca_file.is_empty() {
        vars.push(("SUDOKUD__AMQP__TLS_CA_FILE", amqp.tls_ca_file.clone()));
    }
    vars.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn pairs(vars: &[(String, String)]) -> Vec<(&str, &str)> {
    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// `sudokud submit` with these settings, `input` on its standard input.
fn submit(settings: &Settings, input: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sudokud"))
        .args(["submit", "--ordered", "--timeout", "60", "-"])
        .current_dir(std::env::temp_dir())
        .env_remove("RUST_LOG")
        .envs(settings_env(settings))
        .envs(tls_env(settings))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start sudokud submit");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Deletes a test's queues on the TLS node (those that exist).
fn delete_queues(settings: &Settings) {
    let amqp = &settings.amqp;
    for queue in [
        &amqp.jobs_queue,
        &amqp.results_queue,
        &amqp.dead_letter_queue,
    ] {
        let _ = Command::new(script("tls-node.sh"))
            .args(["ctl", "delete_queue", queue])
            .output();
    }
}

/// The first bytes a client sends to a plain TCP listener.
async fn first_bytes(listener: &tokio::net::TcpListener) -> [u8; 8] {
    let (mut socket, _) = tokio::time::timeout(PATIENCE, listener.accept())
        .await
        .expect("no connection")
        .unwrap();
    // A TLS ClientHello is longer than 8 bytes; the AMQP header is 8.
    let mut first = [0u8; 8];
    socket.read_exact(&mut first).await.unwrap();
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqps_starts_with_a_tls_handshake_never_plain_amqp() {
    const AMQP_HEADER: &[u8; 8] = b"AMQP\x00\x00\x09\x01";
    for scheme in ["amqps", "amqp"] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut settings = settings("raw_listener");
        settings.amqp.url = format!("{scheme}://guest:secretpw@127.0.0.1:{port}/%2f");
        settings.amqp.connect_timeout_secs = 2;

        // A producer command...
        let amqp = settings.amqp.clone();
        let probe = tokio::spawn(async move {
            sudokud::producer::health::check(&amqp, 0, Duration::from_secs(2)).await
        });
        let sent = first_bytes(&listener).await;
        assert!(probe.await.unwrap().is_err(), "no broker there");
        // ...and the worker.
        let worker = TestWorker::start(&settings);
        let worker_sent = first_bytes(&listener).await;
        worker.stop().await.unwrap();

        for first in [sent, worker_sent] {
            if scheme == "amqps" {
                assert_eq!(first[..2], [0x16, 0x03], "not a TLS handshake: {first:?}");
                assert_ne!(&first, AMQP_HEADER);
            } else {
                // The listener sees plain AMQP when it is asked for.
                assert_eq!(&first, AMQP_HEADER);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_and_submit_round_trip_over_tls_with_the_ca_file() {
    let mut settings = tls_settings("tls_round_trip");
    settings.amqp.tls_ca_file = file(tls_node(), "ca.pem");
    let env = tls_env(&settings);
    let mut worker = WorkerProcess::start(&settings, &pairs(&env));
    worker.wait_for_line(|l| l.contains("\"consuming\"")).await;

    let puzzles = hard_puzzles(40);
    let output = submit(&settings, &(puzzles.join("\n") + "\n"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "submit failed: {stderr}");
    let answers: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), puzzles.len(), "{stderr}");
    for (answer, puzzle) in answers.iter().zip(&puzzles) {
        assert_eq!(answer["status"], "solved", "{answer}");
        assert!(is_solution_of(answer["solution"].as_str().unwrap(), puzzle));
    }

    worker.terminate();
    let status = worker.exit_status().await;
    assert!(status.success(), "exit status {status:?}");
    let lines = worker.json_lines();
    let connected = lines
        .iter()
        .find(|l| l["message"] == "connected")
        .expect("a connected line");
    assert_eq!(connected["url"], "amqps://guest:***@localhost:5671/%2f");
    assert!(!worker.lines().join("\n").contains("guest:guest"));
    delete_queues(&settings);
}

/// A worker with these settings cannot connect: it retries (with backoff)
/// naming `problem`, gives up as configured, and the node never sees its
/// queues or a consumer; `submit` fails naming `problem` too.
async fn refused(settings: &Settings, problem: &str) {
    let mut env = tls_env(settings);
    for (key, value) in [
        ("SUDOKUD__AMQP__RECONNECT_INITIAL_MS", "100"),
        ("SUDOKUD__AMQP__RECONNECT_MAX_MS", "400"),
        ("SUDOKUD__AMQP__RECONNECT_GIVE_UP_SECS", "2"),
    ] {
        env.push((key.into(), value.into()));
    }
    let mut worker = WorkerProcess::start(settings, &pairs(&env));
    let status = worker.exit_status().await;
    let all = worker.lines().join("\n");
    assert_eq!(status.code(), Some(1), "{all}");
    let lines = worker.json_lines();
    let retries: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == "cannot reach the broker; retrying")
        .collect();
    assert!(retries.len() >= 2, "not retried:\n{all}");
    for retry in &retries {
        let error = retry["error"].as_str().unwrap();
        assert!(
            error.contains("TLS with localhost failed") && error.contains(problem),
            "{error}"
        );
    }
    assert!(all.contains("unreachable for"), "{all}");
    assert!(
        !lines
            .iter()
            .any(|l| l["message"] == "connected" || l["message"] == "consuming"),
        "{all}"
    );
    // The worker never got as far as declaring its queues.
    let queues = ctl(&["list_queues", "name"]);
    assert!(!queues.contains(&settings.amqp.jobs_queue), "{queues}");
    let consumers = ctl(&["list_consumers", "queue_name"]);
    assert!(
        !consumers.contains(&settings.amqp.jobs_queue),
        "{consumers}"
    );

    let output = submit(settings, &format!("{PUZZLE}\n"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains(problem), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_another_ca_is_refused() {
    let mut settings = tls_settings("tls_other_ca");
    settings.amqp.tls_ca_file = file(tls_node(), "other-ca.pem");
    refused(&settings, "invalid peer certificate: UnknownIssuer").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_ca_file_the_certificate_is_refused() {
    let settings = tls_settings("tls_no_ca");
    refused(&settings, "invalid peer certificate: UnknownIssuer").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_name_is_checked_and_the_client_key_must_fit() {
    let certs = tls_node();
    let mut settings = tls_settings("tls_host_name");
    settings.amqp.tls_ca_file = file(certs, "ca.pem");
    // The node's certificate is for localhost and 127.0.0.1, not 127.0.0.2
    // (the same node, on another loopback address).
    settings.amqp.url = "amqps://guest:guest@127.0.0.2:5671/%2f".into();
    let error = sudokud::producer::health::check(&settings.amqp, 0, PATIENCE)
        .await
        .unwrap_err();
    let error = format!("{error:#}");
    assert!(
        error.contains("certificate not valid for name \"127.0.0.2\""),
        "{error}"
    );
    // By IP address, as in the certificate, the same settings pass.
    settings.amqp.url = "amqps://guest:guest@127.0.0.1:5671/%2f".into();
    let report = sudokud::producer::health::check(&settings.amqp, 0, PATIENCE).await;
    let report = format!("{report:?}");
    // The test's queue does not exist: TLS and the login worked.
    assert!(
        report.contains("does not exist on amqps://guest:***@127.0.0.1:5671/%2f"),
        "{report}"
    );

    // A key that is not the client certificate's is refused at start.
    settings.amqp.tls_key_file = file(certs, "server.key");
    let error = sudokud::broker::check_settings(&settings.amqp).unwrap_err();
    assert_eq!(error.key, "amqp.tls_key_file", "{error}");
    assert!(error.reason.contains("KeyMismatch"), "{error}");
}
