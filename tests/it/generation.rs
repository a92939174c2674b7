//! Generation jobs through the worker and a real RabbitMQ, and `sudokud
//! generate` end to end: the same seed gives the same puzzles, byte for
//! byte, on one thread or two, offline or through the worker; every
//! puzzle has one solution and keeps its symmetry; bad parameters are
//! answered `invalid` naming the field; a job out of time answers
//! `timeout` with what it made.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use lapin::BasicProperties;
use serde_json::{Value, json};
use sudokud::solver::{Generator, Spec, Symmetry};
use sudokud::{Grid, Mode, Status, solve};

fn job(body: Value) -> Vec<u8> {
    serde_json::to_vec(&body).unwrap()
}

/// The cells of `puzzle` that hold a given, as a set.
fn given_cells(puzzle: &str) -> u128 {
    puzzle
        .bytes()
        .enumerate()
        .filter(|(_, b)| b.is_ascii_digit() && *b != b'0')
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// Checks one result entry as PROTOCOL.md describes it.
fn check_entry(entry: &Value, symmetry: Symmetry) {
    let puzzle = entry["puzzle"].as_str().expect("puzzle");
    assert_eq!(puzzle.len(), 81, "{entry}");
    let grid = Grid::parse(puzzle).expect("a valid puzzle");
    let outcome = solve(&grid, Mode::Unique, None);
    assert_eq!(outcome.status, Status::Solved, "{entry}");
    assert_eq!(outcome.unique, Some(true), "not unique: {entry}");
    assert_eq!(
        outcome.solution.unwrap().to_text(),
        entry["solution"].as_str().unwrap()
    );
    assert_eq!(entry["givens"], grid.givens(), "{entry}");
    assert!(symmetry.holds(given_cells(puzzle)), "{entry}");
}

/// The result without what differs from run to run.
fn stripped(mut body: Value) -> Value {
    if let Value::Object(map) = &mut body {
        map.remove("elapsed_us");
        map.remove("worker");
    }
    body
}

async fn generate_on(threads: usize, jobs: &[Value]) -> Vec<Value> {
    let mut settings = classic(settings("generate"));
    settings.worker.threads = threads;
    let client = Client::connect(&settings).await;
    let worker = TestWorker::start(&settings);
    let mut results = client.results().await;
    for body in jobs {
        client
            .publish(job(body.clone()), BasicProperties::default())
            .await;
    }
    let answered = by_id(results.take(jobs.len()).await);
    worker.stop().await.unwrap();
    client.cleanup().await;
    jobs.iter()
        .map(|body| answered[&body["id"].to_string()].body.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_makes_the_same_puzzles_on_any_thread_count() {
    let jobs = [
        json!({"id": "central", "generate": {"count": 12, "seed": 42, "symmetry": "central"}, "canonical": true}),
        json!({"id": "rated", "generate": {"count": 4, "seed": 7, "difficulty": {"min": 1.0, "max": 4.5}}}),
        json!({"id": "picked", "generate": {"count": 2}}),
    ];
    let one = generate_on(1, &jobs).await;
    let two = generate_on(2, &jobs).await;

    let central = &two[0];
    assert_eq!(central["status"], "generated", "{central}");
    assert_eq!(central["seed"], 42);
    let entries = central["results"].as_array().unwrap();
    assert_eq!(entries.len(), 12);
    for (i, entry) in entries.iter().enumerate() {
        assert_eq!(entry["index"], i);
        check_entry(entry, Symmetry::Central);
        let canonical =
            sudokud::canonical(&Grid::parse(entry["puzzle"].as_str().unwrap()).unwrap());
        assert_eq!(entry["canonical"], canonical.to_text_with_zeros());
    }
    assert!(central["tried"].as_u64().unwrap() >= 12);
    // The library makes the same puzzles, one by one.
    let generator = Generator::new(Spec {
        seed: 42,
        symmetry: Symmetry::Central,
        ..Spec::default()
    })
    .unwrap();
    for (i, entry) in entries.iter().enumerate() {
        let made = generator.puzzle(i as u64, || false).unwrap();
        assert_eq!(entry["puzzle"], made.puzzle.to_text());
    }

    // Rated: every puzzle in the band, and its difficulty reported.
    let rated = &two[1];
    assert_eq!(rated["status"], "generated", "{rated}");
    for entry in rated["results"].as_array().unwrap() {
        check_entry(entry, Symmetry::None);
        let score = entry["difficulty"]["score"].as_f64().unwrap();
        assert!((1.0..=4.5).contains(&score), "{entry}");
    }

    // No seed: the worker picks one in range and says which.
    let picked = &two[2];
    let seed = picked["seed"].as_u64().expect("a seed");
    assert!(seed < 1 << 53);
    assert_eq!(picked["results"].as_array().unwrap().len(), 2);

    // Byte for byte the same with one thread and two (the picked seed
    // aside).
    assert_eq!(stripped(one[0].clone()), stripped(two[0].clone()));
    assert_eq!(stripped(one[1].clone()), stripped(two[1].clone()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_parameters_and_deadlines_are_answered() {
    let jobs = [
        json!({"id": "symmetry", "generate": {"count": 3, "symmetry": "spiral"}}),
        json!({"id": "reversed", "generate": {"count": 3, "givens": {"min": 30, "max": 20}}}),
        json!({"id": "too-few", "generate": {"count": 3, "givens": {"max": 16}}}),
        json!({"id": "count", "generate": {"count": 1001}}),
        json!({"id": "technique", "generate": {"count": 1, "technique": "magic"}}),
        json!({"id": "both", "generate": {"count": 1}, "puzzle": PUZZLE}),
        // Bands no puzzle can meet: refused at once, not searched until
        // the job's time runs out.
        json!({"id": "x-wing", "generate": {"count": 1, "technique": "x-wing", "difficulty": {"max": 3.0}}}),
        json!({"id": "quarter", "generate": {"count": 1, "symmetry": "quarter", "givens": {"min": 22, "max": 23}}}),
        // 18 givens or fewer take the climb about a minute a puzzle (and
        // rejection far longer): the deadline comes first, and the job
        // answers with what it made.
        json!({"id": "late", "generate": {"count": 40, "seed": 3, "givens": {"max": 18}}, "timeout_ms": 300}),
    ];
    let answered = generate_on(2, &jobs).await;
    let error = |n: usize| {
        assert_eq!(answered[n]["status"], "invalid", "{}", answered[n]);
        answered[n]["error"].as_str().unwrap().to_string()
    };
    assert!(error(0).starts_with("generate.symmetry \"spiral\" is not a symmetry"));
    assert_eq!(
        error(1),
        "generate.givens.min 30 is above generate.givens.max 20"
    );
    assert!(error(2).starts_with("generate.givens.max 16 is below 17"));
    assert!(error(3).starts_with("generate.count 1001 is out of range"));
    assert!(error(4).starts_with("generate.technique \"magic\" is not a technique"));
    assert!(error(5).starts_with("job has more than one of"));
    assert_eq!(
        error(6),
        "generate.technique \"x-wing\" rates 3.2, outside generate.difficulty 0 to 3"
    );
    assert!(
        error(7).starts_with(
            "generate.givens 22 to 23 cannot be met under generate.symmetry \"quarter\""
        )
    );

    let late = &answered[8];
    assert_eq!(late["status"], "timeout", "{late}");
    assert_eq!(late["seed"], 3);
    assert!(late["error"].as_str().unwrap().contains("of 40 puzzles"));
    let made = late["results"].as_array().unwrap();
    assert!(made.len() < 40);
    for entry in made {
        assert!(entry["index"].as_u64().unwrap() < 40);
        assert!(entry["givens"].as_u64().unwrap() <= 18);
        check_entry(entry, Symmetry::None);
    }
    assert!(late["tried"].as_u64().unwrap() > made.len() as u64);
}

fn run_generate(args: &[&str]) -> Run {
    let mut sudokud = command(None, &[]);
    sudokud.arg("generate").args(args);
    run_to_end(sudokud, "")
}

#[test]
fn the_command_is_reproducible_and_pipes_into_solve() {
    let on_threads = |threads| {
        run_generate(&[
            "--count",
            "70",
            "--seed",
            "11",
            "--symmetry",
            "diagonal",
            "--threads",
            threads,
        ])
    };
    let one = on_threads("1");
    assert_eq!(one.code, 0, "{}", one.stderr);
    let two = on_threads("2");
    assert_eq!(one.stdout, two.stdout);
    let short = run_generate(&["--count", "5", "--seed", "11", "--symmetry", "diagonal"]);
    assert!(one.stdout.starts_with(&short.stdout));
    assert!(
        one.stderr.contains("70 puzzles made") && one.stderr.contains("seed 11"),
        "{}",
        one.stderr
    );
    for line in one.stdout.lines() {
        assert!(Symmetry::Diagonal.holds(given_cells(line)), "{line}");
    }
    // Straight into `sudokud solve`: every puzzle solved, and unique.
    let mut solver = command(None, &[]);
    solver.args(["solve", "--mode", "unique", "--json"]);
    let solved = run_to_end(solver, &one.stdout);
    assert_eq!(solved.code, 0, "{}", solved.stderr);
    let answers = solved.lines();
    assert_eq!(answers.len(), 70);
    assert!(
        answers
            .iter()
            .all(|a| a["status"] == "solved" && a["unique"] == true)
    );

    // --json writes the entries of a generation result.
    let json = run_generate(&[
        "--count",
        "3",
        "--seed",
        "11",
        "--symmetry",
        "diagonal",
        "--json",
        "--rate",
    ]);
    let entries = json.lines();
    assert_eq!(entries.len(), 3);
    for (i, entry) in entries.iter().enumerate() {
        assert_eq!(entry["index"], i);
        assert_eq!(
            entry["puzzle"].as_str().unwrap(),
            one.stdout.lines().nth(i).unwrap()
        );
        assert!(entry["difficulty"]["score"].is_number(), "{entry}");
        check_entry(entry, Symmetry::Diagonal);
    }

    let bad = run_generate(&["--count", "3", "--givens", "30..20"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("generate.givens.min 30 is above"),
        "{}",
        bad.stderr
    );
}

/// `sudokud generate` stopped early keeps what it made: past
/// `--timeout-ms` it exits 3, and on a first SIGINT it exits 130; either
/// way it writes the puzzles made that begin the sequence, all of them
/// (none is left in its output buffer), as a smaller `--count` gives them.
#[test]
fn a_generate_run_stopped_early_keeps_the_start_of_the_sequence() {
    // A band no random puzzle nor climb reaches: nothing is made in time.
    let none = run_generate(&[
        "--count",
        "2",
        "--difficulty",
        "12..13",
        "--timeout-ms",
        "300",
    ]);
    assert_eq!(none.code, 3, "{}", none.stderr);
    assert_eq!(none.stdout, "");
    assert!(
        none.stderr.contains("time limit reached: 0 puzzles made"),
        "{}",
        none.stderr
    );

    let band = ["--difficulty", "6.0..7.9", "--seed", "5", "--threads", "2"];
    let out = std::env::temp_dir().join(format!("sudokud-interrupted-{}.txt", std::process::id()));
    let mut sudokud = command(None, &[]);
    sudokud
        .arg("generate")
        .args(["--count", "1000000"])
        .args(band)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::piped());
    let child = sudokud.spawn().expect("the binary starts");
    // Interrupted once its first buffer of output is written.
    let started = Instant::now();
    while std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0) == 0 {
        assert!(started.elapsed() < Duration::from_secs(120), "no output");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    let status = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let made = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let count = made.lines().count();
    assert!(
        stderr.contains(&format!("interrupted: {count} puzzles made")),
        "{count} lines; {stderr}"
    );
    let again = run_generate(&[&["--count", &count.to_string()][..], &band[..]].concat());
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(made, again.stdout);
}
