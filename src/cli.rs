//! The command line of `sudokud` (a module of the binary, not of the
//! library): its subcommands and flags, and how they map onto the
//! library's options. Durations carry their unit in the flag's name
//! (`--timeout-ms`, `--wait-secs`); older spellings stay as hidden
//! aliases.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use sudokud::Mode;
use sudokud::producer::{JobMode, JobOptions};

#[derive(Parser)]
#[command(name = "sudokud", version, about = "Sudoku solving service and tools")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the worker: take jobs from RabbitMQ, solve them, publish results.
    Run(RunArgs),
    /// Solve a file of puzzles (one a line) offline, answers in input order.
    ///
    /// A first Ctrl-C (SIGINT) or SIGTERM stops it early: it writes the
    /// answers to the first puzzles of the input, in order, and exits 130
    /// or 143; a second, 0.2 s or more after it, ends it at once.
    Solve(SolveArgs),
    /// Make puzzles: unique, minimal, symmetric and inside the bands asked
    /// for, the same ones for the same seed (one a line, `.` for blanks).
    Generate(GenerateArgs),
    /// Put a file's jobs on the jobs queue (one puzzle or JSON job a line),
    /// each confirmed by the broker; results go to the results queue.
    Enqueue(EnqueueArgs),
    /// Send a file's jobs and write each answer as a JSON line; exits 1 if
    /// any job is unanswered when the wait is over.
    Submit(SubmitArgs),
    /// Check that the broker takes connections and the jobs queue exists:
    /// exit 0 (and one line on standard output) or 1 (and why).
    Health(HealthArgs),
    /// Dead-lettered jobs (amqp.dead_letter_queue): list them, move them
    /// back to the jobs queue, or delete them.
    Dead(DeadArgs),
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Settings file, instead of config/default.toml; SUDOKUD__SECTION__KEY
    /// environment variables override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Any one solution.
    First,
    /// A solution, and whether it is the only one.
    Unique,
    /// The number of solutions, up to --limit.
    Count,
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    /// Puzzles to make (no limit offline).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,
    /// The sequence's seed, 0 to 2^53-1; without it one is picked and
    /// reported in the summary. The same seed and flags give the same
    /// puzzles, whatever --threads.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=sudokud::solver::MAX_SEED))]
    pub seed: Option<u64>,
    /// Where givens sit: none, central, quarter, horizontal, vertical,
    /// diagonal, antidiagonal, mirrors, diagonals or full.
    #[arg(long, default_value = "none", value_parser = parse_symmetry)]
    pub symmetry: sudokud::solver::Symmetry,
    /// Allow extra givens (stop removing at a count inside --givens).
    #[arg(long)]
    pub no_minimal: bool,
    /// The number of givens, as MIN..MAX (bounds included; either may be
    /// left out). A band few random puzzles meet (20 or fewer, 30 or more)
    /// comes from a climb toward it through neighbours that change a few
    /// givens, after random candidates, still the same puzzles for the
    /// same seed (docs/protocol.md, "Givens bands").
    #[arg(long, value_name = "MIN..MAX", value_parser = parse_band::<u8>)]
    pub givens: Option<(Option<u8>, Option<u8>)>,
    /// The difficulty score, as MIN..MAX (bounds included; either may be
    /// left out). Minimal puzzles in a band from 8.5 up come from a
    /// neighbourhood search: random candidates first, then a climb from
    /// the hardest of them by changing a few givens, still the same puzzles
    /// for the same seed (docs/protocol.md, "Hard bands").
    #[arg(long, value_name = "MIN..MAX", value_parser = parse_band::<f64>)]
    pub difficulty: Option<(Option<f64>, Option<f64>)>,
    /// The hardest technique each puzzle needs, named as ratings name it
    /// (e.g. "x-wing"). One from "dynamic forcing chain (+)" on comes from
    /// the search on planted grids (docs/protocol.md, "Hard bands"); the
    /// nested levels past "(+ forcing chains)" are seldom reached.
    #[arg(long, value_name = "NAME")]
    pub technique: Option<String>,
    /// Stop after this many milliseconds: the puzzles made that begin the
    /// sequence are written (those a smaller --count gives), the summary
    /// says so, and the exit status is 3. A first Ctrl-C (SIGINT) or
    /// SIGTERM stops the run the same way (exit status 130 or 143); a
    /// second, 0.2 s or more after it, ends it at once.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_symmetry(name: &str) -> Result<sudokud::solver::Symmetry, String> {
    sudokud::solver::Symmetry::from_name(name).ok_or_else(|| {
        let names = sudokud::solver::Symmetry::ALL.map(|s| s.name());
        format!("not a symmetry (one of {})", names.join(", "))
    })
}

/// `MIN..MAX`, `MIN..` or `..MAX`.
fn parse_band<T: std::str::FromStr>(text: &str) -> Result<(Option<T>, Option<T>), String> {
    let Some((min, max)) = text.split_once("..") else {
        return Err("expected MIN..MAX, e.g. 20..30".into());
    };
    let bound = |part: &str| {
        let part = part.trim();
        if part.is_empty() {
            return Ok(None);
        }
        part.parse()
            .map(Some)
            .map_err(|_| format!("{part:?} is not a number"))
    };
    Ok((bound(min)?, bound(max)?))
}

#[derive(clap::Args)]
pub struct SolveArgs {
    /// Input file, one puzzle a line; `-` or nothing reads standard input.
    /// Blank lines and lines starting with `#` are skipped.
    pub file: Option<PathBuf>,
    /// What to look for.
    #[arg(long, value_enum, default_value = "first")]
    pub mode: ModeArg,
    /// With --mode count: stop counting at this many solutions.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: u64,
    /// Give up on a puzzle after this many milliseconds (default: never).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// What `solve` and `generate` share: how many threads, which format, which
/// analyses.
#[derive(clap::Args)]
pub struct OutputArgs {
    /// Threads (default: one per core). The output is the same whatever
    /// the count.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: Option<u64>,
    /// One JSON object a line: the protocol's result for each puzzle solved
    /// (`solve`), or the entry of a generation result (`generate`).
    #[arg(long)]
    pub json: bool,
    /// Rate each puzzle with one solution by the hardest human technique
    /// it needs (docs/grading.md): plain output adds the score and the
    /// technique's name (`-` if not rated), last on the line.
    #[arg(long)]
    pub rate: bool,
    /// Give each puzzle's canonical (minlex) form, `0` for blanks: plain
    /// output adds it after the puzzle or answer.
    #[arg(long)]
    pub canonical: bool,
}

impl OutputArgs {
    /// The threads asked for, or one per core.
    pub fn threads(&self) -> usize {
        match self.threads {
            Some(n) => n as usize,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    pub fn analyses(&self) -> sudokud::protocol::Analyses {
        sudokud::protocol::Analyses::new(self.rate, self.canonical)
    }
}

/// What `enqueue` and `submit` share: where jobs come from, what they ask.
#[derive(clap::Args)]
pub struct JobArgs {
    /// Input file: one puzzle (81 cells, `.` or `0` blank, or a 9x9 JSON
    /// array) or one JSON job object a line; `-` or nothing reads standard
    /// input. Blank lines and lines starting with `#` are skipped.
    pub file: Option<PathBuf>,
    /// Settings file (its `[amqp]` section), instead of
    /// config/default.toml; SUDOKUD__AMQP__URL and the other
    /// SUDOKUD__SECTION__KEY variables override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Pack this many puzzle lines into one batch job (`puzzles`).
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub batch: usize,
    /// `mode` of every job (the worker's default is `first`).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// `limit` of every job; with --mode count.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// `timeout_ms` of every job: the worker gives up on a puzzle after
    /// this many milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    /// Ask for each puzzle's difficulty (`"rate": true` in every job).
    #[arg(long)]
    pub rate: bool,
    /// Ask for each puzzle's canonical form (`"canonical": true` in every
    /// job).
    #[arg(long)]
    pub canonical: bool,
    /// Job ids become the strings PREFIX<line> instead of line numbers.
    #[arg(long, value_name = "PREFIX")]
    pub id_prefix: Option<String>,
    /// Seconds to wait for the broker to accept the connection.
    #[arg(long, default_value_t = 10, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub connect_timeout_secs: u64,
}

#[derive(clap::Args)]
pub struct EnqueueArgs {
    #[command(flatten)]
    pub jobs: JobArgs,
}

#[derive(clap::Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub jobs: JobArgs,
    /// Write answers in input order, not as they arrive.
    #[arg(long)]
    pub ordered: bool,
    /// Once every job is sent and confirmed, wait at most this many
    /// seconds for the remaining answers; 0 waits as long as it takes.
    #[arg(long, alias = "timeout", default_value_t = 60, value_name = "SECS")]
    pub wait_secs: u64,
}

#[derive(clap::Args)]
pub struct HealthArgs {
    /// Settings file, as for `run`; SUDOKUD__* variables override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Fail unless the jobs queue has at least this many consumers.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub min_consumers: u32,
    /// Check this machine's worker process instead of the broker: pass
    /// while its GET /readyz (on metrics.listen) answers 200, that is while
    /// it is connected and consuming.
    #[arg(long, conflicts_with = "min_consumers")]
    pub worker: bool,
    /// Seconds one check may take (connect, then ask about the queue).
    #[arg(long, default_value_t = 5, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: u64,
    /// Keep checking, once a second, for up to this many seconds until a
    /// check passes.
    #[arg(long, alias = "wait", default_value_t = 0, value_name = "SECS")]
    pub wait_secs: u64,
}

impl ModeArg {
    pub fn solver_mode(self, limit: u64) -> Mode {
        match self {
            ModeArg::First => Mode::First,
            ModeArg::Unique => Mode::Unique,
            ModeArg::Count => Mode::Count { limit },
        }
    }

    fn job_mode(self) -> JobMode {
        match self {
            ModeArg::First => JobMode::First,
            ModeArg::Unique => JobMode::Unique,
            ModeArg::Count => JobMode::Count,
        }
    }
}

impl JobArgs {
    pub fn options(&self) -> JobOptions {
        JobOptions {
            batch: self.batch,
            mode: self.mode.map(ModeArg::job_mode),
            limit: self.limit,
            timeout_ms: self.timeout_ms,
            rate: self.rate,
            canonical: self.canonical,
            id_prefix: self.id_prefix.clone(),
        }
    }
}

#[derive(clap::Args)]
pub struct DeadArgs {
    #[command(subcommand)]
    pub command: DeadCommand,
    /// Settings file (its `[amqp]` section), as for `run`; SUDOKUD__*
    /// variables override it.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Seconds to wait for the broker: to connect, and for each answer.
    #[arg(long, default_value_t = 10, global = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: u64,
}

#[derive(Subcommand)]
pub enum DeadCommand {
    /// Show each dead letter, head of the queue first: job id, why it was
    /// dead-lettered, how many times, when last, and from which queue.
    /// Leaves the queue as it was.
    List {
        /// Show at most this many.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// One JSON object a line instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Move dead letters back to the jobs queue as fresh jobs (without the
    /// broker's x-death and x-delivery-count headers), each removed from
    /// the dead-letter queue once the broker has confirmed its copy.
    Requeue {
        /// Move at most this many.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Move only dead letters whose job id (or message_id) is one of
        /// these; exits 1 if one of them matches none.
        #[arg(long = "id", value_name = "ID", num_args = 1..)]
        ids: Vec<String>,
    },
    /// Delete every dead letter.
    Purge,
}
