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
    /// Dead-lettered jobs (amqp.dead_letter_queue): list them, move them
    /// back to the jobs queue, or delete them.
    Dead(DeadArgs),
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

#[derive(clap::Args)]
struct DeadArgs {
    #[command(subcommand)]
    command: DeadCommand,
    /// Settings file (its `[amqp]` section), as for `run`; SUDOKUD__*
    /// variables override it.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Seconds to wait for the broker: to connect, and for each answer.
    #[arg(long, default_value_t = 10, global = true, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_secs: u64,
}

#[derive(Subcommand)]
enum DeadCommand {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Solve(args) => solve(args),
        Command::Enqueue(args) => enqueue(args),
        Command::Submit(args) => submit(args),
        Command::Health(args) => health(args),
        Command::Dead(args) => dead(args),
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

fn dead(args: DeadArgs) -> anyhow::Result<()> {
    let settings = sudokud::Settings::load(args.config.as_deref())?;
    let amqp = &settings.amqp;
    let timeout = Duration::from_secs(args.timeout_secs);
    let runtime = producer_runtime()?;
    match args.command {
        DeadCommand::List { limit, json } => {
            let listing = runtime.block_on(producer::dead::list(amqp, limit, timeout))?;
            let mut out = io::BufWriter::new(io::stdout().lock());
            print_dead_letters(&mut out, &listing.letters, json)
                .context("cannot write the list")?;
            io::Write::flush(&mut out).context("cannot write the list")?;
            eprintln!(
                "{} of {} dead letters in {}",
                listing.letters.len(),
                listing.total,
                listing.queue
            );
        }
        DeadCommand::Requeue { limit, ids } => {
            let selection = producer::dead::Selection { limit, ids };
            let summary = runtime.block_on(producer::dead::requeue(amqp, &selection, timeout))?;
            println!(
                "requeued {} dead letters from {} to {}; {} left",
                summary.requeued, summary.from, summary.to, summary.left
            );
            if !summary.not_found.is_empty() {
                anyhow::bail!("no dead letter with id {}", summary.not_found.join(", "));
            }
        }
        DeadCommand::Purge => {
            let purged = runtime.block_on(producer::dead::purge(amqp, timeout))?;
            println!(
                "purged {purged} dead letters from {}",
                amqp.dead_letter_queue
            );
        }
    }
    Ok(())
}

/// A table (or JSON lines) of dead letters.
fn print_dead_letters(
    out: &mut impl io::Write,
    letters: &[producer::dead::DeadLetter],
    json: bool,
) -> io::Result<()> {
    let time = |letter: &producer::dead::DeadLetter| {
        letter
            .time
            .map(|t| humantime::format_rfc3339_seconds(t).to_string())
    };
    if json {
        for letter in letters {
            let line = serde_json::json!({
                "position": letter.position,
                "id": letter.id,
                "reason": letter.reason,
                "deaths": letter.deaths,
                "time": time(letter),
                "queue": letter.queue,
                "bytes": letter.bytes,
            });
            writeln!(out, "{line}")?;
        }
        return Ok(());
    }
    if letters.is_empty() {
        return Ok(());
    }
    let rows: Vec<[String; 7]> = letters
        .iter()
        .map(|letter| {
            let or_dash = |value: Option<String>| value.unwrap_or_else(|| "-".into());
            [
                letter.position.to_string(),
                or_dash(letter.id.clone()),
                or_dash(letter.reason.clone()),
                letter.deaths.to_string(),
                or_dash(time(letter)),
                or_dash(letter.queue.clone()),
                letter.bytes.to_string(),
            ]
        })
        .collect();
    let header = [
        "#",
        "ID",
        "REASON",
        "DEATHS",
        "LAST DEATH",
        "QUEUE",
        "BYTES",
    ]
    .map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}
