//! The `sudokud` command: parses arguments and hands over to the library.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use sudokud::Mode;
use sudokud::offline;

#[derive(Parser)]
#[command(name = "sudokud", version, about = "Sudoku solving service and tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the worker: take jobs from RabbitMQ, solve them, publish results.
    Run(RunArgs),
    /// Solve a file of puzzles (one a line) offline, answers in input order.
    Solve(SolveArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Settings file, instead of config/default.toml; SUDOKUD__SECTION__KEY
    /// environment variables override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    /// Any one solution.
    First,
    /// A solution, and whether it is the only one.
    Unique,
    /// The number of solutions, up to --limit.
    Count,
}

#[derive(clap::Args)]
struct SolveArgs {
    /// Input file, one puzzle a line; `-` or nothing reads standard input.
    /// Blank lines and lines starting with `#` are skipped.
    file: Option<PathBuf>,
    /// What to look for.
    #[arg(long, value_enum, default_value = "first")]
    mode: ModeArg,
    /// With --mode count: stop counting at this many solutions.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    limit: u64,
    /// Give up on a puzzle after this many milliseconds (default: never).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// Solver threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: Option<u64>,
    /// Write the protocol's JSON result object for each puzzle.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Solve(args) => solve(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sudokud: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: RunArgs) -> anyhow::Result<()> {
    let settings = sudokud::Settings::load(args.config.as_deref())?;
    sudokud::telemetry::init(&settings.log)?;
    // One thread is plenty for the broker side (solving has threads of
    // its own), and saves the cross-thread wake-ups of a work-stealing
    // scheduler on every message.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(sudokud::worker::run(
        settings,
        sudokud::worker::shutdown_signal(),
    ));
    if let Err(e) = &result {
        tracing::error!(error = format!("{e:#}"), "worker stopped");
    }
    result
}

fn solve(args: SolveArgs) -> anyhow::Result<()> {
    let options = offline::Options {
        mode: match args.mode {
            ModeArg::First => Mode::First,
            ModeArg::Unique => Mode::Unique,
            ModeArg::Count => Mode::Count { limit: args.limit },
        },
        timeout: args.timeout_ms.map(Duration::from_millis),
        threads: match args.threads {
            Some(n) => n as usize,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        json: args.json,
    };
    let (input, size): (Box<dyn io::BufRead>, Option<u64>) = match &args.file {
        Some(path) if path.as_os_str() != "-" => {
            let file =
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            let size = file.metadata().ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 16, file)), size)
        }
        _ => (Box::new(io::stdin().lock()), None),
    };
    let bar = progress_bar(size);
    let result = offline::run(input, io::stdout(), &options, |bytes, summary| {
        bar.set_position(bytes);
        bar.set_message(format!("{} puzzles", summary.puzzles));
    });
    bar.finish_and_clear();
    match result {
        Ok(summary) => {
            eprintln!("{summary}");
            Ok(())
        }
        // A closed pipe (`sudokud solve big.txt | head`) is the reader's
        // choice, not a failure.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(e).context("solve failed"),
    }
}

/// A progress bar on standard error when it is a terminal: by bytes when
/// the input size is known, a spinner otherwise.
fn progress_bar(size: Option<u64>) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match size {
        Some(len) => ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
            .with_style(
                ProgressStyle::with_template(
                    "{bar:40} {percent:>3}% {msg} [{elapsed_precise}, eta {eta}]",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
