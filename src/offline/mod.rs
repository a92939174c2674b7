//! `sudokud solve`: files of puzzles, one a line, answered in input order.
//!
//! With one thread, the calling thread reads, solves and writes, line by
//! line: nothing is handed between threads. With more, the calling thread
//! reads the input in chunks of lines and hands them to the solver pool
//! ([`crate::pool`]), whose threads take chunks as they come free (so one
//! hard chunk does not hold the others up), and it writes the answers back
//! in order. At most two chunks per thread are in flight, so memory stays
//! flat however long the input is.
//!
//! A run can be interrupted ([`Options::interrupted`]): it then stops
//! reading, and writes the answers to the first puzzles of the input, in
//! order, as many as were answered in a row from the start.
//!
//! [`generate`] is `sudokud generate`, which makes puzzles the same way.

pub mod generate;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use crate::pool::Pool;

use crate::protocol::{Analyses, Answer, AnswerStatus, StatusCounts, answer_guarded};
use crate::solver::{CELLS, Grid, Mode, Status, solve, solve_text};

/// How `sudokud solve` answers.
#[derive(Debug, Clone)]
pub struct Options {
    pub mode: Mode,
    pub timeout: Option<Duration>,
    /// Solver threads, at least 1.
    pub threads: usize,
    /// Write the protocol's result object per line instead of plain text.
    pub json: bool,
    /// The rating and canonical form, as a job's `rate` and `canonical`
    /// ask for them (see [`render`] for where plain text puts them).
    pub analyses: Analyses,
    /// Once set (by the command's signal handler), the run answers no
    /// further puzzle and ends.
    pub interrupted: Option<Arc<AtomicBool>>,
}

impl Options {
    fn interrupted(&self) -> bool {
        is_set(self.interrupted.as_ref())
    }
}

/// Whether an interruption flag is there and set (offline runs and
/// generation runs alike).
fn is_set(flag: Option<&Arc<AtomicBool>>) -> bool {
    flag.is_some_and(|flag| flag.load(Ordering::Acquire))
}

/// What a run answered, for the closing summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub puzzles: u64,
    pub statuses: StatusCounts,
    pub elapsed: Duration,
    /// Whether the run was interrupted: then `puzzles` are the first of
    /// the input.
    pub interrupted: bool,
}

impl Summary {
    fn add(&mut self, status: AnswerStatus) {
        self.puzzles += 1;
        self.statuses.add(status);
    }

    /// Puzzles answered per second of wall time.
    pub fn rate(&self) -> f64 {
        self.puzzles as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.interrupted {
            f.write_str("interrupted, the first ")?;
        }
        write!(
            f,
            "{} puzzles in {:.2} s ({:.0} puzzles/s): {} solved, {} unsolvable, {} timeout, {} invalid",
            self.puzzles,
            self.elapsed.as_secs_f64(),
            self.rate(),
            self.statuses.get(AnswerStatus::Solved),
            self.statuses.get(AnswerStatus::Unsolvable),
            self.statuses.get(AnswerStatus::Timeout),
            self.statuses.get(AnswerStatus::Invalid),
        )?;
        let errors = self.statuses.get(AnswerStatus::Error);
        if errors > 0 {
            write!(f, ", {errors} error")?;
        }
        Ok(())
    }
}

/// Lines handed to a solver thread at once: large enough to keep channel
/// traffic negligible next to solving, small enough to balance hard chunks.
const CHUNK_LINES: usize = 64;

/// Chunks in flight per solver thread.
const CHUNKS_PER_THREAD: usize = 2;

/// Size of the output buffer.
const OUTPUT_BUFFER: usize = 1 << 16;

/// A run of input lines and where it starts.
struct Chunk {
    seq: u64,
    lines: Vec<String>,
    bytes: u64,
}

/// Answers for one chunk, rendered: to all its lines, or (`cut`) to the
/// first ones, when the run was interrupted.
struct Done {
    seq: u64,
    text: String,
    statuses: Vec<AnswerStatus>,
    bytes: u64,
    cut: bool,
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
    let mut summary = if options.threads <= 1 {
        run_inline(input, output, options, progress)?
    } else {
        run_pooled(input, output, options, progress)?
    };
    summary.elapsed = start.elapsed();
    Ok(summary)
}

/// One thread: read, solve and write each line in turn.
fn run_inline(
    mut input: impl BufRead,
    output: impl Write,
    options: &Options,
    mut progress: impl FnMut(u64, &Summary),
) -> io::Result<Summary> {
    let mut out = io::BufWriter::with_capacity(OUTPUT_BUFFER, output);
    let mut summary = Summary::default();
    let (mut line, mut text) = (String::new(), String::with_capacity(128));
    let mut bytes = 0;
    let direct = writes_plain_directly(options);
    loop {
        if options.interrupted() {
            summary.interrupted = true;
            break;
        }
        line.clear();
        let read = input.read_line(&mut line)?;
        if read == 0 {
            break;
        }
        bytes += read as u64;
        let puzzle = line.trim();
        if puzzle.is_empty() || puzzle.starts_with('#') {
            continue;
        }
        let status = if direct {
            write_plain(puzzle, options, &mut out, &mut text)?
        } else {
            let answer = answer_line(puzzle, options);
            text.clear();
            render(&answer, options, &mut text);
            text.push('\n');
            out.write_all(text.as_bytes())?;
            answer.status
        };
        summary.add(status);
        if summary.puzzles.is_multiple_of(CHUNK_LINES as u64) {
            progress(bytes, &summary);
        }
    }
    out.flush()?;
    progress(bytes, &summary);
    Ok(summary)
}

/// Whether [`write_plain`] may answer instead of [`answer_line`] and
/// [`render`]: plain output, where an answer is the solution or a status
/// word and nothing else.
fn writes_plain_directly(options: &Options) -> bool {
    !options.json && options.analyses == Analyses::NONE
}

/// Answers one puzzle line in plain text, as [`render`] would write
/// [`answer_line`]'s answer, but straight from the solver's grid into `out`:
/// no [`Answer`] and no string per puzzle, and without a deadline no clock
/// read (plain output reports no time). On puzzles solved in a few
/// microseconds that is a measurable part of the work. An invalid line, or
/// a panic in the solver, goes through [`answer_line`] and [`render`]
/// (which logs the panic), with `scratch` as their buffer.
fn write_plain(
    puzzle: &str,
    options: &Options,
    out: &mut impl Write,
    scratch: &mut String,
) -> io::Result<AnswerStatus> {
    let outcome = catch_unwind(|| solve_text(puzzle, options.mode, options.timeout))
        .ok()
        .and_then(Result::ok);
    let Some(outcome) = outcome else {
        // Rare: parse again, or solve again so the panic is logged with
        // its puzzle, and write what the general path writes.
        let answer = answer_line(puzzle, options);
        scratch.clear();
        render(&answer, options, scratch);
        scratch.push('\n');
        out.write_all(scratch.as_bytes())?;
        return Ok(answer.status);
    };
    let status = match (outcome.status, outcome.solution) {
        (Status::Solved, Some(solution)) => {
            let mut text = [b'\n'; CELLS + 1];
            text[..CELLS].copy_from_slice(&solution.to_bytes());
            out.write_all(&text)?;
            return Ok(AnswerStatus::Solved);
        }
        // Never without a solution; written as `render` would all the same.
        (Status::Solved, None) => AnswerStatus::Solved,
        (Status::Unsolvable, _) => AnswerStatus::Unsolvable,
        (Status::Timeout, _) => AnswerStatus::Timeout,
    };
    out.write_all(status.as_str().as_bytes())?;
    out.write_all(b"\n")?;
    Ok(status)
}

/// Several threads: chunks of lines solved on the pool, written in order
/// by the calling thread.
fn run_pooled(
    mut input: impl BufRead,
    output: impl Write,
    options: &Options,
    progress: impl FnMut(u64, &Summary),
) -> io::Result<Summary> {
    let pool = Pool::start(options.threads)?;
    let options = Arc::new(options.clone());
    let (done_tx, done_rx) = channel::<Done>();
    let mut writer = Writer::new(output, done_rx, progress);
    let in_flight_max = (options.threads * CHUNKS_PER_THREAD) as u64;
    let mut seq = 0;
    loop {
        let chunk = read_chunk(&mut input, seq)?;
        // Interrupted, nothing more is read: the chunks in flight end it.
        let last = chunk.lines.is_empty() || options.interrupted();
        if chunk.bytes > 0 {
            let (options, done) = (Arc::clone(&options), done_tx.clone());
            pool.handle()
                .submit(Box::new(move || solve_chunk(chunk, &options, &done)));
            seq += 1;
        }
        while seq - writer.next >= in_flight_max || (last && writer.next < seq) {
            writer.write_next()?;
        }
        if last || writer.summary.interrupted {
            break;
        }
    }
    writer.finish()
}

/// Reads up to [`CHUNK_LINES`] puzzle lines; an empty chunk means the input
/// is done (its `bytes` may still count skipped lines at the end).
fn read_chunk(input: &mut impl BufRead, seq: u64) -> io::Result<Chunk> {
    let mut chunk = Chunk {
        seq,
        lines: Vec::with_capacity(CHUNK_LINES),
        bytes: 0,
    };
    let mut line = String::new();
    while chunk.lines.len() < CHUNK_LINES {
        line.clear();
        let read = input.read_line(&mut line)?;
        if read == 0 {
            break;
        }
        chunk.bytes += read as u64;
        let text = line.trim();
        if !text.is_empty() && !text.starts_with('#') {
            chunk.lines.push(text.to_string());
        }
    }
    Ok(chunk)
}

/// Answers a chunk on a pool thread. Always sends its [`Done`], so the
/// writer never waits for a chunk that will not come: a panic outside the
/// solver (which [`answer_line`] already guards) makes every line of the
/// chunk an `error`.
fn solve_chunk(chunk: Chunk, options: &Options, done: &Sender<Done>) {
    let rendered = catch_unwind(AssertUnwindSafe(|| {
        let mut text = String::with_capacity(chunk.lines.len() * 84);
        let mut statuses = Vec::with_capacity(chunk.lines.len());
        for line in &chunk.lines {
            if options.interrupted() {
                break;
            }
            let answer = answer_line(line, options);
            statuses.push(answer.status);
            render(&answer, options, &mut text);
            text.push('\n');
        }
        (text, statuses)
    }));
    let (text, statuses) = rendered.unwrap_or_else(|_| {
        let answer = Answer::error("the worker failed on this puzzle (a bug); it has been logged");
        let mut text = String::new();
        for _ in &chunk.lines {
            render(&answer, options, &mut text);
            text.push('\n');
        }
        (text, vec![AnswerStatus::Error; chunk.lines.len()])
    });
    // The writer is gone only when it failed; it reports why.
    let _ = done.send(Done {
        seq: chunk.seq,
        cut: statuses.len() < chunk.lines.len(),
        text,
        statuses,
        bytes: chunk.bytes,
    });
}

/// Puts the answers of chunks back in input order.
struct Writer<W: Write, P> {
    out: io::BufWriter<W>,
    done: Receiver<Done>,
    progress: P,
    pending: BTreeMap<u64, Done>,
    /// The next chunk to write.
    next: u64,
    summary: Summary,
    bytes: u64,
}

impl<W: Write, P: FnMut(u64, &Summary)> Writer<W, P> {
    fn new(output: W, done: Receiver<Done>, progress: P) -> Self {
        Writer {
            out: io::BufWriter::with_capacity(OUTPUT_BUFFER, output),
            done,
            progress,
            pending: BTreeMap::new(),
            next: 0,
            summary: Summary::default(),
            bytes: 0,
        }
    }

    /// Waits for the next chunk in order and writes it. After a chunk cut
    /// short (the run was interrupted), it writes nothing more.
    fn write_next(&mut self) -> io::Result<()> {
        while !self.pending.contains_key(&self.next) {
            let done = self
                .done
                .recv()
                .map_err(|_| io::Error::other("the solver threads stopped"))?;
            self.pending.insert(done.seq, done);
        }
        if let Some(ready) = self.pending.remove(&self.next) {
            self.next += 1;
            if self.summary.interrupted {
                return Ok(());
            }
            self.summary.interrupted = ready.cut;
            self.out.write_all(ready.text.as_bytes())?;
            for status in ready.statuses {
                self.summary.add(status);
            }
            self.bytes += ready.bytes;
            (self.progress)(self.bytes, &self.summary);
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<Summary> {
        self.out.flush()?;
        Ok(self.summary)
    }
}

/// The answer to one input line; a panic in the solver becomes an `error`
/// answer instead of taking the run down.
fn answer_line(line: &str, options: &Options) -> Answer {
    let grid = match Grid::parse(line) {
        Ok(grid) => grid,
        Err(e) => return Answer::invalid(e),
    };
    let (answer, panic) = answer_guarded(
        solve,
        &grid,
        options.mode,
        options.analyses,
        options.timeout,
    );
    if let Some(panic) = panic {
        tracing::error!(panic = %panic, puzzle = %grid, "the solver panicked");
    }
    answer
}

/// Plain: the solution, `unsolvable`, `timeout`, `invalid: <reason>` or
/// `error: <reason>`, and after a solution, `unsolvable` or `timeout`, one
/// space-separated column per analysis asked for: the canonical form,
/// then the score and the technique's name (which may hold spaces, so it
/// comes last), or `-` for a puzzle that was not rated. JSON: the
/// protocol's result object, analyses included.
fn render(answer: &Answer, options: &Options, out: &mut String) {
    if options.json {
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
    if matches!(answer.status, AnswerStatus::Invalid | AnswerStatus::Error) {
        return;
    }
    if let Some(form) = &answer.canonical {
        out.push(' ');
        out.push_str(form);
    }
    if options.analyses.rate {
        match &answer.difficulty {
            Some(difficulty) => {
                // Writing to a String cannot fail.
                let _ = write!(
                    out,
                    " {:.1} {}",
                    difficulty.score(),
                    difficulty.technique.name()
                );
            }
            None => out.push_str(" -"),
        }
    }
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
            analyses: Analyses::NONE,
            interrupted: None,
        }
    }

    /// An interrupted run answers the first puzzles of its input, in
    /// order, and no other: on one thread at once, on two after the
    /// chunks in flight.
    #[test]
    fn an_interrupted_run_answers_the_start_of_its_input() {
        let input = format!("{PUZZLE}\n").repeat(1000);
        for threads in [1, 2] {
            let flag = Arc::new(AtomicBool::new(false));
            let options = Options {
                interrupted: Some(Arc::clone(&flag)),
                ..options(threads, false)
            };
            let mut out = Vec::new();
            // Interrupted at the first progress report.
            let summary = run(input.as_bytes(), &mut out, &options, |_, _| {
                flag.store(true, Ordering::Relaxed)
            })
            .unwrap();
            let out = String::from_utf8(out).unwrap();
            assert!(summary.interrupted, "{threads} threads");
            assert!(
                summary.puzzles >= 1 && summary.puzzles < 1000,
                "{}",
                summary.puzzles
            );
            assert_eq!(
                out,
                format!("{SOLUTION}\n").repeat(summary.puzzles as usize)
            );
            assert!(summary.to_string().starts_with("interrupted, the first "));
            if threads == 1 {
                // Reported every chunk of lines, asked every line.
                assert_eq!(summary.puzzles, CHUNK_LINES as u64);
            }
        }
        let (_, whole) = run_on(&input, &options(2, false));
        assert!(!whole.interrupted);
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
            assert_eq!(summary.statuses.get(AnswerStatus::Solved), 167);
            assert_eq!(summary.statuses.get(AnswerStatus::Invalid), 167);
            assert_eq!(summary.statuses.get(AnswerStatus::Unsolvable), 166);
        }
    }

    #[test]
    fn progress_ends_at_the_whole_input() {
        let input = format!("{PUZZLE}\n").repeat(200) + "# trailing comment\n";
        for threads in [1, 2] {
            let mut last = (0, 0);
            let mut out = Vec::new();
            run(
                input.as_bytes(),
                &mut out,
                &options(threads, false),
                |bytes, summary| {
                    assert!(bytes >= last.0, "progress went back");
                    last = (bytes, summary.puzzles);
                },
            )
            .unwrap();
            assert_eq!(last, (input.len() as u64, 200), "{threads} threads");
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
            analyses: Analyses::NONE,
            interrupted: None,
        };
        let (out, summary) = run_on(&format!("{}\n", ".".repeat(81)), &options);
        assert_eq!(out, "timeout\n");
        assert_eq!(summary.statuses.get(AnswerStatus::Timeout), 1);
    }

    /// One thread writes plain answers straight from the solver: the same
    /// text as rendering the general path's answer, for every status.
    #[test]
    fn plain_inline_output_is_the_rendered_answer() {
        let lines = [
            PUZZLE.to_string(),
            PUZZLE[..80].to_string(),
            format!("{}x", &PUZZLE[..80]),
            format!("12345678.........9{}", ".".repeat(63)),
            format!("55{}", ".".repeat(79)),
            ".".repeat(81),
        ];
        let modes = [Mode::First, Mode::Unique, Mode::Count { limit: 3 }];
        for mode in modes {
            for timeout in [None, Some(Duration::from_secs(60))] {
                let options = Options {
                    mode,
                    timeout,
                    threads: 1,
                    json: false,
                    analyses: Analyses::NONE,
                    interrupted: None,
                };
                assert!(writes_plain_directly(&options));
                let mut expected = String::new();
                for line in &lines {
                    render(&answer_line(line, &options), &options, &mut expected);
                    expected.push('\n');
                }
                let (out, summary) = run_on(&(lines.join("\n") + "\n"), &options);
                assert_eq!(out, expected, "{mode:?}, {timeout:?}");
                assert_eq!(summary.puzzles, lines.len() as u64);
            }
        }
    }

    #[test]
    fn empty_input_answers_nothing() {
        let (out, summary) = run_on("", &options(2, false));
        assert_eq!(out, "");
        assert_eq!(summary.puzzles, 0);
    }
}
