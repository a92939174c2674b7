//! `sudokud enqueue`, `submit` and `health` end to end: the real binary
//! against the real broker, with a real worker answering.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::common::*;
use sudokud::Settings;

/// Runs `sudokud ARGS` with `settings` in its environment, from a
/// directory without a config file, feeding it `stdin`.
async fn sudokud(settings: &Settings, args: &[&str], stdin: &str) -> Run {
    sudokud_env(settings, args, stdin, &[]).await
}

async fn sudokud_env(
    settings: &Settings,
    args: &[&str],
    stdin: &str,
    extra: &[(&str, &str)],
) -> Run {
    let mut command = command(Some(settings), extra);
    command.args(args);
    let input = stdin.to_string();
    tokio::task::spawn_blocking(move || run_to_end(command, &input))
        .await
        .expect("the run completes")
}

/// A file of its own, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(test: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("{}.txt", unique(test)));
        std::fs::write(&path, text).expect("temp file written");
        TempFile(path)
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `puzzles` as an input file, with a comment and a blank line first, so
/// line numbers and puzzle numbers differ; returns the text and a map from
/// line number to puzzle.
fn input_of(puzzles: &[String]) -> (String, HashMap<u64, String>) {
    let mut text = String::from("# puzzles\n\n");
    let mut by_line = HashMap::new();
    for (i, puzzle) in puzzles.iter().enumerate() {
        text.push_str(puzzle);
        text.push('\n');
        by_line.insert(i as u64 + 3, puzzle.clone());
    }
    (text, by_line)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_confirms_every_line_and_a_worker_answers_each() {
    let settings = settings("enqueue_lines");
    let client = Client::connect(&settings).await;
    let puzzles = puzzles(300);
    let (text, by_line) = input_of(&puzzles);
    let file = TempFile::new("enqueue_lines", &text);

    let run = sudokud(&settings, &["enqueue", file.arg()], "").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("enqueued 300 puzzles in 300 messages"),
        "{}",
        run.stderr
    );
    // Confirmed means queued: all of them wait there before any worker.
    client.wait_for_ready(&settings.amqp.jobs_queue, 300).await;

    let worker = WorkerProcess::start(&settings, &[]);
    let mut results = client.results().await;
    let answers = by_id(results.take(300).await);
    for (line, puzzle) in &by_line {
        let answer = &answers
            .get(&line.to_string())
            .unwrap_or_else(|| panic!("no answer for line {line}"))
            .body;
        assert_eq!(answer["status"], "solved", "{answer}");
        let solution = answer["solution"].as_str().unwrap_or_default();
        assert!(is_solution_of(solution, puzzle), "line {line}: {answer}");
    }
    worker.terminate();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_reads_standard_input_and_packs_batches() {
    let settings = settings("enqueue_batches");
    let client = Client::connect(&settings).await;
    let puzzles = puzzles(50);
    let (text, by_line) = input_of(&puzzles);

    let run = sudokud(
        &settings,
        &[
            "enqueue",
            "-",
            "--batch",
            "7",
            "--mode",
            "unique",
            "--id-prefix",
            "run1-",
        ],
        &text,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("enqueued 50 puzzles in 8 messages"),
        "{}",
        run.stderr
    );
    client.wait_for_ready(&settings.amqp.jobs_queue, 8).await;

    let worker = WorkerProcess::start(&settings, &[]);
    let mut results = client.results().await;
    let mut seen = 0;
    for result in results.take(8).await {
        let body = &result.body;
        // A batch's id is its first line's; its entries follow the lines.
        let first: u64 = body["id"]
            .as_str()
            .and_then(|id| id.strip_prefix("run1-"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected id: {body}"));
        let entries = body["results"].as_array().expect("a batch result");
        assert!(entries.len() == 7 || entries.len() == 1, "{body}");
        for (i, entry) in entries.iter().enumerate() {
            let puzzle = &by_line[&(first + i as u64)];
            assert_eq!(entry["unique"], true, "{entry}");
            let solution = entry["solution"].as_str().unwrap_or_default();
            assert!(is_solution_of(solution, puzzle), "{entry}");
            seen += 1;
        }
    }
    assert_eq!(seen, 50);
    worker.terminate();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_sends_nothing_and_every_bad_line_is_named() {
    let settings = settings("enqueue_bad");
    let client = Client::connect(&settings).await;
    let good = puzzles(3);
    let repeated = format!("55{}", &good[0][2..]);
    let text = format!(
        "{}\n{}\n{}\n{repeated}\n{{\"puzzle\": \"{}\", \"mode\": \"fast\"}}\nnot a puzzle\n",
        good[0],
        &good[1][..80],
        good[2],
        good[0],
    );
    let file = TempFile::new("enqueue_bad", &text);
    let run = sudokud(&settings, &["enqueue", file.arg()], "").await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    for expected in [
        "4 bad input lines, nothing sent",
        "line 2: puzzle has 80 cells, expected 81",
        "line 4: row 1 has 5 twice (columns 1 and 2)",
        "line 5: unknown mode \"fast\"",
        "line 6: invalid character 'n' at row 1, column 1",
    ] {
        assert!(
            run.stderr.contains(expected),
            "no {expected:?} in:\n{}",
            run.stderr
        );
    }
    assert_eq!(client.ready(&settings.amqp.jobs_queue).await, 0);
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_writes_every_answer_in_input_order() {
    let settings = settings("submit_ordered");
    let client = Client::connect(&settings).await;
    let mut puzzles = hard_puzzles(60);
    puzzles.insert(17, UNSOLVABLE.to_string());
    let (text, by_line) = input_of(&puzzles);
    let file = TempFile::new("submit_ordered", &text);
    let worker = WorkerProcess::start(&settings, &[]);

    let run = sudokud(
        &settings,
        &["submit", file.arg(), "--ordered", "--batch", "16"],
        "",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(lines.len(), 61, "{}", run.stdout);
    let ids: Vec<u64> = lines.iter().map(|l| l["id"].as_u64().unwrap()).collect();
    let mut expected: Vec<u64> = by_line.keys().copied().collect();
    expected.sort();
    assert_eq!(ids, expected, "answers out of input order");
    for line in &lines {
        let puzzle = &by_line[&line["id"].as_u64().unwrap()];
        if puzzle == UNSOLVABLE {
            assert_eq!(line["status"], "unsolvable", "{line}");
        } else {
            assert_eq!(line["status"], "solved", "{line}");
            assert!(
                is_solution_of(line["solution"].as_str().unwrap(), puzzle),
                "{line}"
            );
        }
        assert!(line["worker"].is_string(), "{line}");
    }
    assert!(
        run.stderr.contains("4 of 4 jobs answered (61 puzzles)")
            && run.stderr.contains("solved 60 unsolvable 1"),
        "{}",
        run.stderr
    );
    worker.terminate();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_fills_json_jobs_and_writes_their_answers_as_sent() {
    let settings = settings("submit_json");
    let client = Client::connect(&settings).await;
    let empty = ".".repeat(81);
    let text = format!(
        "{{\"id\": \"keep\", \"puzzle\": \"{PUZZLE}\", \"mode\": \"unique\"}}\n\
         {{\"puzzle\": \"{empty}\"}}\n\
         {PUZZLE}\n\
         {{\"id\": 123456789012345678901234567890, \"puzzles\": [\"{PUZZLE}\", \"{empty}\"]}}\n"
    );
    let worker = WorkerProcess::start(&settings, &[]);
    let run = sudokud(
        &settings,
        &["submit", "-", "--mode", "count", "--limit", "5"],
        &text,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Unordered: match by id. The big id comes back digit for digit.
    assert!(
        run.stdout
            .contains("{\"id\":123456789012345678901234567890,\"results\":["),
        "{}",
        run.stdout
    );
    let mut by_id = HashMap::new();
    for line in run.lines() {
        by_id.insert(line["id"].to_string(), line);
    }
    let keep = &by_id["\"keep\""];
    assert_eq!(keep["unique"], true, "{keep}");
    assert!(keep.get("count").is_none(), "mode unique was kept: {keep}");
    assert_eq!(keep["solution"], SOLUTION);
    let filled = &by_id["2"];
    assert_eq!(
        filled["count"], 5,
        "the options filled mode and limit: {filled}"
    );
    let plain = &by_id["3"];
    assert_eq!(plain["count"], 1, "{plain}");
    // (serde_json reads the 30-digit id as a float: find the batch by shape.)
    let batch = by_id
        .values()
        .find(|line| line["results"].is_array())
        .expect("the batch's answer");
    assert_eq!(batch["results"][0]["count"], 1, "{batch}");
    assert_eq!(batch["results"][1]["count"], 5, "{batch}");
    assert!(
        run.stderr.contains("4 of 4 jobs answered (5 puzzles)"),
        "{}",
        run.stderr
    );
    worker.terminate();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_asks_for_difficulty_and_canonical_form_per_puzzle() {
    let settings = settings("submit_analyses");
    let client = Client::connect(&settings).await;
    let puzzles = puzzles(5);
    let (text, by_line) = input_of(&puzzles);
    let worker = WorkerProcess::start(&settings, &[]);
    let run = sudokud(
        &settings,
        &[
            "submit",
            "-",
            "--ordered",
            "--batch",
            "2",
            "--rate",
            "--canonical",
        ],
        &text,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(lines.len(), 5, "{}", run.stdout);
    for line in &lines {
        let id = line["id"].as_u64().expect("numeric ids");
        let puzzle = &by_line[&id];
        let grid = sudokud::Grid::parse(puzzle).expect("a valid puzzle");
        let difficulty = sudokud::rate(&grid).expect("one solution");
        assert_eq!(line["status"], "solved", "{line}");
        assert_eq!(
            line["difficulty"]["technique"],
            difficulty.technique.name(),
            "{line}"
        );
        assert_eq!(line["difficulty"]["steps"], difficulty.steps, "{line}");
        assert_eq!(
            line["canonical"],
            sudokud::canonical(&grid).to_text_with_zeros(),
            "{line}"
        );
    }
    // Without the flags, neither field.
    let run = sudokud(&settings, &["submit", "-"], &text).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    for line in run.lines() {
        assert!(
            line.get("difficulty").is_none() && line.get("canonical").is_none(),
            "{line}"
        );
    }
    worker.terminate();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_splits_a_refused_batch_into_one_line_per_puzzle() {
    let settings = settings("submit_refused");
    let client = Client::connect(&settings).await;
    let puzzles = puzzles(6);
    let (text, _) = input_of(&puzzles);
    // The worker takes batches of 4 at most; this producer sends 6.
    let worker = WorkerProcess::start(&settings, &[("SUDOKUD__WORKER__MAX_BATCH", "4")]);
    let run = sudokud(
        &settings,
        &["submit", "-", "--batch", "6", "--ordered"],
        &text,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(lines.len(), 6, "{}", run.stdout);
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["id"], i as u64 + 3, "{line}");
        assert_eq!(line["status"], "invalid", "{line}");
        assert_eq!(line["error"], "batch has 6 puzzles, over the maximum of 4");
    }
    assert!(run.stderr.contains("invalid 6"), "{}", run.stderr);
    worker.terminate();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_without_a_worker_names_the_unanswered_lines() {
    let settings = settings("submit_unanswered");
    let client = Client::connect(&settings).await;
    let puzzles = puzzles(3);
    let (text, _) = input_of(&puzzles);
    let run = sudokud(&settings, &["submit", "-", "--wait-secs", "1"], &text).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("no answer within the wait for 3 of 3 jobs (3 puzzles), input lines 3, 4, 5"),
        "{}",
        run.stderr
    );
    // The jobs are still queued for a worker to come.
    client.wait_for_ready(&settings.amqp.jobs_queue, 3).await;
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks_the_broker_the_queue_and_its_consumers() {
    let settings = settings("health");
    // No queue yet: unhealthy, and nothing is declared by looking.
    let run = sudokud(&settings, &["health"], "").await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("unhealthy")
            && run.stderr.contains(&format!(
                "queue {} does not exist",
                settings.amqp.jobs_queue
            )),
        "{}",
        run.stderr
    );

    let client = Client::connect(&settings).await;
    let run = sudokud(&settings, &["health"], "").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("ok: amqp://guest:***@")
            && run.stdout.contains("0 ready, 0 consumers"),
        "{}",
        run.stdout
    );
    let run = sudokud(&settings, &["health", "--min-consumers", "1"], "").await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("has 0 consumers, fewer than the 1 required"),
        "{}",
        run.stderr
    );

    let worker = WorkerProcess::start(&settings, &[]);
    let run = sudokud(
        &settings,
        &["health", "--min-consumers", "1", "--wait-secs", "60"],
        "",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("1 consumers"), "{}", run.stdout);
    worker.terminate();
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_fails_on_an_unreachable_broker_or_a_wrong_password() {
    let mut settings = settings("health_down");
    // Nothing listens on port 1.
    settings.amqp.url = "amqp://guest:guest@127.0.0.1:1/%2f".into();
    let run = sudokud(&settings, &["health", "--timeout-secs", "5"], "").await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("cannot connect to amqp://guest:***@127.0.0.1:1/%2f"),
        "{}",
        run.stderr
    );
    settings.amqp.url = amqp_url().replace("guest:guest", "guest:wrong-password");
    let run = sudokud(&settings, &["health"], "").await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("cannot connect"), "{}", run.stderr);
    assert!(!run.stderr.contains("wrong-password"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_options_and_inputs_are_refused_before_connecting() {
    // A broker that does not exist: these must fail before trying it.
    let mut settings = settings("options");
    settings.amqp.url = "amqp://guest:guest@127.0.0.1:1/%2f".into();
    let puzzle = format!("{PUZZLE}\n");
    for (args, input, expected) in [
        (
            &["enqueue", "--batch", "0"][..],
            puzzle.as_str(),
            "--batch must be at least 1",
        ),
        (
            &["enqueue", "--batch", "10001"][..],
            puzzle.as_str(),
            "--batch 10001 is over the maximum batch of 10000 (worker.max_batch)",
        ),
        (
            &["submit", "--limit", "5"][..],
            puzzle.as_str(),
            "--limit caps a count of solutions: use it with --mode count",
        ),
        (
            &["enqueue"][..],
            "# only a comment\n\n",
            "input has no puzzles",
        ),
        (
            &["enqueue", "/nonexistent/puzzles.txt"][..],
            "",
            "cannot open /nonexistent/puzzles.txt",
        ),
        (
            &["enqueue", "--mode", "fastest"][..],
            puzzle.as_str(),
            "invalid value 'fastest'",
        ),
    ] {
        let run = sudokud(&settings, args, input).await;
        assert_ne!(run.code, 0, "{args:?}");
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
        assert!(
            !run.stderr.contains("cannot connect"),
            "{args:?}: {}",
            run.stderr
        );
    }
    let run = sudokud_env(
        &settings,
        &["enqueue"],
        &puzzle,
        &[("SUDOKUD__AMQP__QUEUE_TYPE", "stream")],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("queue_type"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_declares_the_workers_topology_or_uses_the_queue_there() {
    // No queue yet: enqueue declares it as a worker would, so a worker
    // (here the test client, declaring with the worker's own arguments)
    // can start on it afterwards without PRECONDITION_FAILED.
    let fresh = settings("enqueue_declares");
    let puzzle = format!("{PUZZLE}\n");
    let run = sudokud(&fresh, &["enqueue"], &puzzle).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let client = Client::connect(&fresh).await;
    client.wait_for_ready(&fresh.amqp.jobs_queue, 1).await;
    client.cleanup().await;

    // A classic queue already there, while the producer's settings say
    // quorum: used as it is, not redeclared.
    let existing = classic(settings("enqueue_existing"));
    let client = Client::connect(&existing).await;
    let mut quorum = existing.clone();
    quorum.amqp.queue_type = sudokud::config::QueueType::Quorum;
    let run = sudokud(&quorum, &["enqueue"], &puzzle).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    client.wait_for_ready(&existing.amqp.jobs_queue, 1).await;
    client.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_fails_when_the_broker_refuses_a_job_and_counts_what_it_took() {
    use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
    use lapin::types::{AMQPValue, FieldTable};
    // A jobs queue that holds one message and refuses the next ones
    // (nack), as a full queue with `reject-publish` overflow does.
    let settings = settings("enqueue_refused");
    let connection =
        lapin::Connection::connect(&settings.amqp.url, lapin::ConnectionProperties::default())
            .await
            .expect("the tests need RabbitMQ on localhost (see .ci/run)");
    let channel = connection.create_channel().await.unwrap();
    let mut args = FieldTable::default();
    args.insert("x-max-length".into(), AMQPValue::LongInt(1));
    args.insert(
        "x-overflow".into(),
        AMQPValue::LongString("reject-publish".into()),
    );
    channel
        .queue_declare(
            settings.amqp.jobs_queue.as_str().into(),
            QueueDeclareOptions::default(),
            args,
        )
        .await
        .unwrap();

    let input = format!("{PUZZLE}\n{PUZZLE}\n{PUZZLE}\n");
    let run = sudokud(&settings, &["enqueue"], &input).await;
    let deleted = channel
        .queue_delete(
            settings.amqp.jobs_queue.as_str().into(),
            QueueDeleteOptions::default(),
        )
        .await;
    let _ = connection.close(200, "OK".into()).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("1 of 3 messages (1 puzzles) were confirmed before this error")
            && run.stderr.contains("the broker refused a job (nack)"),
        "{}",
        run.stderr
    );
    assert_eq!(
        deleted.expect("the queue is deleted"),
        1,
        "one job was queued"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_sends_a_generation_job_and_writes_its_result() {
    let settings = settings("submit_generate");
    let client = Client::connect(&settings).await;
    let text = "{\"id\": \"gen\", \"generate\": {\"count\": 5, \"seed\": 9, \"symmetry\": \"quarter\"}}\n\
                {\"generate\": {\"count\": 2, \"symmetry\": \"sideways\"}}\n";
    let worker = WorkerProcess::start(&settings, &[]);
    // A bad generation job is refused before anything is sent.
    let refused = sudokud(&settings, &["submit", "-"], text).await;
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("line 2")
            && refused.stderr.contains("generate.symmetry \"sideways\""),
        "{}",
        refused.stderr
    );
    let good = text.lines().next().unwrap();
    let run = sudokud(&settings, &["submit", "-"], good).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    let result = &lines[0];
    assert_eq!(result["id"], "gen");
    assert_eq!(result["status"], "generated", "{result}");
    assert_eq!(result["seed"], 9);
    let entries = result["results"].as_array().unwrap();
    assert_eq!(entries.len(), 5);
    // The same puzzles `sudokud generate` makes offline.
    let offline = sudokud(
        &settings,
        &[
            "generate",
            "--count",
            "5",
            "--seed",
            "9",
            "--symmetry",
            "quarter",
        ],
        "",
    )
    .await;
    let expected: Vec<&str> = offline.stdout.lines().collect();
    let made: Vec<&str> = entries
        .iter()
        .map(|e| e["puzzle"].as_str().unwrap())
        .collect();
    assert_eq!(made, expected);
    assert!(
        run.stderr.contains("1 of 1 jobs answered"),
        "{}",
        run.stderr
    );
    worker.terminate();
    client.cleanup().await;
}
