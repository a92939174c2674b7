//! Careless and hostile producers against a real worker and broker: ids no
//! reader could read back, replies aimed at the service's own queues,
//! forged delivery counts, a results queue deleted under the worker, a
//! reply queue that refuses every message (and a results queue that does
//! too, by a policy set with `rabbitmqctl`), a job longer than its
//! deadline, and a second stop signal.

use std::time::Duration;

use crate::common::*;
use lapin::BasicProperties;
use lapin::options::{BasicConsumeOptions, BasicPublishOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use serde_json::{Value, json};
use sudokud_testkit::inspect_queue;
use tokio_stream::StreamExt;

fn job(body: Value) -> Vec<u8> {
    serde_json::to_vec(&body).unwrap()
}

fn with_correlation(id: &str) -> BasicProperties {
    BasicProperties::default().with_correlation_id(id.into())
}

/// A passive declare of `queue` on a channel of its own: its ready count,
/// or `None` if it does not exist.
async fn ready_if_exists(client: &Client, queue: &str) -> Option<u32> {
    let channel = client.connection.create_channel().await.unwrap();
    let declared = inspect_queue(&channel, queue).await.ok()?;
    let _ = channel.close(200, "OK".into()).await;
    Some(declared.message_count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_no_reader_could_read_back_are_answered_with_a_null_id() {
    let settings = classic(settings("unreadable_ids"));
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep = format!(r#"{{"id": {nested}, "puzzle": "{PUZZLE}"}}"#);
    client.publish(deep, with_correlation("deep")).await;
    let long = job(json!({"id": "z".repeat(200_000), "puzzle": PUZZLE}));
    client.publish(long, with_correlation("long")).await;
    for result in results.take(2).await {
        let which = result.correlation_id().expect("the correlation id is kept");
        assert_eq!(result.body["status"], "invalid", "{which}");
        assert_eq!(result.body["id"], Value::Null, "{which}");
        let error = result.body["error"].as_str().unwrap();
        assert!(error.starts_with("id is "), "{which}: {error}");
        assert!(
            result.raw.len() < 400,
            "{which}: {} bytes",
            result.raw.len()
        );
    }
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_never_go_to_the_services_own_queues() {
    let settings = classic(settings("own_queues"));
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    let amqp = &settings.amqp;
    for queue in [&amqp.jobs_queue, &amqp.dead_letter_queue] {
        let properties = with_correlation(queue).with_reply_to(queue.as_str().into());
        client
            .publish(job(json!({"id": queue, "puzzle": PUZZLE})), properties)
            .await;
    }
    for result in results.take(2).await {
        assert_eq!(result.body["solution"], SOLUTION);
    }
    // Nothing came back as a job, and nothing else was answered.
    client.wait_for_ready(&amqp.jobs_queue, 0).await;
    assert!(results.try_next(Duration::from_secs(1)).await.is_none());
    assert_eq!(client.ready(&amqp.dead_letter_queue).await, 0);

    // Direct reply-to still works: the answer comes to this channel.
    let channel = client.connection.create_channel().await.unwrap();
    let mut replies = channel
        .basic_consume(
            "amq.rabbitmq.reply-to".into(),
            "".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..BasicConsumeOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    channel
        .basic_publish(
            "".into(),
            amqp.jobs_queue.as_str().into(),
            BasicPublishOptions::default(),
            &job(json!({"id": "direct", "puzzle": PUZZLE})),
            BasicProperties::default().with_reply_to("amq.rabbitmq.reply-to".into()),
        )
        .await
        .unwrap();
    let reply = tokio::time::timeout(PATIENCE, replies.next())
        .await
        .expect("no direct reply")
        .unwrap()
        .unwrap();
    let body: Value = serde_json::from_slice(&reply.data).unwrap();
    assert_eq!(
        (body["id"].as_str(), body["solution"].as_str()),
        (Some("direct"), Some(SOLUTION))
    );
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_delivery_count_changes_nothing() {
    // A classic queue passes the producer's headers on untouched.
    let settings = classic(settings("forged_count"));
    let client = Client::connect(&settings).await;
    let mut headers = FieldTable::default();
    headers.insert("x-delivery-count".into(), AMQPValue::LongLongInt(3));
    let forged = |from: usize, n: usize| {
        (from..from + n).map(|i| {
            (
                job(json!({"id": i, "puzzle": PUZZLE})),
                BasicProperties::default().with_headers(headers.clone()),
            )
        })
    };
    // A consumer of the test's holds 20 of them unacknowledged; when it
    // goes away, the broker delivers them again, flagged `redelivered`.
    let held = 20;
    let (channel, mut consumer) = client
        .consumer(&settings.amqp.jobs_queue, Some(held as u16))
        .await;
    client.publish_all(forged(0, held)).await;
    for _ in 0..held {
        let delivery = tokio::time::timeout(PATIENCE, consumer.next()).await;
        assert!(delivery.is_ok_and(|d| d.is_some_and(|d| d.is_ok_and(|d| !d.redelivered))));
    }
    let mut worker = WorkerProcess::start(&settings, &[("SUDOKUD__LOG__LEVEL", "debug")]);
    let mut results = client.results().await;
    let n = 300;
    client.publish_all(forged(held, n)).await;
    for result in results.take(n).await {
        assert_eq!(result.body["solution"], SOLUTION);
    }
    channel.close(200, "OK".into()).await.unwrap();
    assert_eq!(
        results.take_ids(held).await,
        (0..held as u64).collect(),
        "the jobs held by the test's consumer"
    );
    // Not one of them was taken for a redelivery to run alone, not even
    // the 20 the broker did redeliver (a classic queue counts nothing, so
    // their count is the producer's): no quarantine, and the first fresh
    // job moved the consumer from its careful start (one job at a time, as
    // for redelivered jobs) to the full prefetch. The worker is stopped
    // first, so that its log is read to the end: lines logged before an
    // answer may still be on their way through the pipe when it arrives.
    worker.terminate();
    assert!(worker.exit_status().await.success());
    let lines = worker.lines();
    let quarantined: Vec<&String> = lines
        .iter()
        .filter(|line| {
            line.contains("a redelivered job arrived") || line.contains("redelivered job alone")
        })
        .collect();
    assert!(quarantined.is_empty(), "{quarantined:#?}");
    let redelivered = lines
        .iter()
        .filter(|line| line.ends_with("redelivered job"))
        .count();
    assert_eq!(redelivered, held, "the broker's redeliveries, as logged");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("consuming again") && line.contains("full")),
        "the consumer never reached its full prefetch"
    );
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_results_queue_is_declared_again_and_nothing_is_dead_lettered() {
    let settings = classic(settings("deleted_results"));
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let amqp = &settings.amqp;
    client.wait_for_consumers(&amqp.jobs_queue, 1).await;
    client
        .channel
        .queue_delete(
            amqp.results_queue.as_str().into(),
            lapin::options::QueueDeleteOptions::default(),
        )
        .await
        .unwrap();
    let n = 100;
    let puzzles = vec![PUZZLE.to_string(); n];
    client.publish_all(jobs(&puzzles)).await;
    client.wait_for_ready(&amqp.jobs_queue, 0).await;
    // The worker declared the results queue again and every answer is in it.
    let start = std::time::Instant::now();
    while ready_if_exists(&client, &amqp.results_queue).await != Some(n as u32) {
        assert!(start.elapsed() < PATIENCE, "the answers never all arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut results = client.results().await;
    for result in results.take(n).await {
        assert_eq!(result.body["solution"], SOLUTION);
    }
    assert_eq!(client.ready(&amqp.dead_letter_queue).await, 0);
    worker.stop().await.unwrap();
    client.cleanup().await;
}

/// Declares a reply queue that refuses every message (the broker nacks
/// them, as a full queue with `reject-publish` overflow does).
async fn refusing_queue(client: &mut Client, name: &str) {
    let mut args = FieldTable::default();
    args.insert("x-max-length".into(), AMQPValue::LongInt(0));
    args.insert(
        "x-overflow".into(),
        AMQPValue::LongString("reject-publish".into()),
    );
    client
        .declare_queue_with(name, QueueDeclareOptions::default(), args)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_queue_that_keeps_refusing_gets_the_result_sent_to_the_results_queue() {
    let settings = classic(settings("refused_reply"));
    let mut client = Client::connect(&settings).await;
    let refusing = format!("{}.full", settings.amqp.jobs_queue);
    refusing_queue(&mut client, &refusing).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    let body = job(json!({"id": "refused", "puzzle": PUZZLE}));
    let properties = with_correlation("c-1").with_reply_to(refusing.as_str().into());
    client.publish(&body, properties).await;
    // A result can be delivered, so none is dropped and the job is not
    // dead-lettered: after its attempts at the reply queue, the result goes
    // where a missing reply queue's would.
    let result = results.next().await;
    assert_eq!(result.body["id"], "refused");
    assert_eq!(result.body["status"], "solved");
    assert_eq!(result.correlation_id().as_deref(), Some("c-1"));
    client.wait_for_ready(&settings.amqp.jobs_queue, 0).await;
    assert_eq!(client.ready(&settings.amqp.dead_letter_queue).await, 0);
    assert!(results.try_next(Duration::from_millis(500)).await.is_none());
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_broker_keeps_refusing_dead_letters_its_job_with_the_reason() {
    let settings = classic(settings("refused"));
    let mut client = Client::connect(&settings).await;
    let refusing = format!("{}.full", settings.amqp.jobs_queue);
    refusing_queue(&mut client, &refusing).await;
    // The results queue refuses every message too.
    let results_queue = settings.amqp.results_queue.clone();
    let policy = client.refuse_all(&results_queue).await;
    let worker = TestWorker::start(&settings);
    let mut dead = client.reader(&settings.amqp.dead_letter_queue).await;
    let body = job(json!({"id": "refused", "puzzle": PUZZLE}));
    let properties = with_correlation("c-1").with_reply_to(refusing.as_str().into());
    client.publish(&body, properties).await;
    let letter = dead.next().await;
    assert_eq!(letter.raw, body, "the job is dead-lettered as it came");
    let headers = letter.properties.headers().clone().unwrap_or_default();
    let reason = match headers.inner().get("x-sudokud-reason") {
        Some(AMQPValue::LongString(reason)) => reason.to_string(),
        other => panic!("no reason header: {other:?}"),
    };
    assert!(reason.contains("3 attempts"), "{reason}");
    assert!(reason.contains("refused"), "{reason}");
    assert!(reason.contains(results_queue.as_str()), "{reason}");
    assert_eq!(letter.correlation_id().as_deref(), Some("c-1"));
    client.wait_for_ready(&settings.amqp.jobs_queue, 0).await;
    assert!(dead.try_next(Duration::from_millis(500)).await.is_none());
    worker.stop().await.unwrap();
    ctl(&["clear_policy", &policy]);
    client.cleanup().await;
}

/// A count over the empty grid: runs until its deadline.
fn endless(id: &str, timeout_ms: u64) -> Value {
    json!({"id": id, "puzzle": ".".repeat(81), "mode": "count",
           "limit": 1_000_000_000u64, "timeout_ms": timeout_ms})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_answered_by_the_jobs_deadline() {
    let mut settings = classic(settings("job_deadline"));
    settings.solver.max_count_limit = 1_000_000_000;
    settings.worker.max_job_ms = 400;
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    let puzzles: Vec<String> = vec![".".repeat(81); 40];
    let batch = json!({"id": "long", "puzzles": puzzles, "mode": "count",
                       "limit": 1_000_000_000u64, "timeout_ms": 60_000});
    client.publish(job(batch), BasicProperties::default()).await;
    let result = results.next().await;
    let entries = result.body["results"].as_array().unwrap();
    assert_eq!(entries.len(), 40);
    assert!(
        entries.iter().all(|e| e["status"] == "timeout"),
        "{}",
        result.body
    );
    let not_reached = entries
        .iter()
        .filter(|e| {
            e["error"]
                .as_str()
                .is_some_and(|error| error.contains("worker.max_job_ms"))
        })
        .count();
    assert!(not_reached >= 30, "{not_reached} of 40 puzzles not reached");
    // Each timeout in mode count says how many solutions it found first:
    // none for a puzzle not reached.
    for entry in entries {
        let reached = !entry["error"]
            .as_str()
            .is_some_and(|error| error.contains("worker.max_job_ms"));
        let count = entry["count"].as_u64();
        assert!(count.is_some_and(|count| (count > 0) == reached), "{entry}");
    }
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_stops_at_once_and_the_job_goes_back() {
    let mut settings = classic(settings("second_signal"));
    settings.solver.max_count_limit = 1_000_000_000;
    settings.worker.shutdown_grace_secs = 120;
    let client = Client::connect(&settings).await;
    let limit = ("SUDOKUD__SOLVER__MAX_COUNT_LIMIT", "1000000000");
    let mut worker = WorkerProcess::start(&settings, &[limit]);
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 1)
        .await;
    client
        .publish(job(endless("endless", 60_000)), BasicProperties::default())
        .await;
    client.wait_for_ready(&settings.amqp.jobs_queue, 0).await;
    worker.terminate();
    worker
        .wait_for_line(|line| line.contains("shutting down"))
        .await;
    worker.terminate();
    let status = worker.exit_status().await;
    assert_eq!(status.code(), Some(143), "{status:?}");
    // Unanswered and unacknowledged, the job is back for another worker.
    client.wait_for_ready(&settings.amqp.jobs_queue, 1).await;
    assert_eq!(client.ready(&settings.amqp.results_queue).await, 0);
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_traceparent_is_carried_onto_its_answer_and_its_log() {
    let settings = classic(settings("traceparent"));
    let client = Client::connect(&settings).await;
    let worker = WorkerProcess::start(
        &settings,
        &[
            ("SUDOKUD__LOG__LEVEL", "debug"),
            ("SUDOKUD__LOG__FORMAT", "json"),
        ],
    );
    let mut results = client.results().await;
    let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut headers = FieldTable::default();
    headers.insert("traceparent".into(), AMQPValue::LongString(trace.into()));
    client
        .publish(
            job(json!({"id": "traced", "puzzle": PUZZLE})),
            BasicProperties::default().with_headers(headers),
        )
        .await;
    client
        .publish(
            job(json!({"id": "plain", "puzzle": PUZZLE})),
            BasicProperties::default(),
        )
        .await;
    for result in results.take(2).await {
        let carried = result
            .properties
            .headers()
            .as_ref()
            .and_then(|h| h.inner().get("traceparent").cloned());
        match result.body["id"].as_str() {
            Some("traced") => {
                assert_eq!(carried, Some(AMQPValue::LongString(trace.into())));
            }
            _ => assert_eq!(carried, None),
        }
    }
    let line = worker
        .wait_for_line(|line| line.contains("\"answered\"") && line.contains("traced"))
        .await;
    assert!(
        line.contains("\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\""),
        "{line}"
    );
    drop(worker);
    client.cleanup().await;
}
