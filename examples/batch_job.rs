//! Does what a pool thread does with batch jobs of 32 easy puzzles, for an
//! instruction count under callgrind (repeatable on a noisy machine):
//! builds the job messages, then reads, solves and answers each one.
//!
//! ```text
//! cargo build --release --example batch_job
//! valgrind --tool=callgrind target/release/examples/batch_job build   # building the messages only
//! valgrind --tool=callgrind target/release/examples/batch_job parse   # ... and reading them
//! valgrind --tool=callgrind target/release/examples/batch_job         # ... and solving, answering
//! ```
use sudokud::protocol::{Answer, Job, Limits, Puzzles, Reply};

fn main() {
    let text = include_str!("../tests/data/puzzles2_17_clue.txt");
    let lines: Vec<&str> = text.lines().take(32 * 256).collect();
    let bodies: Vec<Vec<u8>> = lines
        .chunks(32)
        .enumerate()
        .map(|(i, puzzles)| {
            serde_json::to_vec(&serde_json::json!({"id": i, "puzzles": puzzles}))
                .expect("a JSON value encodes")
        })
        .collect();
    let step = std::env::args().nth(1).unwrap_or_default();
    let limits = Limits::default();
    let mut bytes = 0;
    for body in bodies.iter().filter(|_| step != "build") {
        let job = Job::parse(body, None, &limits).expect("the jobs are valid");
        let Puzzles::Batch(items) = &job.puzzles else {
            unreachable!("the jobs are batches")
        };
        if step == "parse" {
            bytes += items.len();
            continue;
        }
        let answers = items
            .iter()
            .map(|item| match item {
                Ok(grid) => Answer::from_outcome(
                    &sudokud::solve(grid, job.mode, Some(job.timeout)),
                    job.timeout,
                ),
                Err(e) => Answer::invalid(e),
            })
            .collect();
        bytes += Reply::batch(&job.id, answers, "example/1").to_json().len();
    }
    println!("{} jobs, {bytes}", bodies.len());
}
