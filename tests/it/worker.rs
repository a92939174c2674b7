//! The worker against a real RabbitMQ: every puzzle format, every kind of
//! bad job, ids, reply_to and its fallback, batches, modes, timeouts, and
//! shutdown with jobs in flight. Each test has its own queues.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::*;
use lapin::BasicProperties;
use lapin::options::{BasicNackOptions, BasicRejectOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use serde_json::{Value, json};
use tokio_stream::StreamExt;

fn job(body: Value) -> Vec<u8> {
    serde_json::to_vec(&body).unwrap()
}

/// The solver core's reason for rejecting a puzzle, which the worker must
/// pass on unchanged.
fn grid_error(puzzle: Value) -> String {
    sudokud::Grid::from_json(&puzzle).unwrap_err().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solves_every_puzzle_format() {
    let settings = settings("formats");
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;

    let rows: Vec<&str> = (0..9).map(|r| &PUZZLE[r * 9..r * 9 + 9]).collect();
    let pretty = rows
        .iter()
        .enumerate()
        .map(|(r, row)| {
            let line = format!(" {} | {} | {}\n", &row[..3], &row[3..6], &row[6..]);
            if r % 3 == 2 && r < 8 {
                format!("{line}-----+-----+-----\n")
            } else {
                line
            }
        })
        .collect::<String>();
    let zeros = PUZZLE.replace('.', "0");
    let strings: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.chars().map(|c| c.to_string()).collect())
        .collect();
    let numbers: Vec<Vec<u32>> = rows
        .iter()
        .map(|row| row.chars().map(|c| c.to_digit(10).unwrap_or(0)).collect())
        .collect();
    let formats = [
        ("string", json!(PUZZLE)),
        ("pretty", json!(pretty)),
        ("zeros", json!(zeros)),
        ("leetcode", json!(strings)),
        ("numbers", json!(numbers)),
    ];
    for (name, puzzle) in &formats {
        client
            .publish(
                job(json!({"id": name, "puzzle": puzzle})),
                BasicProperties::default(),
            )
            .await;
    }
    let answered = by_id(results.take(formats.len()).await);
    for (name, _) in &formats {
        let result = &answered[&format!("\"{name}\"")];
        assert_eq!(result.body["status"], "solved", "{name}: {}", result.body);
        assert_eq!(result.body["solution"], SOLUTION, "{name}");
        assert!(result.body["guesses"].is_u64(), "{name}");
        assert!(result.body["elapsed_us"].is_u64(), "{name}");
        let worker_id = result.body["worker"].as_str().unwrap();
        assert!(
            worker_id.ends_with(&format!("/{}", std::process::id())),
            "{worker_id}"
        );
        assert!(
            result.body.get("unique").is_none(),
            "mode first has no unique"
        );
        let properties = &result.properties;
        assert_eq!(
            properties.delivery_mode(),
            &Some(2),
            "results are persistent"
        );
        assert_eq!(
            properties.content_type().as_ref().map(|c| c.as_str()),
            Some("application/json")
        );
        assert_eq!(result.correlation_id(), None, "the job had neither id");
    }
    worker.stop().await.unwrap();
    client.cleanup().await;
}

/// Jobs that cannot be answered puzzle by puzzle, with the worker's
/// settings of `answers_every_bad_job_with_its_reason_and_keeps_going`
/// (`max_message_bytes` 4096, `max_batch` 3): (message_id, body, the exact
/// reason of the `invalid` answer).
fn bad_jobs() -> Vec<(&'static str, Vec<u8>, String)> {
    let mut jobs = bad_messages();
    jobs.extend(bad_puzzles());
    jobs.extend(bad_options());
    jobs
}

/// Messages that are not a job: not UTF-8, not a JSON object, too large,
/// with no puzzle or more than one kind, or with an id the protocol does
/// not allow (answered with `"id": null`).
fn bad_messages() -> Vec<(&'static str, Vec<u8>, String)> {
    let big = format!(
        r#"{{"id":"big","puzzle":"{PUZZLE}","pad":"{}"}}"#,
        "x".repeat(5000)
    );
    vec![
        (
            "not-utf8",
            vec![b'{', 0xff, 0xfe, b'}'],
            "message is not UTF-8: invalid utf-8 sequence of 1 bytes from index 1".into(),
        ),
        (
            "not-json",
            b"solve this please".to_vec(),
            "message is not JSON: expected value at line 1 column 1".into(),
        ),
        (
            "not-object",
            job(json!([PUZZLE])),
            "message is an array, expected a JSON object".into(),
        ),
        (
            "no-puzzle",
            job(json!({"id": "no-puzzle", "mode": "first"})),
            "job has no \"puzzle\", \"puzzles\" or \"generate\"".into(),
        ),
        (
            "both",
            job(json!({"id": "both", "puzzle": PUZZLE, "puzzles": [PUZZLE]})),
            "job has more than one of \"puzzle\", \"puzzles\" and \"generate\": send exactly one"
                .into(),
        ),
        (
            "too-large",
            big.clone().into_bytes(),
            format!(
                "message is {} bytes, over the limit of 4096 bytes",
                big.len()
            ),
        ),
        // Ids the protocol does not allow: answered with "id": null.
        (
            "id-object",
            job(json!({"id": {"nested": [1, 2]}, "puzzle": PUZZLE})),
            "id is an object, expected a string of at most 256 bytes or a number".into(),
        ),
        (
            "id-boolean",
            job(json!({"id": true, "puzzle": PUZZLE})),
            "id is a boolean, expected a string of at most 256 bytes or a number".into(),
        ),
        (
            "id-long",
            job(json!({"id": "i".repeat(257), "puzzle": PUZZLE})),
            "id is a string of 257 bytes, expected a string of at most 256 bytes or a number"
                .into(),
        ),
    ]
}

/// Jobs whose puzzle cannot be read.
fn bad_puzzles() -> Vec<(&'static str, Vec<u8>, String)> {
    let short = &PUZZLE[..80];
    let repeated = format!("55{}", &PUZZLE[2..]);
    let bad_char = format!("x{}", &PUZZLE[1..]);
    let flat: Vec<u32> = PUZZLE
        .chars()
        .map(|c| c.to_digit(10).unwrap_or(0))
        .collect();
    let nine_by_eight = vec![vec![0u32; 8]; 9];
    let mut ten = vec![vec![0u32; 9]; 9];
    ten[4][2] = 10;
    vec![
        (
            "wrong-size",
            job(json!({"id": "wrong-size", "puzzle": short})),
            "puzzle has 80 cells, expected 81".into(),
        ),
        (
            "bad-character",
            job(json!({"id": "bad-character", "puzzle": bad_char})),
            "invalid character 'x' at row 1, column 1".into(),
        ),
        (
            "repeated",
            job(json!({"id": "repeated", "puzzle": repeated})),
            "row 1 has 5 twice (columns 1 and 2)".into(),
        ),
        (
            "flat-array",
            job(json!({"id": "flat-array", "puzzle": flat})),
            "row 1 is a number, expected an array of 9 cells".into(),
        ),
        (
            "nine-by-eight",
            job(json!({"id": "nine-by-eight", "puzzle": nine_by_eight})),
            grid_error(json!(nine_by_eight)),
        ),
        (
            "ten",
            job(json!({"id": "ten", "puzzle": ten})),
            grid_error(json!(ten)),
        ),
    ]
}

/// Jobs whose mode, limit, deadline or batch is out of bounds.
fn bad_options() -> Vec<(&'static str, Vec<u8>, String)> {
    vec![
        (
            "mode",
            job(json!({"id": "mode", "puzzle": PUZZLE, "mode": "fastest"})),
            "unknown mode \"fastest\": expected \"first\", \"unique\" or \"count\"".into(),
        ),
        (
            "limit-zero",
            job(json!({"id": "limit-zero", "puzzle": PUZZLE, "mode": "count", "limit": 0})),
            "limit must be an integer from 1 to 1000, got 0".into(),
        ),
        (
            "limit-over",
            job(json!({"id": "limit-over", "puzzle": PUZZLE, "mode": "count", "limit": 1001})),
            "limit must be an integer from 1 to 1000, got 1001".into(),
        ),
        (
            "timeout-zero",
            job(json!({"id": "timeout-zero", "puzzle": PUZZLE, "timeout_ms": 0})),
            "timeout_ms must be a positive integer (milliseconds), got 0".into(),
        ),
        (
            "timeout-text",
            job(json!({"id": "timeout-text", "puzzle": PUZZLE, "timeout_ms": "5"})),
            "timeout_ms must be a positive integer (milliseconds), got \"5\"".into(),
        ),
        (
            "empty-batch",
            job(json!({"id": "empty-batch", "puzzles": []})),
            "puzzles is empty: a batch holds 1 to 3 puzzles".into(),
        ),
        (
            "oversized-batch",
            job(json!({"id": "oversized-batch", "puzzles": [PUZZLE, PUZZLE, PUZZLE, PUZZLE]})),
            "batch has 4 puzzles, over the maximum of 3".into(),
        ),
        (
            "batch-not-array",
            job(json!({"id": "batch-not-array", "puzzles": PUZZLE})),
            "puzzles is a string, expected an array of puzzles".into(),
        ),
        (
            "long-mode",
            job(json!({"id": "long-mode", "puzzle": PUZZLE, "mode": "y".repeat(3000)})),
            format!(
                "unknown mode \"{}... (3002 bytes): expected \"first\", \"unique\" or \"count\"",
                "y".repeat(39)
            ),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_every_bad_job_with_its_reason_and_keeps_going() {
    let mut settings = settings("bad_jobs");
    settings.worker.max_message_bytes = 4096;
    settings.worker.max_batch = 3;
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;

    let cases = bad_jobs();
    for (message_id, body, _) in &cases {
        client.publish(body, with_message_id(message_id)).await;
    }
    // The worker goes on: a good job after all the bad ones.
    client
        .publish(
            job(json!({"id": "after", "puzzle": PUZZLE})),
            BasicProperties::default(),
        )
        .await;
    let mut answered: HashMap<String, Received> = results
        .take(cases.len() + 1)
        .await
        .into_iter()
        .map(|result| {
            let key = result
                .correlation_id()
                .unwrap_or_else(|| result.body["id"].to_string());
            (key, result)
        })
        .collect();
    for (message_id, _, reason) in &cases {
        let result = &answered[*message_id];
        let id = if message_id.starts_with("id-") {
            Value::Null
        } else {
            Value::from(*message_id)
        };
        assert_eq!(result.body["id"], id, "{message_id}");
        assert_eq!(
            result.body["status"], "invalid",
            "{message_id}: {}",
            result.body
        );
        assert_eq!(result.body["error"], reason.as_str(), "{message_id}");
        assert!(result.body.get("solution").is_none(), "{message_id}");
        assert!(result.body["worker"].is_string(), "{message_id}");
        assert_eq!(result.correlation_id().as_deref(), Some(*message_id));
    }
    let after = answered
        .remove("\"after\"")
        .expect("the good job was answered");
    assert_eq!(after.body["solution"], SOLUTION);
    client.wait_for_ready(&settings.amqp.jobs_queue, 0).await;
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoes_ids_exactly() {
    let settings = classic(settings("ids"));
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    let ids = [
        "123456789012345678901234567890",
        "-1.50e3",
        "\"\\u00e9t\\u00e9 \\\"quoted\\\"\"",
        "0",
    ];
    for id in ids {
        client
            .publish(
                format!(r#"{{"id": {id}, "puzzle": "{PUZZLE}"}}"#),
                BasicProperties::default(),
            )
            .await;
    }
    for result in results.take(ids.len()).await {
        let text = String::from_utf8(result.raw.clone()).unwrap();
        assert!(
            ids.iter()
                .any(|id| text.starts_with(&format!("{{\"id\":{id},"))),
            "id not echoed byte for byte: {text}"
        );
        assert_eq!(result.body["status"], "solved");
    }
    // No id: the message_id, else null.
    client
        .publish(
            format!(r#"{{"puzzle": "{PUZZLE}"}}"#),
            with_message_id("m-7"),
        )
        .await;
    let result = results.next().await;
    assert_eq!(result.body["id"], "m-7");
    client
        .publish(
            format!(r#"{{"id": null, "puzzle": "{PUZZLE}"}}"#),
            BasicProperties::default(),
        )
        .await;
    let result = results.next().await;
    assert_eq!(result.body["id"], Value::Null);
    assert_eq!(result.body["status"], "solved");
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_to_reply_to_with_the_correlation_id() {
    let settings = classic(settings("reply_to"));
    let mut client = Client::connect(&settings).await;
    let reply_queue = format!("{}.replies", settings.amqp.jobs_queue);
    client.declare_queue(&reply_queue).await;
    let worker = TestWorker::start(&settings);
    let mut replies = client.reader(&reply_queue).await;
    let mut results = client.results().await;

    let rpc = BasicProperties::default().with_reply_to(reply_queue.as_str().into());
    client
        .publish(
            job(json!({"id": 1, "puzzle": PUZZLE})),
            rpc.clone()
                .with_correlation_id("corr-1".into())
                .with_message_id("msg-1".into()),
        )
        .await;
    client
        .publish(
            job(json!({"id": 2, "puzzle": PUZZLE})),
            rpc.clone().with_message_id("msg-2".into()),
        )
        .await;
    client
        .publish(job(json!({"id": 3, "puzzle": PUZZLE})), rpc.clone())
        .await;
    let answered = by_id(replies.take(3).await);
    assert_eq!(answered["1"].correlation_id().as_deref(), Some("corr-1"));
    assert_eq!(answered["2"].correlation_id().as_deref(), Some("msg-2"));
    assert_eq!(answered["3"].correlation_id(), None);
    for result in answered.values() {
        assert_eq!(result.body["solution"], SOLUTION);
    }
    // Nothing went to the results queue; a plain job still does.
    client
        .publish(
            job(json!({"id": 4, "puzzle": PUZZLE})),
            BasicProperties::default(),
        )
        .await;
    assert_eq!(results.next().await.body["id"], 4);
    assert!(replies.try_next(Duration::from_millis(200)).await.is_none());
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_for_a_missing_reply_to_queue_go_to_the_results_queue() {
    let settings = settings("fallback");
    let mut client = Client::connect(&settings).await;
    let reply_queue = format!("{}.replies", settings.amqp.jobs_queue);
    let missing = format!("{}.nobody-home", settings.amqp.jobs_queue);
    client.declare_queue(&reply_queue).await;
    let worker = TestWorker::start(&settings);
    let mut replies = client.reader(&reply_queue).await;
    let mut results = client.results().await;

    // Interleaved, so returned results and routed ones share confirms.
    let n = 300;
    client
        .publish_all((0..n).map(|i| {
            let queue = if i % 3 == 0 { &missing } else { &reply_queue };
            (
                job(json!({"id": i, "puzzle": PUZZLE})),
                BasicProperties::default()
                    .with_reply_to(ShortString::from(queue.as_str()))
                    .with_correlation_id(ShortString::from(format!("c{i}"))),
            )
        }))
        .await;
    let fallen_back = by_id(results.take(n / 3).await);
    let replied = by_id(replies.take(n - n / 3).await);
    for i in 0..n {
        let (result, place) = if i % 3 == 0 {
            (fallen_back.get(&i.to_string()), "results queue")
        } else {
            (replied.get(&i.to_string()), "reply_to queue")
        };
        let result = result.unwrap_or_else(|| panic!("job {i} not answered in its {place}"));
        assert_eq!(result.body["solution"], SOLUTION);
        assert_eq!(result.correlation_id(), Some(format!("c{i}")));
    }
    assert!(results.try_next(Duration::from_millis(200)).await.is_none());
    assert!(replies.try_next(Duration::from_millis(200)).await.is_none());
    client.wait_for_ready(&settings.amqp.jobs_queue, 0).await;
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_answer_each_puzzle_in_order() {
    let settings = classic(settings("batches"));
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;

    let numbers: Vec<Vec<u32>> = (0..9)
        .map(|r| {
            PUZZLE[r * 9..r * 9 + 9]
                .chars()
                .map(|c| c.to_digit(10).unwrap_or(0))
                .collect()
        })
        .collect();
    let batch = json!({
        "id": "mixed",
        "puzzles": [PUZZLE, &PUZZLE[..80], numbers, [1, 2, 3], format!("55{}", &PUZZLE[2..]), PUZZLE],
        "mode": "unique",
    });
    client.publish(job(batch), BasicProperties::default()).await;
    let result = results.next().await;
    assert_eq!(result.body["id"], "mixed");
    assert!(result.body.get("status").is_none(), "{}", result.body);
    let entries = result.body["results"].as_array().unwrap();
    assert_eq!(entries.len(), 6);
    for i in [0, 2, 5] {
        assert_eq!(entries[i]["status"], "solved", "{i}");
        assert_eq!(entries[i]["solution"], SOLUTION, "{i}");
        assert_eq!(entries[i]["unique"], true, "{i}");
        assert!(entries[i].get("id").is_none() && entries[i].get("worker").is_none());
    }
    assert_eq!(entries[1]["error"], "puzzle has 80 cells, expected 81");
    assert_eq!(
        entries[3]["error"],
        "row 1 is a number, expected an array of 9 cells"
    );
    assert_eq!(entries[4]["error"], "row 1 has 5 twice (columns 1 and 2)");
    for i in [1, 3, 4] {
        assert_eq!(entries[i]["status"], "invalid", "{i}");
    }
    assert!(result.body["worker"].is_string());

    // A large batch is spread over the pool and comes back in order.
    let puzzles = puzzles(1000);
    client
        .publish(
            job(json!({"id": "big", "puzzles": puzzles})),
            BasicProperties::default(),
        )
        .await;
    let result = results.next().await;
    let entries = result.body["results"].as_array().unwrap();
    assert_eq!(entries.len(), puzzles.len());
    for (entry, puzzle) in entries.iter().zip(&puzzles) {
        assert_eq!(entry["status"], "solved");
        assert!(is_solution_of(entry["solution"].as_str().unwrap(), puzzle));
    }
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_unique_and_count() {
    let settings = classic(settings("modes"));
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;

    let several = &several_solutions(0);
    let empty = ".".repeat(81);
    let jobs = [
        json!({"id": "unique-yes", "puzzle": PUZZLE, "mode": "unique"}),
        json!({"id": "unique-no", "puzzle": several, "mode": "unique"}),
        json!({"id": "count-one", "puzzle": PUZZLE, "mode": "count"}),
        json!({"id": "count-capped", "puzzle": empty, "mode": "count", "limit": 5}),
        json!({"id": "count-default", "puzzle": empty, "mode": "count"}),
        json!({"id": "count-none", "puzzle": UNSOLVABLE, "mode": "count"}),
        json!({"id": "first-none", "puzzle": UNSOLVABLE}),
    ];
    for body in &jobs {
        client
            .publish(job(body.clone()), BasicProperties::default())
            .await;
    }
    let answered = by_id(results.take(jobs.len()).await);
    let get = |id: &str| &answered[&format!("\"{id}\"")].body;
    assert_eq!(get("unique-yes")["unique"], true);
    assert_eq!(get("unique-yes")["solution"], SOLUTION);
    assert_eq!(get("unique-no")["status"], "solved");
    assert_eq!(get("unique-no")["unique"], false);
    assert!(is_solution_of(
        get("unique-no")["solution"].as_str().unwrap(),
        several
    ));
    assert_eq!(get("count-one")["count"], 1);
    assert_eq!(get("count-one")["unique"], true);
    assert_eq!(get("count-capped")["count"], 5);
    assert_eq!(get("count-capped")["unique"], false);
    assert_eq!(get("count-default")["count"], 1000);
    assert_eq!(get("count-none")["status"], "unsolvable");
    assert_eq!(get("count-none")["count"], 0);
    assert_eq!(get("first-none")["status"], "unsolvable");
    assert!(get("first-none").get("count").is_none());
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_past_its_deadline_answers_timeout() {
    let mut settings = classic(settings("timeout"));
    settings.solver.max_count_limit = 1_000_000_000;
    settings.solver.max_timeout_ms = 200;
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    let empty = ".".repeat(81);
    let jobs = [
        json!({"id": "asked", "puzzle": empty, "mode": "count", "limit": 1_000_000_000, "timeout_ms": 50}),
        // Asks for longer than the cap: the cap applies.
        json!({"id": "capped", "puzzle": empty, "mode": "count", "limit": 1_000_000_000, "timeout_ms": 3_600_000}),
    ];
    for body in &jobs {
        client
            .publish(job(body.clone()), BasicProperties::default())
            .await;
    }
    client
        .publish(
            job(json!({"id": "easy", "puzzle": PUZZLE})),
            BasicProperties::default(),
        )
        .await;
    let answered = by_id(results.take(3).await);
    let asked = &answered["\"asked\""].body;
    assert_eq!(asked["status"], "timeout", "{asked}");
    assert!(
        asked["error"]
            .as_str()
            .unwrap()
            .starts_with("no answer within the deadline of 50 ms"),
        "{asked}"
    );
    // The solutions found before the deadline: a lower bound, and the
    // empty grid's come at once.
    assert!(
        asked["count"].as_u64().is_some_and(|count| count >= 1),
        "{asked}"
    );
    assert!(asked.get("solution").is_none() && asked.get("unique").is_none());
    assert!(asked["guesses"].as_u64().unwrap() > 0);
    let capped = &answered["\"capped\""].body;
    assert_eq!(capped["status"], "timeout");
    assert!(
        capped["error"]
            .as_str()
            .unwrap()
            .starts_with("no answer within the deadline of 200 ms"),
        "{capped}"
    );
    assert_eq!(answered["\"easy\""].body["solution"], SOLUTION);
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_every_job_of_a_stream_exactly_once() {
    let settings = settings("stream");
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    let puzzles = puzzles(2000);
    client
        .publish_all(puzzles.iter().enumerate().map(|(i, p)| {
            (
                job(json!({"id": i, "puzzle": p})),
                BasicProperties::default(),
            )
        }))
        .await;
    let answered = by_id(results.take(puzzles.len()).await);
    for (i, puzzle) in puzzles.iter().enumerate() {
        let result = &answered[&i.to_string()];
        assert!(is_solution_of(
            result.body["solution"].as_str().unwrap(),
            puzzle
        ));
    }
    assert!(results.try_next(Duration::from_millis(200)).await.is_none());
    worker.stop().await.unwrap();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_the_jobs_in_flight_and_leaves_the_rest_queued() {
    let mut settings = settings("shutdown");
    settings.worker.prefetch = 50;
    let client = Client::connect(&settings).await;
    let mut results = client.results().await;
    let n = 10_000;
    let puzzles = puzzles(n);
    // The queue is full before the worker starts, so it is still deep when
    // the worker is told to stop (a worker consuming while the jobs are
    // published could drain them as fast as they arrive).
    client
        .publish_all(puzzles.iter().enumerate().map(|(i, p)| {
            (
                job(json!({"id": i, "puzzle": p})),
                BasicProperties::default(),
            )
        }))
        .await;
    let worker = TestWorker::start(&settings);
    // Stop while the worker is busy.
    let answered = results.take_ids(100).await;
    worker.stop().await.unwrap();
    // The worker left jobs in the queue, and none is lost: another worker
    // answers every one the first did not.
    client
        .nothing_lost_after_stop(&mut results, answered, &puzzles)
        .await;
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_unfinished_at_the_end_of_the_grace_period_stay_queued() {
    let mut settings = classic(settings("grace"));
    settings.worker.threads = 1;
    settings.worker.shutdown_grace_secs = 0;
    settings.solver.max_count_limit = 1_000_000_000;
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let empty = ".".repeat(81);
    client
        .publish(
            job(json!({"id": "long", "puzzle": empty, "mode": "count", "limit": 1_000_000_000, "timeout_ms": 60_000})),
            BasicProperties::default(),
        )
        .await;
    // Wait until the worker holds the job, then stop it with no grace.
    client.wait_for_ready(&settings.amqp.jobs_queue, 0).await;
    worker.stop().await.unwrap();
    eventually(
        async || match client.ready(&settings.amqp.jobs_queue).await {
            1 => Ok(()),
            _ => Err("the unfinished job was not requeued".to_string()),
        },
    )
    .await;
    let mut results = client.results().await;
    assert!(results.try_next(Duration::from_millis(200)).await.is_none());
    client.cleanup().await;
}

/// The protocol's jobs queue arguments, written out here rather than taken
/// from the worker, so a drift in either shows.
fn protocol_arguments(settings: &sudokud::Settings, delivery_limit: i32) -> FieldTable {
    let mut args = FieldTable::default();
    args.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    args.insert(
        "x-dead-letter-exchange".into(),
        AMQPValue::LongString("".into()),
    );
    args.insert(
        "x-dead-letter-routing-key".into(),
        AMQPValue::LongString(settings.amqp.dead_letter_queue.as_str().into()),
    );
    args.insert(
        "x-delivery-limit".into(),
        AMQPValue::LongInt(delivery_limit),
    );
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declares_the_topology_of_the_protocol() {
    let mut settings = settings("topology");
    settings.amqp.delivery_limit = 2;
    // The worker declares the queues; the client here does not.
    let worker = TestWorker::start(&settings);
    let client = Client::connect(&settings).await;
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 1)
        .await;
    worker.stop().await.unwrap();

    let declare = |args: FieldTable| {
        let connection = &client.connection;
        let queue = settings.amqp.jobs_queue.clone();
        async move {
            let channel = connection.create_channel().await.unwrap();
            let declared = channel
                .queue_declare(queue.as_str().into(), QueueDeclareOptions::durable(), args)
                .await;
            let _ = channel.close(200, "OK".into()).await;
            declared.map(|_| ())
        }
    };
    // A producer declaring the queue with the protocol's arguments agrees
    // with the worker; other arguments are refused.
    declare(protocol_arguments(&settings, 2)).await.unwrap();
    let refused = declare(protocol_arguments(&settings, 3)).await.unwrap_err();
    assert!(
        refused.to_string().contains("PRECONDITION_FAILED"),
        "{refused}"
    );

    // Rejected jobs are dead-lettered to the dead-letter queue, and a job
    // delivered more than delivery_limit times is too.
    let (channel, mut consumer) = client.consumer(&settings.amqp.jobs_queue, None).await;
    client.publish("rejected", BasicProperties::default()).await;
    let delivery = consumer.next().await.unwrap().unwrap();
    delivery
        .reject(BasicRejectOptions { requeue: false })
        .await
        .unwrap();
    client.publish("poison", BasicProperties::default()).await;
    for _ in 0..3 {
        let delivery = tokio::time::timeout(PATIENCE, consumer.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(delivery.data, b"poison");
        delivery
            .nack(BasicNackOptions {
                multiple: false,
                requeue: true,
            })
            .await
            .unwrap();
    }
    let mut dead = client.reader(&settings.amqp.dead_letter_queue).await;
    let mut bodies = vec![dead.next_raw().await, dead.next_raw().await];
    bodies.sort();
    assert_eq!(bodies, vec![b"poison".to_vec(), b"rejected".to_vec()]);
    let _ = channel.close(200, "OK".into()).await;
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_cancelled_by_the_broker_is_consumed_again() {
    let settings = classic(settings("cancelled"));
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    client
        .wait_for_consumers(&settings.amqp.jobs_queue, 1)
        .await;
    // Deleting the jobs queue cancels every consumer on it. The worker
    // treats that like a lost connection: it connects again, declares its
    // topology (the jobs queue with it) and consumes again.
    client
        .channel
        .queue_delete(
            settings.amqp.jobs_queue.as_str().into(),
            lapin::options::QueueDeleteOptions::default(),
        )
        .await
        .unwrap();
    // Until the worker declares it again, the queue does not exist.
    let start = std::time::Instant::now();
    loop {
        let channel = client.connection.create_channel().await.unwrap();
        let declared = channel
            .queue_declare(
                settings.amqp.jobs_queue.as_str().into(),
                lapin::options::QueueDeclareOptions {
                    passive: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await;
        if declared.is_ok_and(|queue| queue.consumer_count() == 1) {
            break;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the worker never consumed again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client
        .publish(
            job(json!({"id": "after", "puzzle": PUZZLE})),
            BasicProperties::default(),
        )
        .await;
    let result = results.next().await;
    assert_eq!(result.body["id"], "after");
    assert_eq!(result.body["solution"], SOLUTION);
    worker.stop().await.unwrap();
    client.cleanup().await;
}
