//! `sudokud dead list | requeue | purge` on real dead letters: jobs the
//! quorum jobs queue dead-lettered (rejected, or over the delivery limit)
//! on the default broker, each test with queues of its own.

use std::process::Command;
use std::time::Duration;

use crate::common::*;
use lapin::options::{BasicGetOptions, BasicNackOptions, BasicRejectOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel};
use serde_json::{Value, json};
use sudokud::Settings;
use sudokud::producer::dead::{self, DeadLetter, Selection};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Takes the next job off the jobs queue, held unacknowledged; waits for
/// one handed back a moment ago to be there again.
async fn take(channel: &Channel, settings: &Settings) -> lapin::message::BasicGetMessage {
    let start = std::time::Instant::now();
    loop {
        let got = channel
            .basic_get(
                settings.amqp.jobs_queue.as_str().into(),
                BasicGetOptions { no_ack: false },
            )
            .await
            .unwrap();
        if let Some(message) = got {
            return message;
        }
        assert!(start.elapsed() < PATIENCE, "no job in the jobs queue");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Publishes a job and has the jobs queue dead-letter it as a consumer
/// rejecting it would (reason `rejected`).
async fn dead_letter_rejected(client: &Client, id: &str, properties: BasicProperties) {
    client.publish(job(id).to_string(), properties).await;
    let message = take(&client.channel, &client.settings).await;
    assert_eq!(body_id(&message.delivery.data), id);
    client
        .channel
        .basic_reject(
            message.delivery.delivery_tag,
            BasicRejectOptions { requeue: false },
        )
        .await
        .unwrap();
}

/// Publishes a job and hands it back until the quorum queue dead-letters
/// it over its delivery limit (reason `delivery_limit`), as it does a job
/// that crashes every worker.
async fn dead_letter_over_the_limit(client: &Client, id: &str) {
    client
        .publish(job(id).to_string(), BasicProperties::default())
        .await;
    let jobs = &client.settings.amqp.jobs_queue;
    for _ in 0..=client.settings.amqp.delivery_limit {
        let message = take(&client.channel, &client.settings).await;
        assert_eq!(body_id(&message.delivery.data), id);
        client
            .channel
            .basic_nack(
                message.delivery.delivery_tag,
                BasicNackOptions {
                    multiple: false,
                    requeue: true,
                },
            )
            .await
            .unwrap();
    }
    client.wait_for_ready(jobs, 0).await;
}

fn job(id: &str) -> Value {
    json!({"id": id, "puzzle": PUZZLE})
}

fn body_id(body: &[u8]) -> String {
    let body: Value = serde_json::from_slice(body).unwrap();
    body["id"].as_str().unwrap().to_string()
}

fn ids(letters: &[DeadLetter]) -> Vec<&str> {
    letters.iter().map(|l| l.id.as_deref().unwrap()).collect()
}

/// The `sudokud` binary with the test's settings: stdout, stderr, status.
fn sudokud(settings: &Settings, args: &[&str]) -> (String, String, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_sudokud"))
        .args(args)
        .envs(settings_env(settings))
        .current_dir(std::env::temp_dir())
        .output()
        .expect("the binary runs");
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
        output.status.code().unwrap_or(-1),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_listed_requeued_answered_and_purged() {
    let mut settings = settings("dead");
    settings.amqp.delivery_limit = 2;
    let client = Client::connect(&settings).await;
    let dlq = settings.amqp.dead_letter_queue.clone();

    // Five real dead letters, in this order: d2 crashed its way over the
    // delivery limit, the others were rejected; d3 carries a header of
    // its own and a correlation id.
    let mut custom = FieldTable::default();
    custom.insert("x-custom".into(), AMQPValue::LongString("kept".into()));
    dead_letter_rejected(&client, "d0", BasicProperties::default()).await;
    dead_letter_rejected(&client, "d1", BasicProperties::default()).await;
    dead_letter_over_the_limit(&client, "d2").await;
    dead_letter_rejected(
        &client,
        "d3",
        BasicProperties::default()
            .with_headers(custom)
            .with_correlation_id("corr-d3".into()),
    )
    .await;
    dead_letter_rejected(&client, "d4", BasicProperties::default()).await;
    client.wait_for_ready(&dlq, 5).await;

    assert_listed(&client, &settings).await;
    assert_listed_by_the_binary(&client, &settings).await;
    assert_requeued_by_id(&client, &settings).await;

    // A worker answers it; requeue --limit 2 moves the head of the queue,
    // and the worker answers those too.
    let mut results = client.results().await;
    let worker = TestWorker::start(&settings);
    let answer = results.next().await;
    assert_eq!(answer.body["id"], "d3");
    assert_eq!(answer.body["solution"], SOLUTION);
    assert_eq!(answer.correlation_id().as_deref(), Some("corr-d3"));
    let summary = dead::requeue(
        &settings.amqp,
        &Selection {
            limit: Some(2),
            ids: Vec::new(),
        },
        TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!((summary.requeued, summary.left), (2, 2));
    assert!(summary.not_found.is_empty());
    let mut answered: Vec<String> = results
        .take(2)
        .await
        .into_iter()
        .map(|r| {
            assert_eq!(r.body["solution"], SOLUTION);
            r.body["id"].as_str().unwrap().to_string()
        })
        .collect();
    answered.sort();
    assert_eq!(answered, ["d0", "d1"]);
    client.wait_for_ready(&dlq, 2).await;
    let left = dead::list(&settings.amqp, None, TIMEOUT).await.unwrap();
    assert_eq!(ids(&left.letters), ["d2", "d4"]);
    client.wait_for_ready(&dlq, 2).await;

    // purge: the rest go, and the queue is empty.
    let (out, err, status) = sudokud(&settings, &["dead", "purge"]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(out.trim(), format!("purged 2 dead letters from {dlq}"));
    client.wait_for_ready(&dlq, 0).await;
    let empty = dead::list(&settings.amqp, None, TIMEOUT).await.unwrap();
    assert_eq!((empty.total, empty.letters.len()), (0, 0));
    // Nothing was answered twice or left behind.
    assert!(results.try_next(Duration::from_millis(500)).await.is_none());
    worker.stop().await.expect("the worker stops cleanly");
    client.cleanup().await;
}

/// `dead::list` of the five dead letters: everything, in order, with why
/// and when, and the queue unchanged; `--limit` gives the head.
async fn assert_listed(client: &Client, settings: &Settings) {
    let dlq = &settings.amqp.dead_letter_queue;
    let listing = dead::list(&settings.amqp, None, TIMEOUT).await.unwrap();
    assert_eq!(listing.total, 5);
    assert_eq!(ids(&listing.letters), ["d0", "d1", "d2", "d3", "d4"]);
    let reasons: Vec<&str> = listing
        .letters
        .iter()
        .map(|l| l.reason.as_deref().unwrap())
        .collect();
    assert_eq!(
        reasons,
        [
            "rejected",
            "rejected",
            "delivery_limit",
            "rejected",
            "rejected"
        ]
    );
    for (i, letter) in listing.letters.iter().enumerate() {
        assert_eq!(letter.position, i + 1);
        assert_eq!(letter.deaths, 1, "{letter:?}");
        assert!(letter.time.is_some(), "{letter:?}");
        assert_eq!(
            letter.queue.as_deref(),
            Some(settings.amqp.jobs_queue.as_str())
        );
        assert_eq!(
            letter.bytes,
            job(letter.id.as_deref().unwrap()).to_string().len()
        );
    }
    client.wait_for_ready(dlq, 5).await;
    let first_two = dead::list(&settings.amqp, Some(2), TIMEOUT).await.unwrap();
    assert_eq!(
        (first_two.total, ids(&first_two.letters)),
        (5, vec!["d0", "d1"])
    );
    client.wait_for_ready(dlq, 5).await;
    let again = dead::list(&settings.amqp, None, TIMEOUT).await.unwrap();
    assert_eq!(
        again.letters, listing.letters,
        "a listing lost or moved something"
    );
}

/// `sudokud dead list` of the five dead letters: a table, and JSON lines.
async fn assert_listed_by_the_binary(client: &Client, settings: &Settings) {
    let dlq = &settings.amqp.dead_letter_queue;
    let (out, err, status) = sudokud(settings, &["dead", "list"]);
    assert_eq!(status, 0, "{err}");
    let rows: Vec<&str> = out.lines().collect();
    assert!(rows[0].starts_with("#  ID"), "{out}");
    assert_eq!(rows.len(), 6, "{out}");
    for (row, id) in rows[1..].iter().zip(["d0", "d1", "d2", "d3", "d4"]) {
        assert!(
            row.contains(id) && row.contains(&settings.amqp.jobs_queue),
            "{out}"
        );
    }
    assert!(rows[3].contains("delivery_limit"), "{out}");
    assert!(
        err.contains(&format!("5 of 5 dead letters in {dlq}")),
        "{err}"
    );
    let (out, err, status) = sudokud(settings, &["dead", "list", "--json", "--limit", "1"]);
    assert_eq!(status, 0, "{err}");
    let line: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(line["id"], "d0");
    assert_eq!(line["reason"], "rejected");
    assert_eq!(line["deaths"], 1);
    assert!(line["time"].as_str().unwrap().ends_with('Z'), "{line}");
    client.wait_for_ready(dlq, 5).await;
}

/// `sudokud dead requeue --id d3 nope`: only d3 moves, as a fresh job with
/// its own headers and correlation id (and is put back for a worker); an
/// unknown id is an error, after the others moved.
async fn assert_requeued_by_id(client: &Client, settings: &Settings) {
    let dlq = &settings.amqp.dead_letter_queue;
    let (out, err, status) = sudokud(settings, &["dead", "requeue", "--id", "d3", "nope"]);
    assert_eq!(status, 1, "{out}{err}");
    assert!(out.contains("requeued 1 dead letters"), "{out}");
    assert!(err.contains("no dead letter with id nope"), "{err}");
    client.wait_for_ready(&settings.amqp.jobs_queue, 1).await;
    client.wait_for_ready(dlq, 4).await;
    let fresh = take(&client.channel, settings).await;
    assert_eq!(body_id(&fresh.delivery.data), "d3");
    let headers = fresh
        .delivery
        .properties
        .headers()
        .clone()
        .unwrap_or_default();
    // The quorum jobs queue numbers every delivery: 0 for a fresh job.
    let keys: Vec<&str> = headers
        .inner()
        .keys()
        .map(|k| k.as_str())
        .filter(|k| *k != "x-delivery-count")
        .collect();
    assert_eq!(
        keys,
        ["x-custom"],
        "the death headers are gone, the rest kept"
    );
    assert!(
        matches!(
            headers.inner().get("x-delivery-count"),
            None | Some(AMQPValue::LongLongInt(0))
        ),
        "{headers:?}"
    );
    assert!(!fresh.delivery.redelivered);
    assert_eq!(
        fresh
            .delivery
            .properties
            .correlation_id()
            .as_ref()
            .map(|c| c.as_str()),
        Some("corr-d3")
    );
    assert_eq!(fresh.delivery.properties.delivery_mode(), &Some(2));
    // Back to the queue for a worker to answer.
    client
        .channel
        .basic_nack(
            fresh.delivery.delivery_tag,
            BasicNackOptions {
                multiple: false,
                requeue: true,
            },
        )
        .await
        .unwrap();
    let left = dead::list(&settings.amqp, None, TIMEOUT).await.unwrap();
    assert_eq!(ids(&left.letters), ["d0", "d1", "d2", "d4"]);
    client.wait_for_ready(dlq, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_dead_letter_queue_is_a_clear_error() {
    let settings = settings("dead_missing");
    let error = dead::list(&settings.amqp, None, TIMEOUT)
        .await
        .expect_err("no such queue");
    let message = format!("{error:#}");
    assert!(
        message.contains(&settings.amqp.dead_letter_queue),
        "{message}"
    );
    let (_, err, status) = sudokud(&settings, &["dead", "purge"]);
    assert_eq!(status, 1);
    assert!(err.contains("cannot find the dead-letter queue"), "{err}");
}

/// A job the worker dead-letters itself (no result can be delivered: the
/// results queue refuses every one) is listed with the worker's reason,
/// from its `x-sudokud-reason` header, as one death out of the jobs queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_the_worker_dead_letters_is_listed_with_the_workers_reason() {
    let settings = classic(settings("dead_by_worker"));
    let client = Client::connect(&settings).await;
    let dlq = settings.amqp.dead_letter_queue.clone();
    let policy = client.refuse_all(&settings.amqp.results_queue).await;
    let worker = TestWorker::start(&settings);
    client
        .publish(job("w1").to_string(), BasicProperties::default())
        .await;
    client.wait_for_ready(&dlq, 1).await;
    worker.stop().await.unwrap();
    ctl(&["clear_policy", &policy]);

    let listing = dead::list(&settings.amqp, None, TIMEOUT).await.unwrap();
    assert_eq!(ids(&listing.letters), ["w1"]);
    let letter = &listing.letters[0];
    let reason = letter.reason.as_deref().unwrap_or("-");
    // The queue's name, cut short as the worker writes what it echoes.
    let results_queue = &settings.amqp.results_queue[..20];
    assert!(
        reason.starts_with(&format!(
            "the answer could not be delivered to {results_queue}"
        )) && reason.ends_with("in 3 attempts (the broker refused it)"),
        "{letter:?}"
    );
    assert_eq!(letter.deaths, 1, "{letter:?}");
    let (out, err, status) = sudokud(&settings, &["dead", "list", "--json"]);
    assert_eq!(status, 0, "{err}");
    let line: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(line["reason"], reason, "{line}");
    client.cleanup().await;
}
