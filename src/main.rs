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
use sudokud::producer;

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
    /// Put a file's jobs on the jobs queue (one puzzle or JSON job a line),
    /// each confirmed by the broker; results go to the results queue.
    Enqueue(EnqueueArgs),
    /// Send a file's jobs and write each answer as a JSON line; exits 1 if
    /// any job is unanswered when the wait is over.
    Submit(SubmitArgs),
    /// Check that the broker takes connections and the jobs queue exists:
    /// exit 0 (and one line on standard output) or 1 (and why).
    Health(HealthArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Settings file, instead of config/default.toml; SUDOKUD__SECTION__KEY
    /// environment variables override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
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
    /// Rate each puzzle with one solution by the hardest human technique
    /// it needs (docs/grading.md): plain output adds the score and the
    /// technique's name (`-` if not rated), last on the line.
    #[arg(long)]
    rate: bool,
    /// Give each puzzle's canonical (minlex) form, `0` for blanks: plain
    /// output adds it after the answer.
    #[arg(long)]
    canonical: bool,
}

/// What `enqueue` and `submit` share: where jobs come from, what they ask.
#[derive(clap::Args)]
struct JobArgs {
    /// Input file: one puzzle (81 cells, `.` or `0` blank, or a 9x9 JSON
    /// array) or one JSON job object a line; `-` or nothing reads standard
    /// input. Blank lines and lines starting with `#` are skipped.
    file: Option<PathBuf>,
    /// Settings file (its `[amqp]` section), instead of
    /// config/default.toml; SUDOKUD__AMQP__URL and the other
    /// SUDOKUD__SECTION__KEY variables override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Pack this many puzzle lines into one batch job (`puzzles`).
    #[arg(long, default_value_t = 1, value_name = "K")]
    batch: usize,
    /// `mode` of every job (the worker's default is `first`).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// `limit` of every job; with --mode count.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
    /// `timeout_ms` of every job: the worker gives up on a puzzle after
    /// this many milliseconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// Job ids become the strings PREFIX<line> instead of line numbers.
    #[arg(long, value_name = "PREFIX")]
    id_prefix: Option<String>,
    /// Seconds to wait for the broker to accept the connection.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    connect_timeout_secs: u64,
}

#[derive(clap::Args)]
struct EnqueueArgs {
    #[command(flatten)]
    jobs: JobArgs,
}

#[derive(clap::Args)]
struct SubmitArgs {
    #[command(flatten)]
    jobs: JobArgs,
    /// Write answers in input order, not as they arrive.
    #[arg(long)]
    ordered: bool,
    /// Once every job is sent and confirmed, wait at most this many
    /// seconds for the remaining answers; 0 waits as long as it takes.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    timeout: u64,
}

#[derive(clap::Args)]
struct HealthArgs {
    /// Settings file, as for `run`; SUDOKUD__* variables override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Fail unless the jobs queue has at least this many consumers.
    #[arg(long, default_value_t = 0, value_name = "N")]
    min_consumers: u32,
    /// Seconds one check may take (connect, then ask about the queue).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_secs: u64,
    /// Keep checking, once a second, for up to this many seconds until a
    /// check passes.
    #[arg(long, default_value_t = 0, value_name = "SECS")]
    wait: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Solve(args) => solve(args),
        Command::Enqueue(args) => enqueue(args),
        Command::Submit(args) => submit(args),
        Command::Health(args) => health(args),
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
        analyses: sudokud::protocol::Analyses {
            rate: args.rate,
            canonical: args.canonical,
        },
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

/// A runtime for the producer commands: one thread does all their work.
fn producer_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Settings, options and the checked input of `enqueue` and `submit`.
fn read_jobs(
    args: &JobArgs,
) -> anyhow::Result<(sudokud::Settings, producer::JobOptions, producer::Batch)> {
    let settings = sudokud::Settings::load(args.config.as_deref())?;
    let mode = args.mode.map(|mode| match mode {
        ModeArg::First => producer::JobMode::First,
        ModeArg::Unique => producer::JobMode::Unique,
        ModeArg::Count => producer::JobMode::Count,
    });
    if args.limit.is_some() && mode != Some(producer::JobMode::Count) {
        anyhow::bail!("--limit caps a count of solutions: use it with --mode count");
    }
    let options = producer::JobOptions {
        batch: args.batch,
        mode,
        limit: args.limit,
        timeout_ms: args.timeout_ms,
        id_prefix: args.id_prefix.clone(),
    };
    let limits = settings.limits();
    let batch = match &args.file {
        Some(path) if path.as_os_str() != "-" => {
            let file =
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            producer::input::read(BufReader::with_capacity(1 << 16, file), &options, &limits)
                .with_context(|| path.display().to_string())?
        }
        _ => producer::input::read(io::stdin().lock(), &options, &limits)
            .context("standard input")?,
    };
    Ok((settings, options, batch))
}

/// A bar counting up to `total` on standard error when it is a terminal.
fn count_bar(total: usize, unit: &str) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr())
        .with_style(
            ProgressStyle::with_template(&format!(
                "{{bar:40}} {{pos}}/{{len}} {unit} [{{elapsed_precise}}, eta {{eta}}]"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn enqueue(args: EnqueueArgs) -> anyhow::Result<()> {
    let (settings, _, batch) = read_jobs(&args.jobs)?;
    let bar = count_bar(batch.puzzles, "puzzles");
    let timeout = Duration::from_secs(args.jobs.connect_timeout_secs);
    let result = producer_runtime()?.block_on(producer::enqueue(
        &settings.amqp,
        &batch,
        timeout,
        |_, puzzles| bar.set_position(puzzles as u64),
    ));
    bar.finish_and_clear();
    let summary = result?;
    eprintln!("{summary} to {}", settings.amqp.jobs_queue);
    Ok(())
}

fn submit(args: SubmitArgs) -> anyhow::Result<()> {
    let (settings, job_options, batch) = read_jobs(&args.jobs)?;
    // Answers go to standard output; a bar only when they do not share
    // the terminal with it.
    let bar = if io::stdout().is_terminal() {
        ProgressBar::hidden()
    } else {
        count_bar(batch.messages.len(), "jobs answered")
    };
    let options = producer::SubmitOptions {
        ordered: args.ordered,
        timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
        connect_timeout: Duration::from_secs(args.jobs.connect_timeout_secs),
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    let result = producer_runtime()?.block_on(producer::submit(
        &settings.amqp,
        batch,
        &job_options,
        &options,
        &mut out,
        |answered| bar.set_position(answered as u64),
    ));
    bar.finish_and_clear();
    let summary = match result {
        Ok(summary) => summary,
        // The reader closed the pipe (`sudokud submit ... | head`).
        Err(e)
            if e.chain().any(|cause| {
                cause
                    .downcast_ref::<io::Error>()
                    .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            }) =>
        {
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    eprintln!("{summary}");
    if !summary.unanswered_lines.is_empty() {
        const SHOWN: usize = 20;
        let lines = &summary.unanswered_lines;
        let mut list: Vec<String> = lines.iter().take(SHOWN).map(|l| l.to_string()).collect();
        if lines.len() > SHOWN {
            list.push(format!("and {} more", lines.len() - SHOWN));
        }
        anyhow::bail!(
            "no answer within the wait for {} of {} jobs ({} puzzles), input lines {}",
            summary.messages - summary.answered,
            summary.messages,
            lines.len(),
            list.join(", ")
        );
    }
    Ok(())
}

fn health(args: HealthArgs) -> anyhow::Result<()> {
    let settings = sudokud::Settings::load(args.config.as_deref())?;
    let timeout = Duration::from_secs(args.timeout_secs);
    let report = producer_runtime()?
        .block_on(producer::health::check_until(
            &settings.amqp,
            args.min_consumers,
            timeout,
            Duration::from_secs(args.wait),
            Duration::from_secs(1),
        ))
        .context("unhealthy")?;
    println!("{report}");
    Ok(())
}
