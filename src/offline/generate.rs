//! `sudokud generate`: puzzles made by the solver core's generator, one a
//! line, in sequence order.
//!
//! With one thread, the calling thread makes and writes each puzzle in
//! turn. With more, runs of consecutive indices go to the solver pool
//! ([`crate::pool`]) and the calling thread writes them back in order; at
//! most two runs per thread are in flight, so memory stays flat however
//! many puzzles are asked for. Either way the output is the same, byte for
//! byte: puzzle `i` depends only on the seed, `i` and the parameters.
//!
//! A run can end early ([`Until`]): at a time limit, or when the user
//! interrupts it. It then writes the puzzles made so far that begin the
//! sequence, as a smaller count would have given them, and no other, so
//! what it wrote is never lost nor out of order.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Sender, channel};
use std::time::{Duration, Instant};

use crate::pool::Pool;
use crate::protocol::Analyses;
use crate::protocol::generation::Entry;
use crate::solver::Generator;

/// How `sudokud generate` makes and writes puzzles.
#[derive(Debug, Clone)]
pub struct Options {
    pub generator: Generator,
    /// Puzzles to make.
    pub count: u64,
    /// Generator threads, at least 1.
    pub threads: usize,
    /// Write the protocol's result entry per line instead of the puzzle.
    pub json: bool,
    /// The rating and canonical form of each puzzle.
    pub analyses: Analyses,
    /// When the run ends before `count` puzzles.
    pub until: Until,
}

/// What ends a run early: a time limit, or a flag another thread sets
/// (the command's signal handler). Asked between candidate puzzles, so a
/// run stops within one candidate's work.
#[derive(Debug, Clone, Default)]
pub struct Until {
    /// The run stops once this instant has passed.
    pub deadline: Option<Instant>,
    /// The run stops once this is set.
    pub interrupted: Option<Arc<AtomicBool>>,
}

impl Until {
    /// Why the run must stop now, if it must (an interruption first).
    fn reached(&self) -> Option<Ended> {
        if super::is_set(self.interrupted.as_ref()) {
            return Some(Ended::Interrupted);
        }
        self.deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
            .then_some(Ended::TimeLimit)
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ended {
    /// Every puzzle asked for was made.
    #[default]
    Complete,
    /// The time limit ([`Until::deadline`]) came first.
    TimeLimit,
    /// It was interrupted ([`Until::interrupted`]).
    Interrupted,
}

/// What a run made, for the closing summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Puzzles written.
    pub made: u64,
    /// Candidate puzzles drawn, kept or not.
    pub tried: u64,
    pub elapsed: Duration,
    pub seed: u64,
    /// Whether every puzzle was made, or why not.
    pub ended: Ended,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.ended {
            Ended::Complete => {}
            Ended::TimeLimit => f.write_str("time limit reached: ")?,
            Ended::Interrupted => f.write_str("interrupted: ")?,
        }
        let rate = self.made as f64 / self.elapsed.as_secs_f64().max(1e-9);
        write!(
            f,
            "{} puzzles made ({} tried) in {:.2} s (",
            self.made,
            self.tried,
            self.elapsed.as_secs_f64(),
        )?;
        // The hardest bands make a puzzle in seconds: those get a rate per
        // hour rather than a rounded 0 a second.
        if self.made > 0 && rate < 1.0 {
            write!(f, "{:.0} puzzles/h", rate * 3600.0)?;
        } else {
            write!(f, "{rate:.0} puzzles/s")?;
        }
        write!(f, "), seed {}", self.seed)
    }
}

/// Consecutive puzzles handed to a thread at once.
const RUN: u64 = 32;

/// Runs in flight per thread.
const RUNS_PER_THREAD: u64 = 2;

const OUTPUT_BUFFER: usize = 1 << 16;

/// The rendered lines of one run, and the candidates it drew. A run cut
/// short (`ended`) holds the puzzles it made before, from its first.
struct Done {
    run: u64,
    text: String,
    made: u64,
    tried: u64,
    ended: Ended,
}

/// Makes `options.count` puzzles and writes one line each to `output`.
/// `progress` is told the summary so far after each run of puzzles. A run
/// that ends early ([`Options::until`]) writes the puzzles made that begin
/// the sequence, says why in [`Summary::ended`], and returns.
pub fn run(
    output: impl Write,
    options: &Options,
    mut progress: impl FnMut(&Summary),
) -> io::Result<Summary> {
    let start = Instant::now();
    let mut out = io::BufWriter::with_capacity(OUTPUT_BUFFER, output);
    let mut summary = Summary {
        seed: options.generator.spec().seed,
        ..Summary::default()
    };
    let runs = options.count.div_ceil(RUN);
    // Whether the run goes on after this one.
    let mut record = |done: Done, summary: &mut Summary| -> io::Result<bool> {
        out.write_all(done.text.as_bytes())?;
        summary.made += done.made;
        summary.tried += done.tried;
        summary.ended = done.ended;
        summary.elapsed = start.elapsed();
        progress(summary);
        Ok(done.ended == Ended::Complete)
    };
    if options.threads <= 1 {
        for run in 0..runs {
            if !record(make_run(run, options), &mut summary)? {
                break;
            }
        }
    } else {
        let pool = Pool::start(options.threads)?;
        let shared = Arc::new(options.clone());
        let (done_tx, done_rx) = channel::<Done>();
        let in_flight = options.threads as u64 * RUNS_PER_THREAD;
        let submit = |run: u64, done: &Sender<Done>| {
            let (options, done) = (Arc::clone(&shared), done.clone());
            pool.handle().submit(Box::new(move || {
                // The writer is gone only when it failed; it reports why.
                let _ = done.send(make_run(run, &options));
            }));
        };
        let mut pending = BTreeMap::new();
        let mut submitted = 0;
        for next in 0..runs {
            while submitted < runs && submitted < next + in_flight {
                submit(submitted, &done_tx);
                submitted += 1;
            }
            while !pending.contains_key(&next) {
                let done = done_rx
                    .recv()
                    .map_err(|_| io::Error::other("the generator threads stopped"))?;
                pending.insert(done.run, done);
            }
            if let Some(done) = pending.remove(&next)
                && !record(done, &mut summary)?
            {
                // The runs in flight see the same limit and stop within
                // a candidate; what they made is not written.
                break;
            }
        }
    }
    out.flush()?;
    summary.elapsed = start.elapsed();
    Ok(summary)
}

/// Makes and renders the puzzles of run number `run`. A panic in the
/// generator (a bug) is written as an error line for each puzzle of the
/// run, so the output keeps one line per index.
fn make_run(run: u64, options: &Options) -> Done {
    let indices = run * RUN..((run + 1) * RUN).min(options.count);
    let made = catch_unwind(AssertUnwindSafe(|| {
        let mut text = String::with_capacity(indices.clone().count() * 84);
        let (mut made, mut tried) = (0, 0);
        let mut ended = Ended::Complete;
        for index in indices.clone() {
            let puzzle = options.generator.puzzle(index, || {
                ended = options.until.reached().unwrap_or(Ended::Complete);
                ended != Ended::Complete
            });
            match puzzle {
                Ok(puzzle) => {
                    made += 1;
                    tried += puzzle.tried;
                    render(Entry::new(puzzle, options.analyses), options, &mut text);
                    text.push('\n');
                }
                Err(stopped) => {
                    tried += stopped.tried;
                    break;
                }
            }
        }
        (text, made, tried, ended)
    }));
    match made {
        Ok((text, made, tried, ended)) => Done {
            run,
            text,
            made,
            tried,
            ended,
        },
        Err(_) => {
            tracing::error!(first = indices.start, "the generator panicked");
            let mut text = String::new();
            for index in indices {
                let _ = writeln!(
                    text,
                    "error: the generator failed on puzzle {index} (a bug)"
                );
            }
            Done {
                run,
                text,
                made: 0,
                tried: 0,
                ended: Ended::Complete,
            }
        }
    }
}

/// Plain: the puzzle (`.` for blanks), then one space-separated column per
/// analysis asked for, as `sudokud solve` writes them: the canonical form,
/// then the score and the technique's name. JSON: the protocol's entry of a
/// generation result.
fn render(entry: Entry, options: &Options, out: &mut String) {
    if options.json {
        match serde_json::to_string(&entry) {
            Ok(text) => out.push_str(&text),
            Err(e) => {
                let _ = write!(out, r#"{{"index":{},"error":"{e}"}}"#, entry.index);
            }
        }
        return;
    }
    out.push_str(&entry.puzzle);
    if let Some(form) = &entry.canonical {
        out.push(' ');
        out.push_str(form);
    }
    if options.analyses.rate
        && let Some(difficulty) = &entry.difficulty
    {
        let _ = write!(
            out,
            " {:.1} {}",
            difficulty.score(),
            difficulty.technique.name()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Grid, Spec, Symmetry};
    use std::sync::atomic::Ordering;

    fn options(threads: usize, count: u64) -> Options {
        let spec = Spec {
            seed: 2026,
            symmetry: Symmetry::Central,
            ..Spec::default()
        };
        Options {
            generator: Generator::new(spec).unwrap(),
            count,
            threads,
            json: false,
            analyses: Analyses::NONE,
            until: Until::default(),
        }
    }

    fn output(options: &Options) -> (String, Summary) {
        let mut out = Vec::new();
        let summary = run(&mut out, options, |_| {}).unwrap();
        (String::from_utf8(out).unwrap(), summary)
    }

    #[test]
    fn the_summary_gives_slow_runs_a_rate_per_hour() {
        let summary = |made, secs| {
            Summary {
                made,
                tried: 9,
                elapsed: std::time::Duration::from_secs(secs),
                seed: 1,
                ended: Ended::Complete,
            }
            .to_string()
        };
        assert_eq!(
            summary(20, 300),
            "20 puzzles made (9 tried) in 300.00 s (240 puzzles/h), seed 1"
        );
        assert_eq!(
            summary(20, 2),
            "20 puzzles made (9 tried) in 2.00 s (10 puzzles/s), seed 1"
        );
        assert_eq!(
            summary(0, 2),
            "0 puzzles made (9 tried) in 2.00 s (0 puzzles/s), seed 1"
        );
    }

    /// An interrupted run writes the puzzles made that begin the
    /// sequence, all of them, and says it was interrupted.
    #[test]
    fn an_interrupted_run_keeps_the_start_of_the_sequence() {
        let (full, _) = output(&options(1, 200));
        for threads in [1, 2] {
            let flag = Arc::new(AtomicBool::new(false));
            let mut options = options(threads, 200);
            options.until.interrupted = Some(Arc::clone(&flag));
            let mut out = Vec::new();
            // Interrupted once the first run is written.
            let summary = run(&mut out, &options, |_| flag.store(true, Ordering::Relaxed)).unwrap();
            let out = String::from_utf8(out).unwrap();
            assert_eq!(summary.ended, Ended::Interrupted, "{threads} threads");
            assert_eq!(out.lines().count() as u64, summary.made);
            assert!(
                summary.made >= RUN && summary.made < 200,
                "{}",
                summary.made
            );
            assert!(full.starts_with(&out), "{threads} threads");
            if threads == 1 {
                // Asked between candidates: the next run stops at once.
                assert_eq!(summary.made, RUN);
            }
        }
    }

    /// A time limit already passed stops the run before its first puzzle.
    #[test]
    fn a_run_past_its_time_limit_makes_nothing_more() {
        let mut options = options(2, 50);
        options.until.deadline = Some(Instant::now());
        let (out, summary) = output(&options);
        assert_eq!(summary.ended, Ended::TimeLimit);
        assert_eq!((out.as_str(), summary.made), ("", 0));
        assert!(
            summary
                .to_string()
                .starts_with("time limit reached: 0 puzzles made")
        );
    }

    #[test]
    fn threads_change_nothing_and_a_shorter_count_is_a_prefix() {
        let (one, summary) = output(&options(1, 70));
        let (two, _) = output(&options(2, 70));
        assert_eq!(one, two);
        assert_eq!(summary.made, 70);
        assert_eq!(summary.ended, Ended::Complete);
        assert_eq!(one.lines().count(), 70);
        let (short, _) = output(&options(2, 33));
        assert!(one.starts_with(&short));
        for line in one.lines() {
            assert!(Grid::parse(line).is_ok(), "{line}");
        }
    }
}
