//! Does what a pool thread does with batch jobs of 32 easy puzzles, for an
//! instruction count under callgrind (repeatable on a noisy machine):
//! builds the job messages, then reads, solves and answers each one. The
//! puzzles are the 17-clue set from the directory named by `SUDOKUD_DATA`
//! (README.md, "Puzzle sets"), or generated ones when it is unset.
//!
//! ```text
//! cargo build --release -p sudokud-profile --bin batch_job
//! valgrind --tool=callgrind target/release/batch_job build   # building the messages only
//! valgrind --tool=callgrind target/release/batch_job parse   # ... and reading them
//! valgrind --tool=callgrind target/release/batch_job         # ... and solving, answering
//! ```
#[path = "../../../data.rs"]
mod data;

use std::time::{Duration, Instant};

use sudokud::protocol::{Answerer, Job, Limits, answer_job};

fn main() {
    let set = data::sets(&[(
        "17_clue",
        "puzzles2_17_clue.txt",
        32 * 256,
        data::Kind::Easy,
    )])
    .remove(0);
    eprintln!("puzzles: {} ({})", set.name, set.puzzles.len());
    let lines = set.puzzles;
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
    let answerer = Answerer::new(sudokud::solve, "example/1");
    let max_job = Duration::from_secs(600);
    let mut bytes = 0;
    for body in bodies.iter().filter(|_| step != "build") {
        if step == "parse" {
            bytes += Job::parse(body, None, &limits)
                .expect("the jobs are valid")
                .len();
            continue;
        }
        let answered = answer_job(body, None, &limits, Instant::now(), max_job, &answerer);
        bytes += answered.body.len();
    }
    println!("{} jobs, {bytes}", bodies.len());
}
