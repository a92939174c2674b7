//! `sudokud solve`: files of puzzles, one a line, solved on a bounded pool of
//! threads with the answers written in input order.
//!
//! The input is read in chunks of lines; `threads` workers take chunks as
//! they come free (so one hard chunk does not hold the others up), and a
//! writer puts the answers back in order. Channels between the stages are
//! bounded, so memory stays flat however long the input is.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::protocol::{Answer, AnswerStatus};
use crate::solver::{Grid, Mode, solve};

/// How `sudokud solve` answers.
#[derive(Debug, Clone)]
pub struct Options {
    pub mode: Mode,
    pub timeout: Option<Duration>,
    /// Solver threads, at least 1.
    pub threads: usize,
    /// Write the protocol's result object per line instead of plain text.
    pub json: bool,
}

/// What a run answered, for the closing summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub puzzles: u64,
    pub solved: u64,
    pub unsolvable: u64,
    pub invalid: u64,
    pub timeout: u64,
    pub error: u64,
    pub elapsed: Duration,
}

impl Summary {
    fn add(&mut self, status: AnswerStatus) {
        self.puzzles += 1;
        match status {
            AnswerStatus::Solved => self.solved += 1,
            AnswerStatus::Unsolvable => self.unsolvable += 1,
            AnswerStatus::Invalid => self.invalid += 1,
            AnswerStatus::Timeout => self.timeout += 1,
            AnswerStatus::Error => self.error += 1,
        }
    }

    /// Puzzles answered per second of wall time.
    pub fn rate(&self) -> f64 {
        self.puzzles as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} puzzles in {:.2} s ({:.0} puzzles/s): {} solved, {} unsolvable, {} timeout, {} invalid",
            self.puzzles,
            self.elapsed.as_secs_f64(),
            self.rate(),
            self.solved,
            self.unsolvable,
            self.timeout,
            self.invalid,
        )?;
        if self.error > 0 {
            write!(f, ", {} error", self.error)?;
        }
        Ok(())
    }
}

/// Lines handed to a solver thread at once: large enough to keep channel
/// traffic negligible next to solving, small enough to balance hard chunks.
const CHUNK_LINES: usize = 64;

/// A run of input lines and where it starts.
struct Chunk {
    seq: u64,
    lines: Vec<String>,
    bytes: u64,
}

/// Answers for one chunk, rendered.
struct Done {
    seq: u64,
    text: String,
    statuses: Vec<AnswerStatus>,
    bytes: u64,
}

/// Solves every puzzle line of `input` and writes one answer line per
/// puzzle to `output`, in input order. Blank lines and lines starting with
/// `#` are skipped. `progress` is told how many input bytes are done.
pub fn run(
    input: impl BufRead,
    output: impl Write + Send,
    options: &Options,
    progress: impl FnMut(u64, &Summary) + Send,
) -> io::Result<Summary> {
    let start = Instant::now();
    let threads = options.threads.max(1);
    let (work_tx, work_rx) = sync_channel::<Chunk>(threads * 2);
    let (done_tx, done_rx) = sync_channel::<Done>(threads * 2);
    let work_rx = Arc::new(Mutex::new(work_rx));

    std::thread::scope(|scope| {
        for _ in 0..threads {
            let work_rx = Arc::clone(&work_rx);
            let done_tx = done_tx.clone();
            scope.spawn(move || solve_chunks(&work_rx, &done_tx, options));
        }
        drop(done_tx);
        let writer = scope.spawn(move || write_in_order(done_rx, output, progress));
        let read = read_chunks(input, &work_tx);
        drop(work_tx);
        // The writer ends once every solver thread has hung up.
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the output thread panicked")));
        read?;
        let mut summary = written?;
        summary.elapsed = start.elapsed();
        Ok(summary)
    })
}

fn read_chunks(mut input: impl BufRead, work: &SyncSender<Chunk>) -> io::Result<()> {
    let mut seq = 0;
    let mut chunk = Chunk {
        seq,
        lines: Vec::with_capacity(CHUNK_LINES),
        bytes: 0,
    };
    let mut line = String::new();
    loop {
        line.clear();
        let read = input.read_line(&mut line)?;
        if read == 0 {
            break;
        }
        chunk.bytes += read as u64;
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        chunk.lines.push(text.to_string());
        if chunk.lines.len() == CHUNK_LINES {
            seq += 1;
            let full = std::mem::replace(
                &mut chunk,
                Chunk {
                    seq,
                    lines: Vec::with_capacity(CHUNK_LINES),
                    bytes: 0,
                },
            );
            if work.send(full).is_err() {
                // The writer failed (say, a closed pipe); it reports why.
                return Ok(());
            }
        }
    }
    if !chunk.lines.is_empty() || chunk.bytes > 0 {
        let _ = work.send(chunk);
    }
    Ok(())
}

fn solve_chunks(work: &Mutex<Receiver<Chunk>>, done: &SyncSender<Done>, options: &Options) {
    loop {
        // The lock is held only to take the next chunk. A poisoned lock
        // means another solver thread panicked while holding it, which
        // `recv` cannot do; stop quietly and let the others finish.
        let next = match work.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(chunk) = next else { return };
        let mut text = String::with_capacity(chunk.lines.len() * 84);
        let mut statuses = Vec::with_capacity(chunk.lines.len());
        for line in &chunk.lines {
            let answer = answer_line(line, options);
            statuses.push(answer.status);
            render(&answer, options.json, &mut text);
            text.push('\n');
        }
        let result = Done {
            seq: chunk.seq,
            text,
            statuses,
            bytes: chunk.bytes,
        };
        if done.send(result).is_err() {
            return;
        }
    }
}

/// The answer to one input line; a panic in the solver becomes an `error`
/// answer instead of taking the run down.
fn answer_line(line: &str, options: &Options) -> Answer {
    let grid = match Grid::parse(line) {
        Ok(grid) => grid,
        Err(e) => return Answer::invalid(e),
    };
    let solved = std::panic::catch_unwind(|| solve(&grid, options.mode, options.timeout));
    match solved {
        Ok(outcome) => Answer::solved(&outcome, options.timeout.unwrap_or(Duration::MAX)),
        Err(_) => Answer::error("the solver failed on this puzzle (a bug): please report it"),
    }
}

/// Plain: the solution, `unsolvable`, `timeout`, `invalid: <reason>` or
/// `error: <reason>`. JSON: the protocol's result object.
fn render(answer: &Answer, json: bool, out: &mut String) {
    if json {
        // An `Answer` holds only strings, numbers and booleans.
        match serde_json::to_string(answer) {
            Ok(text) => out.push_str(&text),
            Err(e) => out.push_str(&format!(r#"{{"status":"error","error":"{e}"}}"#)),
        }
        return;
    }
    match (answer.status, &answer.solution, &answer.error) {
        (AnswerStatus::Solved, Some(solution), _) => out.push_str(solution),
        (status @ (AnswerStatus::Invalid | AnswerStatus::Error), _, Some(reason)) => {
            out.push_str(status.as_str());
            out.push_str(": ");
            out.push_str(reason);
        }
        (status, _, _) => out.push_str(status.as_str()),
    }
}

fn write_in_order(
    done: Receiver<Done>,
    output: impl Write,
    mut progress: impl FnMut(u64, &Summary),
) -> io::Result<Summary> {
    let mut out = io::BufWriter::with_capacity(1 << 16, output);
    let mut pending = BTreeMap::new();
    let mut next = 0;
    let mut summary = Summary::default();
    let mut bytes = 0;
    for result in done {
        pending.insert(result.seq, result);
        while let Some(ready) = pending.remove(&next) {
            out.write_all(ready.text.as_bytes())?;
            for status in ready.statuses {
                summary.add(status);
            }
            bytes += ready.bytes;
            next += 1;
            progress(bytes, &summary);
        }
    }
    out.flush()?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sudokud_testkit::{PUZZLE, SOLUTION, UNSOLVABLE};

    fn run_on(input: &str, options: &Options) -> (String, Summary) {
        let mut out = Vec::new();
        let summary = run(input.as_bytes(), &mut out, options, |_, _| {}).unwrap();
        (String::from_utf8(out).unwrap(), summary)
    }

    fn options(threads: usize, json: bool) -> Options {
        Options {
            mode: Mode::First,
            timeout: None,
            threads,
            json,
        }
    }

    #[test]
    fn answers_every_line_in_order() {
        let mut input = String::from("# a comment\n\n");
        let mut expected = String::new();
        for i in 0..500 {
            match i % 3 {
                0 => {
                    input.push_str(PUZZLE);
                    expected.push_str(SOLUTION);
                }
                1 => {
                    input.push_str(&PUZZLE[..80]);
                    expected.push_str("invalid: puzzle has 80 cells, expected 81");
                }
                _ => {
                    // Consistent givens, no completion: 1-8 in row 1 and 9
                    // in column 9 leave no digit for row 1, column 9.
                    input.push_str(UNSOLVABLE);
                    expected.push_str("unsolvable");
                }
            }
            input.push('\n');
            expected.push('\n');
        }
        for threads in [1, 2, 3] {
            let (out, summary) = run_on(&input, &options(threads, false));
            assert_eq!(out, expected);
            assert_eq!(summary.puzzles, 500);
            assert_eq!(summary.solved, 167);
            assert_eq!(summary.invalid, 167);
            assert_eq!(summary.unsolvable, 166);
        }
    }

    #[test]
    fn writes_protocol_json() {
        let (out, _) = run_on(&format!("{PUZZLE}\nx\n"), &options(2, true));
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["status"], "solved");
        assert_eq!(lines[0]["solution"], SOLUTION);
        assert!(lines[0]["elapsed_us"].is_u64());
        assert_eq!(lines[0]["guesses"], 0);
        assert_eq!(lines[1]["status"], "invalid");
        assert_eq!(
            lines[1]["error"],
            "invalid character 'x' at row 1, column 1"
        );
    }

    #[test]
    fn reports_timeouts() {
        let options = Options {
            mode: Mode::Count { limit: 1_000_000 },
            timeout: Some(Duration::from_millis(5)),
            threads: 1,
            json: false,
        };
        let (out, summary) = run_on(&format!("{}\n", ".".repeat(81)), &options);
        assert_eq!(out, "timeout\n");
        assert_eq!(summary.timeout, 1);
    }

    #[test]
    fn empty_input_answers_nothing() {
        let (out, summary) = run_on("", &options(2, false));
        assert_eq!(out, "");
        assert_eq!(summary.puzzles, 0);
    }
}
