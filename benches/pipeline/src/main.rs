//! The pipeline benchmark: the `sudokud run` worker against the local
//! RabbitMQ, beside a bare lapin loop doing the same broker work with no
//! solving (consume, publish a fixed result with confirms, ack): the
//! pipeline's physical limit on this machine.
//!
//! For batches it also runs a *solving loop*: the bare loop that parses and
//! solves each job inline before publishing its real result, one process
//! per solver thread. It has no pool, no hand-off between threads, no logs
//! and no metrics, so it is the fastest any worker could be on this
//! machine; the worker is measured against it too.
//!
//! Each run fills a fresh jobs queue, starts the consumer as its own
//! process (the real `sudokud` binary, or this binary's `bare` mode), and
//! times the results from the first to the last. Then, optionally, the
//! worker's resident memory with a deep backlog waiting.
//!
//! ```text
//! cargo build --release -p sudokud -p sudokud-pipeline
//! target/release/sudokud-pipeline            # all of it
//! target/release/sudokud-pipeline --help     # sizes, prefetch sweep, ...
//! ```

#[path = "../../data.rs"]
mod data;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, Subcommand};
use lapin::options::{
    BasicAckOptions, BasicPublishOptions, ConfirmSelectOptions, QueueDeleteOptions,
};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use serde_json::json;
use sudokud::Settings;
use sudokud::protocol::{self, Limits};
use sudokud_tools::{
    Consuming, consume_no_ack, consume_with_confirms, publish_confirmed, sudokud_binary,
};
use tokio_stream::StreamExt;

#[derive(Parser)]
#[command(about = "End-to-end throughput and memory of the sudokud worker")]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    bench: BenchArgs,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Broker.
    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    url: String,
    /// One-puzzle jobs per run (0: none).
    #[arg(long, default_value_t = 20_000)]
    jobs: usize,
    /// Batch jobs (of --batch puzzles) per run (0: none).
    #[arg(long, default_value_t = 1_000)]
    batches: usize,
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Puzzle file, one a line (default: `puzzles2_17_clue.txt` in the
    /// directory named by `SUDOKUD_DATA`, or 50,000 generated puzzles when
    /// it is unset).
    #[arg(long)]
    puzzles: Option<PathBuf>,
    /// The worker binary (default: `sudokud` beside this one).
    #[arg(long)]
    sudokud: Option<PathBuf>,
    /// Solver threads of the worker (default: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Prefetch values to compare on one-puzzle jobs (worker and bare
    /// loop); empty: only the configured default.
    #[arg(long, value_delimiter = ',')]
    sweep: Vec<u16>,
    /// Jobs waiting in the queue for the memory measurement; 0 skips it.
    #[arg(long, default_value_t = 1_000_000)]
    rss_jobs: usize,
    /// Skip the throughput runs.
    #[arg(long)]
    rss_only: bool,
    /// Let the bare loop acknowledge every Nth job with one `multiple`
    /// frame (as the worker coalesces its acknowledgements) instead of
    /// each job with its own.
    #[arg(long, default_value_t = 1)]
    bare_ack_every: u64,
    /// Runs of each measurement (alternating bare loop and worker); the
    /// medians are reported, since a shared machine is noisy.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

#[derive(Subcommand)]
enum Mode {
    /// The bare loop, as a process of its own (used by the benchmark).
    Bare {
        #[arg(long)]
        url: String,
        #[arg(long)]
        jobs_queue: String,
        #[arg(long)]
        results_queue: String,
        #[arg(long)]
        prefetch: u16,
        /// Puzzles per result (1: a one-puzzle result; more: a batch).
        #[arg(long)]
        puzzles: usize,
        /// Acknowledge every Nth job with `multiple` instead of each job.
        #[arg(long, default_value_t = 1)]
        ack_every: u64,
        /// Parse and solve each job on this loop's one thread and publish
        /// its real result, instead of the fixed one.
        #[arg(long)]
        solve: bool,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match cli.mode {
        Some(Mode::Bare {
            url,
            jobs_queue,
            results_queue,
            prefetch,
            puzzles,
            ack_every,
            solve,
        }) => runtime.block_on(bare_loop(
            &url,
            &jobs_queue,
            &results_queue,
            prefetch,
            if solve {
                ResultBody::Solve(Limits::default())
            } else {
                ResultBody::Fixed(fixed_result(puzzles))
            },
            ack_every,
        )),
        None => runtime.block_on(bench(cli.bench)),
    }
}

/// A result as big as the worker's: `puzzles` solved answers.
fn fixed_result(puzzles: usize) -> Vec<u8> {
    let answer = json!({
        "status": "solved",
        "solution": "534678912672195348198342567859761423426853791713924856961537284287419635345286179",
        "guesses": 0,
        "elapsed_us": 3,
    });
    let body = if puzzles == 1 {
        let mut one = answer;
        one["id"] = json!(123456);
        one["worker"] = json!("bench/1");
        one
    } else {
        json!({"id": 123456, "results": vec![answer; puzzles], "worker": "bench/1"})
    };
    serde_json::to_vec(&body).unwrap_or_default()
}

/// What the bare loop publishes for each job.
enum ResultBody {
    /// The same body every time.
    Fixed(Vec<u8>),
    /// The job's real result, solved inline.
    Solve(Limits),
}

impl ResultBody {
    fn body<'a>(&'a self, job: &[u8]) -> std::borrow::Cow<'a, [u8]> {
        match self {
            ResultBody::Fixed(body) => body.as_slice().into(),
            ResultBody::Solve(limits) => solve_inline(job, limits).into(),
        }
    }
}

/// The job's result message, as the worker would publish it, computed on
/// the calling thread.
fn solve_inline(body: &[u8], limits: &Limits) -> Vec<u8> {
    let answerer = protocol::Answerer::new(sudokud::solve, "bench/1");
    let max_job = Duration::from_secs(600);
    protocol::answer_job(body, None, limits, Instant::now(), max_job, &answerer).body
}

/// Consume, publish a result (persistent, mandatory, confirmed), ack once
/// confirmed; confirms pipelined as the worker's are.
async fn bare_loop(
    url: &str,
    jobs_queue: &str,
    results_queue: &str,
    prefetch: u16,
    result: ResultBody,
    ack_every: u64,
) -> anyhow::Result<()> {
    let connection = Connection::connect(url, ConnectionProperties::default()).await?;
    let Consuming {
        jobs: _jobs,
        mut consumer,
        results,
    } = consume_with_confirms(&connection, jobs_queue, prefetch).await?;
    let mut acks = tokio::task::JoinSet::new();
    // With `ack_every` above 1, acknowledgements go out in delivery order
    // from one task, one `multiple` frame per `ack_every` jobs.
    let every = ack_every.max(1);
    let (ordered, mut ordered_rx) =
        tokio::sync::mpsc::unbounded_channel::<(lapin::PublisherConfirm, lapin::Acker, u64)>();
    acks.spawn(async move {
        while let Some((confirm, acker, tag)) = ordered_rx.recv().await {
            if let Ok(c) = confirm.await
                && c.is_ack()
                && tag % every == 0
            {
                let _ = acker.ack(BasicAckOptions { multiple: true }).await;
            }
        }
    });
    while let Some(delivery) = consumer.next().await {
        let delivery = delivery?;
        let properties = BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into());
        let confirm = results
            .basic_publish(
                "".into(),
                results_queue.into(),
                BasicPublishOptions {
                    mandatory: true,
                    immediate: false,
                },
                &result.body(&delivery.data),
                properties,
            )
            .await?;
        let acker = delivery.acker;
        let tag = delivery.delivery_tag;
        if every > 1 {
            let _ = ordered.send((confirm, acker, tag));
        } else {
            acks.spawn(async move {
                if let Ok(confirmation) = confirm.await
                    && confirmation.is_ack()
                {
                    let _ = acker.ack(BasicAckOptions::default()).await;
                }
            });
        }
        while acks.try_join_next().is_some() {}
    }
    Ok(())
}

struct Queues {
    settings: Settings,
}

impl Queues {
    fn new(url: &str, tag: &str) -> Queues {
        let mut settings = Settings::default();
        settings.amqp.url = url.to_string();
        let prefix = format!("bench.pipeline.{}.{tag}", std::process::id());
        settings.amqp.jobs_queue = format!("{prefix}.jobs");
        settings.amqp.results_queue = format!("{prefix}.results");
        settings.amqp.dead_letter_queue = format!("{prefix}.dead");
        Queues { settings }
    }

    fn env(&self, prefetch: u16, threads: usize) -> Vec<(String, String)> {
        let a = &self.settings.amqp;
        vec![
            ("SUDOKUD__AMQP__URL".into(), a.url.clone()),
            ("SUDOKUD__AMQP__JOBS_QUEUE".into(), a.jobs_queue.clone()),
            (
                "SUDOKUD__AMQP__RESULTS_QUEUE".into(),
                a.results_queue.clone(),
            ),
            (
                "SUDOKUD__AMQP__DEAD_LETTER_QUEUE".into(),
                a.dead_letter_queue.clone(),
            ),
            ("SUDOKUD__WORKER__PREFETCH".into(), prefetch.to_string()),
            ("SUDOKUD__WORKER__THREADS".into(), threads.to_string()),
        ]
    }

    async fn declare(&self, channel: &Channel) -> anyhow::Result<()> {
        sudokud::broker::declare_topology(channel, &self.settings.amqp).await
    }

    async fn delete(&self, channel: &Channel) {
        let a = &self.settings.amqp;
        for queue in [&a.jobs_queue, &a.results_queue, &a.dead_letter_queue] {
            let _ = channel
                .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
                .await;
        }
    }
}

/// Publishes `bodies` to `queue`, persistent, all confirmed.
async fn fill(
    channel: &Channel,
    queue: &str,
    bodies: impl Iterator<Item = Vec<u8>>,
) -> anyhow::Result<usize> {
    let persistent = BasicProperties::default().with_delivery_mode(2);
    publish_confirmed(channel, queue, bodies, &persistent).await
}

/// Reads `n` results and returns the time from the first to the last.
async fn collect(channel: &Channel, queue: &str, n: usize) -> anyhow::Result<Duration> {
    let mut consumer = consume_no_ack(channel, queue).await?;
    let mut first = None;
    let mut last = Instant::now();
    for seen in 0..n {
        let next = tokio::time::timeout(Duration::from_secs(120), consumer.next())
            .await
            .with_context(|| format!("only {seen} of {n} results within 120 s"))?;
        next.context("the result consumer ended")??;
        last = Instant::now();
        first.get_or_insert(last);
    }
    channel
        .basic_cancel(consumer.tag(), Default::default())
        .await?;
    Ok(last - first.unwrap_or(last))
}

/// The consumer processes of one run; stopped (TERM, then KILL after 30 s)
/// when dropped.
struct Consumer(Vec<Child>);

impl Consumer {
    /// User and system CPU time of all its processes.
    fn cpu_seconds(&self) -> f64 {
        self.0.iter().filter_map(|c| cpu_seconds(c.id())).sum()
    }

    /// Context switches, voluntary and not, of all its processes' threads
    /// (those still running: a process's own count covers only its main
    /// thread).
    fn context_switches(&self) -> u64 {
        self.0.iter().map(|c| context_switches(c.id())).sum()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        for child in &self.0 {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for child in &mut self.0 {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Who {
    Worker,
    Bare,
    /// The bare loop solving inline, one process per solver thread, each
    /// acknowledging jobs in groups of half its prefetch.
    Solving,
}

struct Bench {
    args: BenchArgs,
    sudokud: PathBuf,
    connection: Connection,
    channel: Channel,
    puzzles: Vec<String>,
    threads: usize,
    runs: usize,
    /// CPU time (us) and context switches of the consumer per job, for
    /// each run.
    cost_per_job: Vec<(f64, f64)>,
}

impl Bench {
    fn start(
        &self,
        who: Who,
        queues: &Queues,
        prefetch: u16,
        puzzles: usize,
    ) -> anyhow::Result<Consumer> {
        let a = &queues.settings.amqp;
        let bare = |prefetch: u16, ack_every: u64| -> anyhow::Result<Command> {
            let mut command = Command::new(std::env::current_exe()?);
            command
                .args(["bare", "--url", &a.url, "--jobs-queue", &a.jobs_queue])
                .args(["--results-queue", &a.results_queue])
                .args(["--prefetch", &prefetch.to_string()])
                .args(["--puzzles", &puzzles.to_string()])
                .args(["--ack-every", &ack_every.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            Ok(command)
        };
        let children = match who {
            Who::Worker => vec![
                Command::new(&self.sudokud)
                    .arg("run")
                    .current_dir(std::env::temp_dir())
                    .env_remove("RUST_LOG")
                    .envs(queues.env(prefetch, self.threads))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .with_context(|| format!("cannot start {}", self.sudokud.display()))?,
            ],
            Who::Bare => vec![bare(prefetch, self.args.bare_ack_every)?.spawn()?],
            Who::Solving => {
                // As the worker does, one `multiple` acknowledgement for
                // many jobs, so that the bound is not set by acknowledging.
                let share = prefetch.div_ceil(self.threads as u16).max(1);
                let ack_every = u64::from(share / 2).max(1);
                (0..self.threads)
                    .map(|_| Ok(bare(share, ack_every)?.arg("--solve").spawn()?))
                    .collect::<anyhow::Result<_>>()?
            }
        };
        Ok(Consumer(children))
    }

    /// Messages per second through `who`, with `batch` puzzles a job.
    async fn run(
        &mut self,
        who: Who,
        prefetch: u16,
        jobs: usize,
        batch: usize,
    ) -> anyhow::Result<f64> {
        self.runs += 1;
        let queues = Queues::new(&self.args.url, &format!("run{}", self.runs));
        queues.declare(&self.channel).await?;
        let puzzles = &self.puzzles;
        let bodies = (0..jobs).map(|i| {
            let body = if batch == 1 {
                json!({"id": i, "puzzle": puzzles[i % puzzles.len()]})
            } else {
                let start = i * batch;
                let items: Vec<&String> = (start..start + batch)
                    .map(|k| &puzzles[k % puzzles.len()])
                    .collect();
                json!({"id": i, "puzzles": items})
            };
            serde_json::to_vec(&body).unwrap_or_default()
        });
        fill(&self.channel, &queues.settings.amqp.jobs_queue, bodies).await?;
        let consumer = self.start(who, &queues, prefetch, batch)?;
        let collector = self.connection.create_channel().await?;
        let elapsed = collect(&collector, &queues.settings.amqp.results_queue, jobs).await;
        let cpu = consumer.cpu_seconds();
        let switches = consumer.context_switches();
        self.cost_per_job
            .push((cpu * 1e6 / jobs as f64, switches as f64 / jobs as f64));
        drop(consumer);
        let _ = collector.close(200, "OK".into()).await;
        queues.delete(&self.channel).await;
        let elapsed = elapsed?;
        Ok((jobs - 1) as f64 / elapsed.as_secs_f64().max(1e-9))
    }

    /// `repeat` rounds, each running every consumer of `whos` in turn:
    /// per consumer, its rate (messages/s) and CPU per job (us) in each
    /// round.
    async fn rounds(
        &mut self,
        whos: &[Who],
        prefetch: u16,
        jobs: usize,
        batch: usize,
        repeat: usize,
    ) -> anyhow::Result<Vec<Rounds>> {
        let mut all: Vec<Rounds> = whos.iter().map(|_| Rounds::default()).collect();
        for _ in 0..repeat {
            for (who, rounds) in whos.iter().zip(&mut all) {
                rounds
                    .rates
                    .push(self.run(*who, prefetch, jobs, batch).await?);
                if let Some((cpu_us, switches)) = self.cost_per_job.pop() {
                    rounds.cpu_us.push(cpu_us);
                    rounds.switches.push(switches);
                }
            }
        }
        Ok(all)
    }

    /// The worker's largest resident set while it works through a deep
    /// backlog, in KiB.
    async fn rss(&mut self, jobs: usize) -> anyhow::Result<(u64, usize)> {
        let queues = Queues::new(&self.args.url, "rss");
        queues.declare(&self.channel).await?;
        let puzzles = &self.puzzles;
        let started = Instant::now();
        let bodies = (0..jobs).map(|i| {
            serde_json::to_vec(&json!({"id": i, "puzzle": puzzles[i % puzzles.len()]}))
                .unwrap_or_default()
        });
        fill(&self.channel, &queues.settings.amqp.jobs_queue, bodies).await?;
        eprintln!(
            "  filled {jobs} jobs in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        let consumer = self.start(Who::Worker, &queues, 0, 1)?;
        let pid = consumer.0.first().map_or(0, Child::id);
        let collector = self.connection.create_channel().await?;
        let mut results = consume_no_ack(&collector, &queues.settings.amqp.results_queue).await?;
        let mut peak = 0;
        let mut answered = 0;
        let until = Instant::now() + Duration::from_secs(8);
        let mut sample = tokio::time::interval(Duration::from_millis(100));
        while Instant::now() < until {
            tokio::select! {
                _ = sample.tick() => peak = peak.max(rss_kib(pid).unwrap_or(0)),
                Some(_) = results.next() => answered += 1,
            }
        }
        drop(consumer);
        let _ = collector.close(200, "OK".into()).await;
        queues.delete(&self.channel).await;
        Ok((peak, answered))
    }
}

/// One consumer's figures over the rounds of a comparison.
#[derive(Default)]
struct Rounds {
    rates: Vec<f64>,
    cpu_us: Vec<f64>,
    /// Context switches per job.
    switches: Vec<f64>,
}

impl Rounds {
    fn rate(&self) -> f64 {
        median(self.rates.clone())
    }

    fn cpu_us(&self) -> f64 {
        median(self.cpu_us.clone())
    }

    fn switches(&self) -> f64 {
        median(self.switches.clone())
    }

    /// Median over the rounds of this rate over `other`'s in the same round.
    fn ratio(&self, other: &Rounds) -> f64 {
        median(
            self.rates
                .iter()
                .zip(&other.rates)
                .map(|(a, b)| a / b)
                .collect(),
        )
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// User and system CPU time a process has used.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // Linux reports in clock ticks, 100 a second on every mainstream build.
    Some((utime + stime) / 100.0)
}

/// Context switches of every thread of a process still running.
fn context_switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `sudokud solve`'s rate on the same puzzles (on its standard input),
/// from its summary line.
fn offline_rate(sudokud: &PathBuf, puzzles: &[String]) -> anyhow::Result<f64> {
    let mut child = Command::new(sudokud)
        .args(["solve", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut input = child.stdin.take().context("stdin is piped")?;
    let text = puzzles.join("\n") + "\n";
    // Written from a thread of its own: `sudokud solve` answers while it
    // reads, and its output is not read here.
    let writer = std::thread::spawn(move || input.write_all(text.as_bytes()));
    let output = child.wait_with_output()?;
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread panicked"))??;
    let summary = String::from_utf8_lossy(&output.stderr);
    let rate = summary
        .split('(')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("cannot read the rate in {summary:?}"))?;
    Ok(rate)
}

async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let sudokud = sudokud_binary(args.sudokud.as_deref())?;
    let set = puzzle_set(args.puzzles.as_deref())?;
    println!("puzzles: {} ({})", set.name, set.puzzles.len());
    let puzzles = set.puzzles;
    let connection = Connection::connect(&args.url, ConnectionProperties::default())
        .await
        .context("the benchmark needs RabbitMQ on localhost")?;
    let channel = connection.create_channel().await?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    let mut settings = Settings::default();
    settings.worker.threads = args.threads;
    let threads = settings.worker.threads();
    let prefetch = settings.worker.prefetch();
    let mut bench = Bench {
        sudokud,
        connection,
        channel,
        puzzles,
        threads,
        runs: 0,
        cost_per_job: Vec::new(),
        args,
    };
    println!(
        "machine: {} cores; worker: {threads} solver threads, default prefetch {prefetch}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if bench.args.bare_ack_every > 1 {
        println!(
            "bare loop: one `multiple` acknowledgement every {} jobs",
            bench.args.bare_ack_every
        );
    } else {
        println!("bare loop: one acknowledgement per job");
    }
    if !bench.args.rss_only {
        let repeat = bench.args.repeat.max(1);
        bench.one_puzzle_jobs(prefetch, repeat).await?;
        bench.batch_jobs(prefetch, repeat).await?;
    }
    if bench.args.rss_jobs > 0 {
        let jobs = bench.args.rss_jobs;
        println!("\nmemory with {jobs} jobs waiting:");
        let (peak, answered) = bench.rss(jobs).await?;
        println!(
            "  worker peak RSS {:.1} MiB over 8 s ({answered} jobs answered meanwhile)",
            peak as f64 / 1024.0
        );
    }
    Ok(())
}

/// The puzzles of a run: the file given, or the 17-clue set (from
/// `SUDOKUD_DATA`, or generated puzzles without it).
fn puzzle_set(path: Option<&std::path::Path>) -> anyhow::Result<data::Set> {
    Ok(match path {
        Some(path) => data::Set {
            name: path.display().to_string(),
            puzzles: std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?
                .lines()
                .map(str::trim)
                .filter(|l| l.len() == 81)
                .map(str::to_string)
                .collect(),
        },
        None => data::sets(&[(
            "17_clue",
            "puzzles2_17_clue.txt",
            usize::MAX,
            data::Kind::Easy,
        )])
        .remove(0),
    })
}

impl Bench {
    /// One-puzzle jobs through the bare loop and the worker, at each
    /// prefetch of the sweep (the default prefetch without one).
    async fn one_puzzle_jobs(&mut self, prefetch: u16, repeat: usize) -> anyhow::Result<()> {
        let jobs = self.args.jobs;
        let sweep = if jobs == 0 {
            Vec::new()
        } else if self.args.sweep.is_empty() {
            vec![prefetch]
        } else {
            self.args.sweep.clone()
        };
        if !sweep.is_empty() {
            println!("\none-puzzle jobs ({jobs} a run, median of {repeat} runs), jobs/s:");
            println!(
                "{:>9} {:>10} {:>10} {:>6}",
                "prefetch", "worker", "bare loop", "ratio"
            );
        }
        for p in sweep {
            let r = self
                .rounds(&[Who::Bare, Who::Worker], p, jobs, 1, repeat)
                .await?;
            let (bare, worker) = (&r[0], &r[1]);
            println!(
                "{p:>9} {:>10.0} {:>10.0} {:>6.2}   (per job: worker {:.0} us CPU, {:.2} context switches; bare loop {:.0} us, {:.2})",
                worker.rate(),
                bare.rate(),
                worker.ratio(bare),
                worker.cpu_us(),
                worker.switches(),
                bare.cpu_us(),
                bare.switches()
            );
        }
        Ok(())
    }

    /// Batch jobs through the bare loop, the solving loop and the worker,
    /// beside the offline rate.
    async fn batch_jobs(&mut self, prefetch: u16, repeat: usize) -> anyhow::Result<()> {
        let batches = self.args.batches;
        let size = self.args.batch;
        if batches > 0 && size > 0 {
            let r = self
                .rounds(
                    &[Who::Bare, Who::Solving, Who::Worker],
                    prefetch,
                    batches,
                    size,
                    repeat,
                )
                .await?;
            let (bare, solving, worker) = (&r[0], &r[1], &r[2]);
            let offline = offline_rate(&self.sudokud, &self.puzzles)?;
            let per_puzzle = size as f64;
            println!(
                "\nbatch jobs of {size} ({batches} a run, median of {repeat} runs), puzzles/s:"
            );
            for (name, r) in [
                ("bare loop", bare),
                ("solving loop", solving),
                ("worker", worker),
            ] {
                println!(
                    "  {name:<13} {:>8.0}   (per job {:.0} us CPU, {:.2} context switches)",
                    r.rate() * per_puzzle,
                    r.cpu_us(),
                    r.switches()
                );
            }
            println!("  offline `sudokud solve` {offline:.0}");
            let limit = bare.rate() * per_puzzle;
            let floor = if offline < limit {
                offline / limit
            } else {
                1.0
            };
            println!(
                "  worker / min(bare loop, offline): {:.2}",
                worker.ratio(bare) / floor
            );
            println!(
                "  solving loop / min(bare loop, offline): {:.2}   (the most any worker reaches here)",
                solving.ratio(bare) / floor
            );
            println!("  worker / solving loop: {:.2}", worker.ratio(solving));
        }
        Ok(())
    }
}
