//! Solver throughput per puzzle set and mode, single thread (criterion),
//! and what a pool thread does with a batch job of 32 easy puzzles: read
//! the message, then solve and write the result message.
//!
//! `cargo bench --bench solver` ; one group per set, throughput in puzzles;
//! `cargo bench --bench solver -- batch_job` for the job path alone.
//! The public sets are read from the directory named by `SUDOKUD_DATA`
//! (README.md, "Puzzle sets"); without it, generated puzzles stand in.
//! Large sets are cut to their first 5,000 puzzles to keep a run short; the
//! side-by-side table against the `sudoku` crate (benches/compare) runs the
//! full sets.

mod data;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use data::{Kind, Set};
use sudokud::protocol::{Answerer, Job, Limits, Task, answer_job};
use sudokud::{Grid, Mode, solve};

/// The public sets (README.md, "Puzzle sets"), read from `SUDOKUD_DATA`;
/// generated stand-ins when it is unset (benches/data.rs).
const SETS: [(&str, &str, usize, Kind); 6] = [
    ("17_clue", "puzzles2_17_clue.txt", MAX_PUZZLES, Kind::Easy),
    (
        "top1465",
        "puzzles3_magictour_top1465.txt",
        MAX_PUZZLES,
        Kind::Hard,
    ),
    (
        "hardest_11plus",
        "puzzles5_forum_hardest_1905_11+.txt",
        MAX_PUZZLES,
        Kind::Hard,
    ),
    (
        "hardest_1106",
        "puzzles6_forum_hardest_1106.txt",
        MAX_PUZZLES,
        Kind::Hard,
    ),
    (
        "serg",
        "puzzles7_serg_benchmark.txt",
        MAX_PUZZLES,
        Kind::Easy,
    ),
    ("mixed_hard", "mixed_hard.txt", MAX_PUZZLES, Kind::Hard),
];

const MAX_PUZZLES: usize = 5_000;

/// The sets, read or made once for both benches.
fn loaded() -> &'static [Set] {
    static SETS_LOADED: std::sync::OnceLock<Vec<Set>> = std::sync::OnceLock::new();
    SETS_LOADED.get_or_init(|| data::sets(&SETS))
}

fn bench_sets(c: &mut Criterion) {
    for Set {
        name,
        puzzles: lines,
    } in loaded()
    {
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Elements(lines.len() as u64));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(4));
        for (mode_name, mode) in [("first", Mode::First), ("unique", Mode::Unique)] {
            group.bench_function(mode_name, |b| {
                b.iter(|| {
                    for line in lines {
                        let grid = Grid::parse(line).expect("benchmark puzzles are valid");
                        black_box(solve(&grid, mode, None));
                    }
                })
            });
        }
        group.finish();
    }
}

/// Batch jobs of 32 puzzles from the 17-clue set (or the generated easy
/// puzzles), as the worker gets them:
/// `parse` reads the message, `answer` turns a job read into its result
/// message (solving and writing), `all` does both ([`answer_job`]).
fn bench_batch_job(c: &mut Criterion) {
    const BATCH: usize = 32;
    const JOBS: usize = 64;
    let lines: Vec<&String> = loaded()[0].puzzles.iter().take(BATCH * JOBS).collect();
    let bodies: Vec<Vec<u8>> = lines
        .chunks(BATCH)
        .enumerate()
        .map(|(i, puzzles)| {
            serde_json::to_vec(&serde_json::json!({"id": i, "puzzles": puzzles}))
                .expect("a JSON value encodes")
        })
        .collect();
    let limits = Limits::default();
    let answerer = Answerer::new(solve, "bench/1");
    let parse = |body: &[u8]| Job::parse(body, None, &limits).expect("benchmark jobs are valid");
    let tasks: Vec<Task> = bodies
        .iter()
        .map(|body| Task::new(parse(body), Instant::now(), MAX_JOB))
        .collect();

    let mut group = c.benchmark_group("batch_job_32");
    group.throughput(Throughput::Elements((BATCH * JOBS) as u64));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("parse", |b| {
        b.iter(|| bodies.iter().for_each(|body| drop(black_box(parse(body)))))
    });
    group.bench_function("answer", |b| {
        b.iter(|| {
            for task in &tasks {
                black_box(task.answer(&answerer));
            }
        })
    });
    group.bench_function("all", |b| {
        b.iter(|| {
            for body in &bodies {
                black_box(answer_job(
                    body,
                    None,
                    &limits,
                    Instant::now(),
                    MAX_JOB,
                    &answerer,
                ));
            }
        })
    });
    group.finish();
}

/// The worker's default `worker.max_job_ms`: never reached here.
const MAX_JOB: Duration = Duration::from_secs(600);

criterion_group!(benches, bench_sets, bench_batch_job);
criterion_main!(benches);
