//! The `sudokud` command: parses arguments, sets up logging, and hands
//! over to the library.

mod cli;
mod progress;

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

use cli::{
    Cli, Command, DeadArgs, DeadCommand, EnqueueArgs, GenerateArgs, HealthArgs, JobArgs, RunArgs,
    SolveArgs, SubmitArgs,
};
use sudokud::offline::generate::Ended;
use sudokud::producer;
use sudokud::producer::Source;
use sudokud::{Settings, offline};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args).map_err(EarlyEnd::Failed),
        Command::Solve(args) => ended_early(solve(args)),
        Command::Generate(args) => ended_early(generate(args)),
        Command::Enqueue(args) => enqueue(args).map_err(EarlyEnd::Failed),
        Command::Submit(args) => submit(args).map_err(EarlyEnd::Failed),
        Command::Health(args) => health(args).map_err(EarlyEnd::Failed),
        Command::Dead(args) => dead(args).map_err(EarlyEnd::Failed),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(EarlyEnd::Status(status)) => ExitCode::from(status),
        Err(EarlyEnd::Failed(e)) => {
            eprintln!("sudokud: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Why a command did not end with status 0.
enum EarlyEnd {
    /// It stopped early by design (a time limit, a signal) with this exit
    /// status, having written what it made.
    Status(u8),
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for EarlyEnd {
    fn from(e: anyhow::Error) -> Self {
        EarlyEnd::Failed(e)
    }
}

/// A command's result, with the exit status it asks for when it ended
/// early on purpose (`Some`).
fn ended_early(result: anyhow::Result<Option<u8>>) -> Result<(), EarlyEnd> {
    match result? {
        Some(status) => Err(EarlyEnd::Status(status)),
        None => Ok(()),
    }
}

/// A flag the first SIGINT or SIGTERM sets, for a command that then stops
/// early and keeps what it made, and the exit status that signal calls for
/// (128 + its number). A second signal ends the process at once with its
/// status, unless it comes within [`SAME_REQUEST`] of the first: coreutils
/// `timeout` sends its signal to the command and then to the whole process
/// group, so one request arrives twice. The signals are taken on a thread
/// of their own (`signal-hook`'s iterator), which can read the clock.
struct Interrupt {
    flag: Arc<AtomicBool>,
    caught: Arc<AtomicUsize>,
}

/// How soon after the first a signal is the same request delivered again
/// rather than a second one (a person pressing Ctrl-C twice is slower).
const SAME_REQUEST: Duration = Duration::from_millis(200);

impl Interrupt {
    fn listen() -> anyhow::Result<Interrupt> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        use signal_hook::iterator::Signals;
        let mut signals = Signals::new([SIGINT, SIGTERM]).context("cannot listen for signals")?;
        let interrupt = Interrupt {
            flag: Arc::new(AtomicBool::new(false)),
            caught: Arc::new(AtomicUsize::new(0)),
        };
        let (flag, caught) = (Arc::clone(&interrupt.flag), Arc::clone(&interrupt.caught));
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let mut first: Option<Instant> = None;
                for signal in signals.forever() {
                    match first {
                        None => {
                            caught.store(signal as usize, Ordering::Relaxed);
                            flag.store(true, Ordering::Release);
                            first = Some(Instant::now());
                        }
                        Some(at) if at.elapsed() < SAME_REQUEST => {}
                        Some(_) => std::process::exit(128 + signal),
                    }
                }
            })
            .context("cannot start the signal thread")?;
        Ok(interrupt)
    }

    /// The exit status the signal received calls for.
    fn status(&self) -> u8 {
        u8::try_from(128 + self.caught.load(Ordering::Relaxed)).unwrap_or(u8::MAX)
    }
}

/// The outcome of a command that writes to standard output, `None` if the
/// reader closed it (`sudokud solve big.txt | head`): the reader's choice,
/// not a failure.
fn unless_stdout_closed<T>(result: anyhow::Result<T>) -> anyhow::Result<Option<T>> {
    match result {
        Err(e)
            if e.chain().any(|cause| {
                cause
                    .downcast_ref::<io::Error>()
                    .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            }) =>
        {
            Ok(None)
        }
        result => result.map(Some),
    }
}

/// The async runtime of every command: one thread is plenty for the broker
/// side (solving has threads of its own), and saves the cross-thread
/// wake-ups of a work-stealing scheduler on every message.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn run(args: RunArgs) -> anyhow::Result<()> {
    let settings = Settings::load(args.config.as_deref())?;
    sudokud::telemetry::init(&settings.log)?;
    let result = runtime()?.block_on(sudokud::worker::run(
        settings,
        sudokud::worker::shutdown_signal(),
    ));
    if let Err(e) = &result {
        tracing::error!(error = format!("{e:#}"), "worker stopped");
    }
    result
}

/// `sudokud solve`; the exit status when a signal stopped it early.
fn solve(args: SolveArgs) -> anyhow::Result<Option<u8>> {
    let interrupt = Interrupt::listen()?;
    let options = offline::Options {
        mode: args.mode.solver_mode(args.limit),
        timeout: args.timeout_ms.map(Duration::from_millis),
        threads: args.output.threads(),
        json: args.output.json,
        analyses: args.output.analyses(),
        interrupted: Some(Arc::clone(&interrupt.flag)),
    };
    let input = Source::open(args.file.as_deref())?;
    let bar = progress::bytes(input.size);
    let result = offline::run(input.reader, io::stdout(), &options, |bytes, summary| {
        if !bar.is_hidden() {
            bar.set_position(bytes);
            bar.set_message(format!("{} puzzles", summary.puzzles));
        }
    });
    bar.finish_and_clear();
    let Some(summary) = unless_stdout_closed(result.context("solve failed"))? else {
        return Ok(None);
    };
    // One write, not one per piece of the format (standard error is
    // unbuffered).
    io::stderr().write_all(format!("{summary}\n").as_bytes())?;
    Ok(summary.interrupted.then(|| interrupt.status()))
}

/// Exit status of `generate` when its time limit stopped it before
/// `--count` puzzles (documented in its `--timeout-ms`).
const TIME_LIMIT_STATUS: u8 = 3;

/// `sudokud generate`; the exit status when it ended early (`None` when
/// every puzzle was made).
fn generate(args: GenerateArgs) -> anyhow::Result<Option<u8>> {
    use sudokud::solver::{Generator, MIN_GIVENS, Spec};
    let technique = match &args.technique {
        Some(name) => {
            Some(sudokud::protocol::generation::technique(name).map_err(anyhow::Error::msg)?)
        }
        None => None,
    };
    let spec = Spec {
        seed: args
            .seed
            .unwrap_or_else(sudokud::protocol::generation::random_seed),
        symmetry: args.symmetry,
        minimal: !args.no_minimal,
        givens: args
            .givens
            .map(|(min, max)| (min.unwrap_or(MIN_GIVENS), max.unwrap_or(81))),
        difficulty: args
            .difficulty
            .map(|(min, max)| (min.unwrap_or(0.0), max.unwrap_or(f64::MAX))),
        technique,
        ..Spec::default()
    };
    let generator = Generator::new(spec)
        .map_err(anyhow::Error::msg)
        .context("bad parameters")?;
    // The first SIGINT or SIGTERM ends the run early, keeping what it
    // made; a second ends the process at once.
    let interrupt = Interrupt::listen()?;
    let options = offline::generate::Options {
        generator,
        count: args.count,
        threads: args.output.threads(),
        json: args.output.json,
        analyses: args.output.analyses(),
        until: offline::generate::Until {
            deadline: args
                .timeout_ms
                .map(|ms| Instant::now() + Duration::from_millis(ms)),
            interrupted: Some(Arc::clone(&interrupt.flag)),
        },
    };
    let bar = progress::count_beside_stdout(args.count as usize, "puzzles");
    let result = offline::generate::run(io::stdout(), &options, |summary| {
        bar.set_position(summary.made);
    });
    bar.finish_and_clear();
    let Some(summary) = unless_stdout_closed(result.context("generate failed"))? else {
        return Ok(None);
    };
    io::stderr().write_all(format!("{summary}\n").as_bytes())?;
    Ok(match summary.ended {
        Ended::Complete => None,
        Ended::TimeLimit => Some(TIME_LIMIT_STATUS),
        Ended::Interrupted => Some(interrupt.status()),
    })
}

/// Settings and the checked input of `enqueue` and `submit`.
fn read_jobs(args: &JobArgs) -> anyhow::Result<(Settings, producer::Batch)> {
    let settings = Settings::load(args.config.as_deref())?;
    let batch = producer::read_source(args.file.as_deref(), &args.options(), &settings.limits())?;
    Ok((settings, batch))
}

fn enqueue(args: EnqueueArgs) -> anyhow::Result<()> {
    let (settings, batch) = read_jobs(&args.jobs)?;
    let bar = progress::count(batch.puzzles, "puzzles");
    let result = runtime()?.block_on(producer::enqueue(
        &settings.amqp,
        &batch,
        Duration::from_secs(args.jobs.connect_timeout_secs),
        |_, puzzles| bar.set_position(puzzles as u64),
    ));
    bar.finish_and_clear();
    eprintln!("{} to {}", result?, settings.amqp.jobs_queue);
    Ok(())
}

fn submit(args: SubmitArgs) -> anyhow::Result<()> {
    let (settings, batch) = read_jobs(&args.jobs)?;
    let bar = progress::count_beside_stdout(batch.messages.len(), "jobs answered");
    let options = producer::SubmitOptions {
        ordered: args.ordered,
        timeout: (args.wait_secs > 0).then(|| Duration::from_secs(args.wait_secs)),
        connect_timeout: Duration::from_secs(args.jobs.connect_timeout_secs),
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    let result = runtime()?.block_on(producer::submit(
        &settings.amqp,
        batch,
        &args.jobs.options(),
        &options,
        &mut out,
        |answered| bar.set_position(answered as u64),
    ));
    bar.finish_and_clear();
    let Some(summary) = unless_stdout_closed(result)? else {
        return Ok(());
    };
    eprintln!("{summary}");
    summary.check_answered()
}

fn health(args: HealthArgs) -> anyhow::Result<()> {
    let settings = Settings::load(args.config.as_deref())?;
    if args.worker {
        return worker_health(&settings, &args);
    }
    let report = runtime()?
        .block_on(producer::health::check_until(
            &settings.amqp,
            args.min_consumers,
            Duration::from_secs(args.timeout_secs),
            Duration::from_secs(args.wait_secs),
            Duration::from_secs(1),
        ))
        .context("unhealthy")?;
    println!("{report}");
    Ok(())
}

/// `health --worker`: this machine's worker, through its `/readyz`.
fn worker_health(settings: &Settings, args: &HealthArgs) -> anyhow::Result<()> {
    use sudokud::metrics::probe;
    let addr = probe::local_address(&settings.metrics)?;
    let timeout = Duration::from_secs(args.timeout_secs);
    let line = runtime()?
        .block_on(producer::health::retry_until(
            Duration::from_secs(args.wait_secs),
            Duration::from_secs(1),
            || probe::readyz(addr, timeout),
        ))
        .context("unhealthy")?;
    println!("ok: the worker on {addr}: {line}");
    Ok(())
}

fn dead(args: DeadArgs) -> anyhow::Result<()> {
    let settings = Settings::load(args.config.as_deref())?;
    let amqp = &settings.amqp;
    let timeout = Duration::from_secs(args.timeout_secs);
    let runtime = runtime()?;
    match args.command {
        DeadCommand::List { limit, json } => {
            let listing = runtime.block_on(producer::dead::list(amqp, limit, timeout))?;
            let mut out = io::BufWriter::new(io::stdout().lock());
            producer::dead::write_listing(&mut out, &listing.letters, json)
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
