//! The soak: a long stream of jobs through real `sudokud` worker processes
//! while faults are injected one after another, on the dedicated fault node
//! (`scripts/fault-node.sh`, AMQP port 5673) and nowhere else.
//!
//! 1. Publishes `--jobs` one-puzzle jobs (19 in 20 from
//!    `puzzles2_17_clue.txt`, 1 in 20 from `mixed_hard.txt`, both in the
//!    directory named by `SUDOKUD_DATA`, README.md "Puzzle sets"; without
//!    it, generated easy and hard puzzles; ids 0..N) with publisher confirms, to
//!    queues of its own (`soak.<pid>.jobs/results/dead`), before any worker
//!    runs.
//! 2. Starts `--workers` worker processes, a results collector (it
//!    reconnects through every fault, verifies every solution, and counts
//!    distinct ids and duplicate answers), and a fault loop: every
//!    `--fault-every` seconds the next fault of the cycle: a broker restart
//!    (`stop_app`, 3 s, `start_app`), SIGKILL of a random worker (a
//!    replacement starts at once, as a supervisor would start one), a
//!    memory alarm (a tiny watermark for 5 s). A fault also waits until
//!    answers have resumed after the one before, so that each recovery is
//!    measured on its own. A worker that exits on its own is restarted
//!    too, and fails the run.
//!
//! Each fault's recovery is the time from its end (`start_app` returned,
//! the replacement started, the command clearing the alarm returned) to
//! the next job answered for the first time. After a broker restart, the
//! first answers the collector reads may be results stored before the
//! stop; the longest pause in first answers around the fault is reported
//! beside it.
//! 3. When every job is answered: SIGTERM to the workers (each must exit
//!    0), the jobs and dead-letter queues must be empty, the queues are
//!    deleted, and a summary is printed. The exit status is non-zero if a
//!    job was lost or answered wrongly, a queue was not empty, a worker
//!    crashed or did not stop cleanly, or the run took longer than
//!    `--max-minutes`.
//!
//! Run it from the repository root, through `scripts/soak.sh` (which builds
//! the binaries and starts the fault node). The workers' logs are kept in
//! `--logs` (default `target/soak/<pid>`).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::{Parser, ValueEnum};
use lapin::options::{BasicGetOptions, ConfirmSelectOptions, QueueDeleteOptions};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use serde_json::json;
use sudokud::Settings;
use sudokud_testkit::{Check, Collector, Seen, inspect_queue};
use sudokud_tools::{publish_confirmed, sudokud_binary};

#[path = "../../../benches/data.rs"]
mod data;

use data::Set;

const FAULT_NODE: &str = "scripts/fault-node.sh";
/// The easy and the hard puzzles (benches/data.rs).
const SETS: [(&str, &str, usize, data::Kind); 2] = [
    (
        "17_clue",
        "puzzles2_17_clue.txt",
        usize::MAX,
        data::Kind::Easy,
    ),
    ("mixed_hard", "mixed_hard.txt", usize::MAX, data::Kind::Hard),
];
/// One job in this many is a hard one.
const HARD_EVERY: usize = 20;
/// How long the broker stays stopped in a restart.
const BROKER_AWAY: Duration = Duration::from_secs(3);
/// How long a memory alarm lasts.
const ALARM: Duration = Duration::from_secs(5);

#[derive(Parser)]
#[command(about = "Soak test: sudokud workers through a cycle of faults on the fault node")]
struct Args {
    /// One-puzzle jobs (about 5 % of them hard).
    #[arg(long, default_value_t = 200_000)]
    jobs: usize,
    /// Worker processes.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Solver threads per worker.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds between the starts of two faults (a fault also waits until
    /// answers have resumed after the one before).
    #[arg(long, default_value_t = 15)]
    fault_every: u64,
    /// The faults, injected in this order, cycling.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "restart,kill,alarm"
    )]
    faults: Vec<Kind>,
    /// Fail the run if it is not over within this many minutes.
    #[arg(long, default_value_t = 20)]
    max_minutes: u64,
    /// Fail the run early when no job gets its first answer for this many
    /// seconds (outside a fault).
    #[arg(long, default_value_t = 120)]
    stall_secs: u64,
    /// Seed for picking the worker to kill (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Directory for the workers' logs (default: target/soak/<pid>).
    #[arg(long)]
    logs: Option<PathBuf>,
    /// The worker binary (default: `sudokud` beside this one).
    #[arg(long)]
    sudokud: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, ValueEnum)]
enum Kind {
    /// Broker restart: stop_app, 3 s, start_app.
    Restart,
    /// SIGKILL of a random worker, replaced at once.
    Kill,
    /// Memory alarm for 5 s.
    Alarm,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Restart => "restart",
            Kind::Kill => "kill",
            Kind::Alarm => "alarm",
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("soak: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(soak(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------
// The fault node.

/// `scripts/fault-node.sh ARGS`, its standard output.
async fn fault_node(args: &[&str]) -> anyhow::Result<String> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let shown = args.join(" ");
    let output = tokio::task::spawn_blocking(move || {
        Command::new(FAULT_NODE)
            .args(&args)
            .stdin(Stdio::null())
            .output()
    })
    .await?
    .with_context(|| format!("cannot run {FAULT_NODE}"))?;
    ensure!(
        output.status.success(),
        "{FAULT_NODE} {shown}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

async fn ctl(args: &[&str]) -> anyhow::Result<String> {
    let mut all = vec!["ctl"];
    all.extend_from_slice(args);
    fault_node(&all).await
}

/// Puts the node back as a run expects it: app running, no alarm.
async fn restore_node() -> anyhow::Result<()> {
    ctl(&["start_app"]).await?;
    ctl(&["set_vm_memory_high_watermark", "0.4"]).await?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Jobs and answers.

/// Whether `solution` is a complete, valid grid that keeps the givens of
/// `puzzle` (both 81 characters, `.` or `0` for blanks).
fn is_solution_of(solution: &str, puzzle: &str) -> bool {
    // A grid that parses has no repeated digit; a complete one is solved.
    solution.len() == 81
        && matches!(
            (sudokud::Grid::parse(solution), sudokud::Grid::parse(puzzle)),
            (Ok(s), Ok(p)) if s.is_complete() && s.extends(&p)
        )
}

/// Publishes the jobs, persistent, all confirmed.
async fn publish(channel: &Channel, queue: &str, puzzles: &[String]) -> anyhow::Result<()> {
    let bodies = puzzles.iter().enumerate().map(|(id, puzzle)| {
        serde_json::to_vec(&json!({"id": id, "puzzle": puzzle})).unwrap_or_default()
    });
    let properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into());
    publish_confirmed(channel, queue, bodies, &properties).await?;
    Ok(())
}

/// Checks each result: `solved`, with a solution of its job's puzzle (ids
/// index `puzzles`).
fn solutions(puzzles: Arc<Vec<String>>) -> Check {
    Arc::new(move |id, result| {
        let puzzle = puzzles
            .get(id as usize)
            .ok_or_else(|| format!("no known id: {result}"))?;
        let solution = result["solution"].as_str().unwrap_or_default();
        if result["status"] == "solved" && is_solution_of(solution, puzzle) {
            Ok(())
        } else {
            Err(format!("job {id} ({puzzle}): {result}"))
        }
    })
}

// ---------------------------------------------------------------------------
// Worker processes.

/// Lines of a worker's log worth counting.
#[derive(Default)]
struct LogCounts {
    lost: usize,
    reconnected: Vec<f64>,
    blocked: usize,
    unblocked: usize,
    /// Redelivered jobs seen at full prefetch: a quarantine started.
    quarantines: usize,
    errors: Vec<String>,
    warnings: usize,
    lines: Vec<String>,
}

impl LogCounts {
    fn add(&mut self, line: String) {
        if line.contains("connection to the broker lost") {
            self.lost += 1;
        }
        if line.contains(" reconnected")
            && let Some(secs) = line
                .split("outage_secs=")
                .nth(1)
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        {
            self.reconnected.push(secs);
        }
        if line.contains("the broker blocked the connection") {
            self.blocked += 1;
        }
        if line.contains("the broker unblocked the connection") {
            self.unblocked += 1;
        }
        if line.contains("a redelivered job arrived") {
            self.quarantines += 1;
        }
        if line.contains(" ERROR ") {
            self.errors.push(line.clone());
        } else if line.contains(" WARN ") {
            self.warnings += 1;
        }
        self.lines.push(line);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Running,
    /// Killed by the soak (a fault).
    Killed,
    /// Exited on its own, not asked to.
    Crashed,
    /// Exited after the soak's SIGTERM.
    Stopped,
}

struct Worker {
    number: usize,
    child: Child,
    pid: u32,
    started: Instant,
    end: End,
    status: Option<ExitStatus>,
    ended: Option<Instant>,
    log: Arc<Mutex<LogCounts>>,
    log_path: PathBuf,
}

impl Worker {
    fn log(&self) -> MutexGuard<'_, LogCounts> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn running(&self) -> bool {
        self.end == End::Running
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

struct Launcher {
    sudokud: PathBuf,
    env: Vec<(String, String)>,
    logs: PathBuf,
    started: usize,
}

impl Launcher {
    fn start(&mut self) -> anyhow::Result<Worker> {
        self.started += 1;
        let number = self.started;
        let log_path = self.logs.join(format!("worker-{number}.log"));
        let mut file = std::fs::File::create(&log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let mut child = Command::new(&self.sudokud)
            .arg("run")
            // No config/default.toml there: the environment alone.
            .current_dir(std::env::temp_dir())
            .env_remove("RUST_LOG")
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", self.sudokud.display()))?;
        let pid = child.id();
        let stderr = child.stderr.take().context("stderr is piped")?;
        let log = Arc::new(Mutex::new(LogCounts::default()));
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = writeln!(file, "{line}");
                sink.lock().unwrap_or_else(|e| e.into_inner()).add(line);
            }
        });
        Ok(Worker {
            number,
            child,
            pid,
            started: Instant::now(),
            end: End::Running,
            status: None,
            ended: None,
            log,
            log_path,
        })
    }
}

/// A small xorshift generator: which worker to kill.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

// ---------------------------------------------------------------------------
// The run.

struct Fault {
    kind: Kind,
    /// Since the workers started.
    at: Duration,
    answered: usize,
    start: Instant,
    /// When the action that ends the fault began: `start_app` or the
    /// command clearing the alarm issued, the replacement being started.
    ending: Instant,
    /// When the fault was over: `start_app` done, the replacement started,
    /// the alarm cleared (the command returned).
    end: Instant,
    /// First answers from `start` to `end`.
    answered_during: usize,
    detail: String,
    /// For a kill: the replacement's pid.
    replacement: Option<u32>,
}

struct Soak {
    args: Args,
    url: String,
    settings: Settings,
    puzzles: Arc<Vec<String>>,
    launcher: Launcher,
    workers: Vec<Worker>,
    faults: Vec<Fault>,
    random: Random,
    collector: Option<Collector>,
    workers_started: Instant,
    /// The last first answer, when every job was answered.
    done: Option<Instant>,
    /// How long faults waited for answers to resume after the one before.
    postponed_by: Duration,
    failures: Vec<String>,
    notes: Vec<String>,
}

impl Soak {
    fn collector(&self) -> anyhow::Result<&Collector> {
        self.collector.as_ref().context("no collector")
    }

    fn since_start(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.workers_started)
            .as_secs_f64()
    }

    /// Reaps workers that exited on their own and starts replacements.
    fn supervise(&mut self) -> anyhow::Result<()> {
        let mut replacements = 0;
        for worker in &mut self.workers {
            if !worker.running() {
                continue;
            }
            if let Some(status) = worker.child.try_wait()? {
                worker.end = End::Crashed;
                worker.status = Some(status);
                worker.ended = Some(Instant::now());
                replacements += 1;
            }
        }
        let crashed = self
            .workers
            .iter()
            .filter(|w| w.end == End::Crashed)
            .count();
        ensure!(
            crashed <= 20,
            "workers keep exiting on their own ({crashed} so far); see {}",
            self.launcher.logs.display()
        );
        for _ in 0..replacements {
            let worker = self.launcher.start()?;
            self.workers.push(worker);
        }
        Ok(())
    }

    async fn inject(&mut self, kind: Kind) -> anyhow::Result<Fault> {
        let start = Instant::now();
        let at = start - self.workers_started;
        let answered = self.collector()?.answered();
        let ending;
        let (detail, replacement) = match kind {
            Kind::Restart => {
                ctl(&["stop_app"]).await?;
                let stopped = Instant::now();
                tokio::time::sleep(BROKER_AWAY).await;
                let starting = Instant::now();
                ending = starting;
                ctl(&["start_app"]).await?;
                (
                    format!(
                        "stop_app {:.1} s, stopped {:.1} s, start_app {:.1} s",
                        (stopped - start).as_secs_f64(),
                        (starting - stopped).as_secs_f64(),
                        starting.elapsed().as_secs_f64()
                    ),
                    None,
                )
            }
            Kind::Kill => {
                let live: Vec<usize> = (0..self.workers.len())
                    .filter(|&i| self.workers[i].running())
                    .collect();
                ensure!(!live.is_empty(), "no worker to kill");
                let victim = &mut self.workers[live[self.random.below(live.len())]];
                victim.child.kill()?;
                let status = victim.child.wait()?;
                victim.end = End::Killed;
                victim.status = Some(status);
                victim.ended = Some(Instant::now());
                let (number, pid) = (victim.number, victim.pid);
                ending = Instant::now();
                let next = self.launcher.start()?;
                let detail = format!(
                    "worker #{number} (pid {pid}) killed, #{} (pid {}) started",
                    next.number, next.pid
                );
                let replacement = next.pid;
                self.workers.push(next);
                (detail, Some(replacement))
            }
            Kind::Alarm => {
                ctl(&["set_vm_memory_high_watermark", "0.000001"]).await?;
                let set = Instant::now();
                tokio::time::sleep(ALARM).await;
                ending = Instant::now();
                ctl(&["set_vm_memory_high_watermark", "0.4"]).await?;
                (
                    format!(
                        "setting the alarm {:.1} s, alarm on {:.1} s, clearing it {:.1} s",
                        (set - start).as_secs_f64(),
                        (ending - set).as_secs_f64(),
                        ending.elapsed().as_secs_f64()
                    ),
                    None,
                )
            }
        };
        Ok(Fault {
            kind,
            at,
            answered,
            start,
            ending,
            end: Instant::now(),
            answered_during: self.collector()?.answered() - answered,
            detail,
            replacement,
        })
    }

    /// The progress line: jobs answered (`answered` at `now`), the rate
    /// since the last line (`reported`: its count and time), duplicates,
    /// faults and the live workers.
    fn report_progress(
        &self,
        answered: usize,
        now: Instant,
        reported: (usize, Instant),
    ) -> anyhow::Result<()> {
        let n = self.puzzles.len();
        let seen = self.collector()?.seen();
        let live: Vec<String> = self
            .workers
            .iter()
            .filter(|w| w.running())
            .map(|w| format!("#{}", w.number))
            .collect();
        eprintln!(
            "[{:>5.0} s] answered {answered}/{n} ({:.0}/s since the last line), duplicates {}, faults {}, workers {}",
            self.since_start(now),
            (answered - reported.0) as f64 / (now - reported.1).as_secs_f64().max(1e-9),
            seen.duplicates,
            self.faults.len(),
            live.join(" ")
        );
        Ok(())
    }

    /// Injects a fault of `kind`, logs it and records it; when it started.
    async fn inject_and_log(&mut self, kind: Kind) -> anyhow::Result<Instant> {
        let fault = self.inject(kind).await?;
        eprintln!(
            "[{:>5.0} s] fault {}: {} at {} answered; {}; {} answered meanwhile",
            fault.at.as_secs_f64(),
            self.faults.len() + 1,
            kind.name(),
            fault.answered,
            fault.detail,
            fault.answered_during
        );
        let started = fault.start;
        self.faults.push(fault);
        Ok(started)
    }

    /// Workers, faults, until every job is answered (or the run fails).
    async fn drive(&mut self, deadline: Instant) -> anyhow::Result<()> {
        let n = self.puzzles.len();
        let every = Duration::from_secs(self.args.fault_every);
        let stall = Duration::from_secs(self.args.stall_secs);
        let mut next_fault = self.workers_started + every;
        let mut waiting_since: Option<Instant> = None;
        let mut next_report = self.workers_started + Duration::from_secs(10);
        let mut cycle = 0;
        let mut last_count = 0;
        let mut last_progress = Instant::now();
        let mut reported = (0, self.workers_started);
        loop {
            self.supervise()?;
            let answered = self.collector()?.answered();
            if answered >= n {
                let done = self.collector()?.seen().last_first();
                self.done = done;
                return Ok(());
            }
            let now = Instant::now();
            if answered > last_count {
                last_count = answered;
                last_progress = now;
            }
            if now >= deadline {
                self.failures.push(format!(
                    "not over within --max-minutes {}: {answered} of {n} jobs answered",
                    self.args.max_minutes
                ));
                return Ok(());
            }
            if now - last_progress >= stall {
                self.failures.push(format!(
                    "stalled: no new answer for {} s, {answered} of {n} jobs answered",
                    stall.as_secs()
                ));
                return Ok(());
            }
            if now >= next_report {
                next_report =
                    (next_report + Duration::from_secs(10)).max(now + Duration::from_secs(5));
                self.report_progress(answered, now, reported)?;
                reported = (answered, now);
            }
            // The next fault waits until answers have resumed after the
            // last one, so that each recovery is measured on its own.
            let resumed = match self.faults.last() {
                Some(last) => self
                    .collector()?
                    .seen()
                    .next_first_after(last.end)
                    .is_some(),
                None => true,
            };
            if now >= next_fault && !resumed && waiting_since.is_none() {
                waiting_since = Some(now);
            }
            if now >= next_fault && !self.args.faults.is_empty() && resumed {
                if let Some(since) = waiting_since.take() {
                    self.postponed_by += now - since;
                }
                let kind = self.args.faults[cycle % self.args.faults.len()];
                cycle += 1;
                let started = self.inject_and_log(kind).await?;
                // From this fault's start (a fault that waited shifts the
                // ones after it).
                next_fault = (started + every).max(Instant::now() + Duration::from_secs(1));
                // A fault is not a stall.
                last_progress = last_progress.max(Instant::now());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM to every live worker, and its exit.
    async fn stop_workers(&mut self) {
        for worker in self.workers.iter().filter(|w| w.running()) {
            let _ = Command::new("kill")
                .args(["-TERM", &worker.pid.to_string()])
                .status();
        }
        // The grace period is 30 s; then the worker gives up on its jobs.
        let patience = Instant::now() + Duration::from_secs(60);
        for worker in &mut self.workers {
            if !worker.running() {
                continue;
            }
            loop {
                match worker.child.try_wait() {
                    Ok(Some(status)) => {
                        worker.end = End::Stopped;
                        worker.status = Some(status);
                        worker.ended = Some(Instant::now());
                        break;
                    }
                    Ok(None) if Instant::now() < patience => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    _ => {
                        self.failures.push(format!(
                            "worker #{} (pid {}) did not exit within 60 s of SIGTERM",
                            worker.number, worker.pid
                        ));
                        let _ = worker.child.kill();
                        let status = worker.child.wait().ok();
                        worker.end = End::Stopped;
                        worker.status = status;
                        worker.ended = Some(Instant::now());
                        break;
                    }
                }
            }
        }
        // Let the log readers take the last lines.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// Waits until the collector has read every result left (the workers
    /// are stopped): the results queue empty and nothing new for 2 s.
    async fn drain_results(&self, channel: &Channel) -> anyhow::Result<()> {
        let patience = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = message_count(channel, &self.settings.amqp.results_queue).await?;
            let quiet = self
                .collector()?
                .seen()
                .last_message
                .is_none_or(|t| t.elapsed() >= Duration::from_secs(2));
            if ready == 0 && quiet {
                return Ok(());
            }
            if Instant::now() >= patience {
                bail!("results still coming after 60 s ({ready} waiting)");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The jobs and dead-letter queues, which must be empty. A quorum
    /// queue's count lags the acknowledgements it was sent, so wait for it
    /// to settle.
    async fn check_queues(&mut self, channel: &Channel) -> anyhow::Result<(u32, u32)> {
        let jobs = settle(channel, &self.settings.amqp.jobs_queue).await?;
        let dead = settle(channel, &self.settings.amqp.dead_letter_queue).await?;
        if jobs > 0 {
            self.failures
                .push(format!("{jobs} jobs left in the jobs queue"));
        }
        if dead > 0 {
            self.failures
                .push(format!("{dead} jobs in the dead-letter queue"));
            // The evidence: which jobs, and why.
            let queue = self.settings.amqp.dead_letter_queue.as_str();
            for _ in 0..dead.min(10) {
                let Some(message) = channel
                    .basic_get(queue.into(), BasicGetOptions { no_ack: true })
                    .await?
                else {
                    break;
                };
                let delivery = &message.delivery;
                self.notes.push(format!(
                    "dead-lettered: {} (headers {:?})",
                    String::from_utf8_lossy(&delivery.data),
                    delivery.properties.headers()
                ));
            }
        }
        Ok((jobs, dead))
    }
}

async fn message_count(channel: &Channel, queue: &str) -> anyhow::Result<u32> {
    Ok(inspect_queue(channel, queue).await?.message_count())
}

/// The message count once it is 0, or what it still is after 30 s.
async fn settle(channel: &Channel, queue: &str) -> anyhow::Result<u32> {
    let patience = Instant::now() + Duration::from_secs(30);
    loop {
        let count = message_count(channel, queue).await?;
        if count == 0 || Instant::now() >= patience {
            return Ok(count);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn connect(url: &str) -> anyhow::Result<(Connection, Channel)> {
    let connection = Connection::connect(url, ConnectionProperties::default())
        .await
        .with_context(|| format!("cannot connect to the fault node at {url}"))?;
    let channel = connection.create_channel().await?;
    Ok((connection, channel))
}

async fn delete_queues(url: &str, settings: &Settings) -> anyhow::Result<()> {
    let (connection, channel) = connect(url).await?;
    let a = &settings.amqp;
    for queue in [&a.jobs_queue, &a.results_queue, &a.dead_letter_queue] {
        channel
            .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
            .await
            .with_context(|| format!("cannot delete {queue}"))?;
    }
    let _ = connection.close(200, "OK".into()).await;
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn status_text(status: Option<ExitStatus>) -> String {
    status.map_or("status unknown".to_string(), |s| s.to_string())
}

/// Seconds, or `n/a` for none.
fn secs(value: f64) -> String {
    if value.is_nan() {
        "n/a".to_string()
    } else {
        format!("{value:.2} s")
    }
}

fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

async fn soak(args: Args) -> anyhow::Result<bool> {
    let began = Instant::now();
    let deadline = began + Duration::from_secs(args.max_minutes * 60);
    let (sudokud, logs) = check_args(&args)?;
    fault_node(&["start"]).await?;
    let url = fault_node(&["url"]).await?.trim().to_string();
    ensure!(
        url.starts_with("amqp://"),
        "unexpected URL from {FAULT_NODE}: {url:?}"
    );
    // A run that failed half-way may have left the node stopped or in alarm.
    restore_node().await?;

    let (puzzles, easy_name, hard_name, hard_jobs) = mixed_puzzles(args.jobs)?;
    let puzzles = Arc::new(puzzles);

    let prefix = format!("soak.{}", std::process::id());
    let settings = soak_settings(&url, &prefix, args.threads);
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let env = worker_env(&settings);
    println!(
        "soak: {} jobs ({} easy from {easy_name}, {hard_jobs} hard from {hard_name}), {} workers x {} \
         solver thread(s), a fault every {} s ({}), seed {seed}",
        args.jobs,
        args.jobs - hard_jobs,
        args.workers,
        args.threads,
        args.fault_every,
        args.faults
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "fault node {url}; queues {prefix}.jobs/results/dead; worker logs in {}",
        logs.display()
    );

    publish_jobs(&url, &settings, &puzzles).await?;

    let collector = Collector::start(
        &url,
        &settings.amqp.results_queue,
        solutions(Arc::clone(&puzzles)),
    );
    let mut soak = Soak {
        random: Random(seed | 1),
        launcher: Launcher {
            sudokud,
            env,
            logs,
            started: 0,
        },
        url,
        settings,
        puzzles,
        workers: Vec::new(),
        faults: Vec::new(),
        collector: Some(collector),
        workers_started: Instant::now(),
        done: None,
        postponed_by: Duration::ZERO,
        failures: Vec::new(),
        notes: Vec::new(),
        args,
    };
    let outcome = finish(&mut soak, deadline).await;
    clean_up(&mut soak, &outcome, &prefix).await;
    let queues = outcome.ok();
    Ok(summary(&soak, queues, began.elapsed()))
}

/// Declares the soak's queues and publishes its jobs, with confirms; the
/// queues are deleted again if that fails.
async fn publish_jobs(url: &str, settings: &Settings, puzzles: &[String]) -> anyhow::Result<()> {
    let (connection, channel) = connect(url).await?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    sudokud::broker::declare_topology(&channel, &settings.amqp).await?;
    let publishing = Instant::now();
    if let Err(e) = publish(&channel, &settings.amqp.jobs_queue, puzzles).await {
        let _ = delete_queues(url, settings).await;
        return Err(e.context("cannot publish the jobs"));
    }
    let published = publishing.elapsed();
    let _ = connection.close(200, "OK".into()).await;
    println!(
        "published {} jobs in {:.1} s ({:.0}/s)",
        puzzles.len(),
        published.as_secs_f64(),
        puzzles.len() as f64 / published.as_secs_f64().max(1e-9)
    );
    Ok(())
}

/// The arguments checked, the worker binary found, and the directory of
/// the worker logs created: (binary, log directory).
fn check_args(args: &Args) -> anyhow::Result<(PathBuf, PathBuf)> {
    ensure!(
        Path::new(FAULT_NODE).exists(),
        "{FAULT_NODE} not found: run from the repository root"
    );
    ensure!(
        args.jobs > 0 && args.workers > 0,
        "--jobs and --workers must be positive"
    );
    ensure!(args.threads > 0, "--threads must be positive");
    let sudokud = sudokud_binary(args.sudokud.as_deref())?;
    ensure!(
        sudokud.exists(),
        "{} not found: build it first (scripts/soak.sh does)",
        sudokud.display()
    );
    let logs = match &args.logs {
        Some(dir) => dir.clone(),
        None => PathBuf::from(format!("target/soak/{}", std::process::id())),
    };
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    Ok((sudokud, logs))
}

/// The soak's jobs: an easy puzzle in each job but every `HARD_EVERY`th,
/// which is hard; with the names of the two sets and the count of hard
/// jobs.
fn mixed_puzzles(jobs: usize) -> anyhow::Result<(Vec<String>, String, String, usize)> {
    let [easy, hard]: [Set; 2] = data::sets(&SETS)
        .try_into()
        .map_err(|_| anyhow::anyhow!("two sets, the easy and the hard"))?;
    ensure!(
        !easy.puzzles.is_empty() && !hard.puzzles.is_empty(),
        "no puzzles in {} or {}",
        easy.name,
        hard.name
    );
    let (easy_name, hard_name) = (easy.name, hard.name);
    let (easy, hard) = (easy.puzzles, hard.puzzles);
    let puzzles: Vec<String> = (0..jobs)
        .map(|i| {
            if i % HARD_EVERY == HARD_EVERY / 2 {
                hard[(i / HARD_EVERY) % hard.len()].clone()
            } else {
                easy[(i - i / HARD_EVERY) % easy.len()].clone()
            }
        })
        .collect();
    let hard_jobs = (0..jobs)
        .filter(|i| i % HARD_EVERY == HARD_EVERY / 2)
        .count();
    Ok((puzzles, easy_name, hard_name, hard_jobs))
}

/// The settings of a soak on the fault node at `url`: queues of its own
/// (`prefix`), `threads` solver threads per worker.
fn soak_settings(url: &str, prefix: &str, threads: usize) -> Settings {
    let mut settings = Settings::default();
    settings.amqp.url = url.to_string();
    settings.amqp.jobs_queue = format!("{prefix}.jobs");
    settings.amqp.results_queue = format!("{prefix}.results");
    settings.amqp.dead_letter_queue = format!("{prefix}.dead");
    settings.worker.threads = threads;
    settings
}

/// The environment of each worker: the soak's queues on the fault node,
/// quick reconnects, text logs with a throughput line every 10 s.
fn worker_env(settings: &Settings) -> Vec<(String, String)> {
    let a = &settings.amqp;
    [
        ("SUDOKUD__AMQP__URL", a.url.clone()),
        ("SUDOKUD__AMQP__JOBS_QUEUE", a.jobs_queue.clone()),
        ("SUDOKUD__AMQP__RESULTS_QUEUE", a.results_queue.clone()),
        (
            "SUDOKUD__AMQP__DEAD_LETTER_QUEUE",
            a.dead_letter_queue.clone(),
        ),
        ("SUDOKUD__AMQP__RECONNECT_INITIAL_MS", "200".into()),
        ("SUDOKUD__AMQP__RECONNECT_MAX_MS", "2000".into()),
        (
            "SUDOKUD__WORKER__THREADS",
            settings.worker.threads.to_string(),
        ),
        ("SUDOKUD__LOG__FORMAT", "text".into()),
        ("SUDOKUD__LOG__THROUGHPUT_SECS", "10".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// After the run, whatever happened: the node as it was and the queues
/// gone; on a failure, the workers stopped and the queues as the broker
/// saw them noted first.
async fn clean_up(soak: &mut Soak, outcome: &anyhow::Result<(u32, u32)>, prefix: &str) {
    if let Err(e) = restore_node().await {
        soak.failures
            .push(format!("cannot restore the fault node: {e:#}"));
    }
    if let Err(e) = &outcome {
        soak.failures.push(format!("{e:#}"));
        soak.stop_workers().await;
        if let Some(collector) = soak.collector.as_mut() {
            collector.stop().await;
        }
    }
    if !soak.failures.is_empty() {
        // The queues as the broker sees them, before they go.
        if let Ok(listing) = ctl(&[
            "list_queues",
            "name",
            "type",
            "messages_ready",
            "messages_unacknowledged",
            "consumers",
        ])
        .await
        {
            for line in listing.lines().filter(|l| l.contains(prefix)) {
                soak.notes.push(format!("queue at the end: {line}"));
            }
        }
    }
    if let Err(e) = delete_queues(&soak.url, &soak.settings).await {
        soak.failures.push(format!("{e:#}"));
    }
}

/// Runs the workers through the faults, stops them, reads the last
/// results and checks the queues: (jobs left, dead letters).
async fn finish(soak: &mut Soak, deadline: Instant) -> anyhow::Result<(u32, u32)> {
    for _ in 0..soak.args.workers {
        let worker = soak.launcher.start()?;
        soak.workers.push(worker);
    }
    soak.drive(deadline).await?;
    soak.stop_workers().await;
    let (connection, channel) = connect(&soak.url).await?;
    if soak.done.is_some() {
        soak.drain_results(&channel).await?;
    }
    if let Some(collector) = soak.collector.as_mut() {
        collector.stop().await;
    }
    let queues = soak.check_queues(&channel).await?;
    let _ = connection.close(200, "OK".into()).await;
    Ok(queues)
}

/// Prints the summary; whether the run passed.
fn summary(soak: &Soak, queues: Option<(u32, u32)>, total: Duration) -> bool {
    let n = soak.puzzles.len();
    let Some(collector) = soak.collector.as_ref() else {
        return false;
    };
    let seen = collector.seen();
    let unanswered: Vec<u64> = (0..n as u64)
        .filter(|&id| seen.first(id).is_none())
        .collect();
    let lost = unanswered.len();
    let duplicated_ids = seen.duplicated_ids();
    println!();
    println!("== summary");
    println!("jobs: {n}");
    match soak.done {
        Some(done) => {
            let secs = soak.since_start(done);
            println!(
                "duration: {secs:.1} s from the workers' start to the last first answer \
                 ({:.0} jobs/s); whole run {:.1} s",
                n as f64 / secs.max(1e-9),
                total.as_secs_f64()
            );
        }
        None => println!(
            "duration: not finished ({} of {n} answered); whole run {:.1} s",
            seen.answered(),
            total.as_secs_f64()
        ),
    }
    print_faults(soak, &seen);
    println!("lost (never answered): {lost}");
    println!("wrong answers: {}", seen.wrong);
    for example in &seen.wrong_examples {
        println!("  {example}");
    }
    println!(
        "duplicates (answers beyond the first per id): {} on {duplicated_ids} ids",
        seen.duplicates
    );
    println!(
        "result messages redelivered to the collector (the same message again, not counted): {} \
         over {} collector connections",
        seen.redelivered, seen.connections
    );
    print_workers(soak, &seen);
    match queues {
        Some((jobs, dead)) => {
            println!("queues at the end: jobs {jobs} messages, dead letters {dead} messages")
        }
        None => println!("queues at the end: not checked"),
    }
    for note in &soak.notes {
        println!("  {note}");
    }
    verdict(soak, &seen, &unanswered)
}

/// Prints each fault injected, with the recovery after it, and the
/// recoveries and pauses by kind of fault.
fn print_faults(soak: &Soak, seen: &Seen) {
    let kinds = [Kind::Restart, Kind::Kill, Kind::Alarm];
    let per_kind: Vec<String> = kinds
        .iter()
        .map(|&k| {
            format!(
                "{} {}",
                k.name(),
                soak.faults.iter().filter(|f| f.kind == k).count()
            )
        })
        .collect();
    println!(
        "faults injected: {} ({}); waits for answers to resume before the next fault: {:.1} s in all",
        soak.faults.len(),
        per_kind.join(", "),
        soak.postponed_by.as_secs_f64()
    );
    let mut recoveries: HashMap<Kind, Vec<f64>> = HashMap::new();
    let mut pauses: HashMap<Kind, Vec<f64>> = HashMap::new();
    let mut replacement_firsts: Vec<f64> = Vec::new();
    for (i, fault) in soak.faults.iter().enumerate() {
        let resumed = seen.next_first_after(fault.end);
        let recovery = resumed.map(|t| (t - fault.end).as_secs_f64());
        if let Some(r) = recovery {
            recoveries.entry(fault.kind).or_default().push(r);
        }
        let pause = seen.longest_pause(fault.start, fault.end);
        if let Some(p) = pause {
            pauses.entry(fault.kind).or_default().push(p.as_secs_f64());
        }
        let mut extra = match (seen.next_first_after(fault.ending), pause) {
            (Some(t), Some(p)) => format!(
                "; first answer {:.2} s after the ending action began; longest pause in \
                 answers {:.2} s",
                (t - fault.ending).as_secs_f64(),
                p.as_secs_f64()
            ),
            _ => String::new(),
        };
        if let Some(pid) = fault.replacement
            && let (Some((first, _)), Some(w)) =
                (seen.worker(pid), soak.workers.iter().find(|w| w.pid == pid))
        {
            let secs = (first - w.started).as_secs_f64();
            replacement_firsts.push(secs);
            extra += &format!("; the replacement's first answer {secs:.2} s after its start");
        }
        println!(
            "  {:>2}. {:<7} at {:>6.1} s, {} answered before, {} during; {}; recovery {}{extra}",
            i + 1,
            fault.kind.name(),
            fault.at.as_secs_f64(),
            fault.answered,
            fault.answered_during,
            fault.detail,
            recovery.map_or("none (no new answer after it)".to_string(), |r| format!(
                "{r:.2} s"
            )),
        );
    }
    print_by_kind(&kinds, &mut recoveries, &pauses, &mut replacement_firsts);
}

/// Prints the workers' restarts and stops, what their logs say, and each
/// worker's life.
fn print_workers(soak: &Soak, seen: &Seen) {
    let killed = soak.workers.iter().filter(|w| w.end == End::Killed).count();
    let crashed: Vec<&Worker> = soak
        .workers
        .iter()
        .filter(|w| w.end == End::Crashed)
        .collect();
    println!(
        "worker restarts: {} ({killed} after a kill, {} after an unexpected exit)",
        killed + crashed.len(),
        crashed.len()
    );
    let stopped: Vec<&Worker> = soak
        .workers
        .iter()
        .filter(|w| w.end == End::Stopped)
        .collect();
    let clean = stopped
        .iter()
        .filter(|w| w.status.is_some_and(|s| s.success()))
        .count();
    println!(
        "workers stopped with SIGTERM: {} of {} exited 0",
        clean,
        stopped.len()
    );
    let (mut lost_lines, mut outages, mut blocked, mut unblocked, mut warnings) =
        (0, Vec::new(), 0, 0, 0);
    let mut quarantines = 0;
    let mut errors = Vec::new();
    for worker in &soak.workers {
        let log = worker.log();
        lost_lines += log.lost;
        outages.extend(log.reconnected.iter().copied());
        blocked += log.blocked;
        unblocked += log.unblocked;
        warnings += log.warnings;
        quarantines += log.quarantines;
        errors.extend(
            log.errors
                .iter()
                .map(|e| format!("#{}: {e}", worker.number)),
        );
    }
    println!(
        "worker logs: {lost_lines} \"connection lost\", {} \"reconnected\" (outage median {}, max \
         {}), {blocked} \"blocked\", {unblocked} \"unblocked\", {quarantines} \
         quarantines of redelivered jobs, {warnings} warnings, {} errors",
        outages.len(),
        secs(median(&mut outages)),
        secs(max(&outages)),
        errors.len()
    );
    for error in errors.iter().take(10) {
        println!("  {error}");
    }
    print_each_worker(soak, seen);
}

/// Prints the recoveries and the longest pauses by kind of fault, and for
/// kills the replacement worker's own first answer.
fn print_by_kind(
    kinds: &[Kind],
    recoveries: &mut HashMap<Kind, Vec<f64>>,
    pauses: &HashMap<Kind, Vec<f64>>,
    replacement_firsts: &mut [f64],
) {
    println!(
        "recovery (from the fault's end to the next first answer), and the longest pause in \
         answers (from the fault's start to that answer):"
    );
    for &kind in kinds {
        if let Some(values) = recoveries.get_mut(&kind) {
            let mut pause = pauses.get(&kind).cloned().unwrap_or_default();
            let line = format!(
                "  {:<7} {} measured: recovery median {:.2} s, max {:.2} s; pause median {:.2} s, \
                 max {:.2} s",
                kind.name(),
                values.len(),
                median(values),
                max(values),
                median(&mut pause),
                max(&pause)
            );
            if kind == Kind::Kill && !replacement_firsts.is_empty() {
                println!(
                    "{line} (the replacement worker's own first answer: median {:.2} s, max {:.2} s)",
                    median(replacement_firsts),
                    max(replacement_firsts)
                );
            } else {
                println!("{line}");
            }
        }
    }
}

/// Prints each worker's life: from and to when, its answers and
/// reconnects, how it ended, and where its log is.
fn print_each_worker(soak: &Soak, seen: &Seen) {
    println!("per worker:");
    for worker in &soak.workers {
        let answers = seen.worker(worker.pid).map_or(0, |w| w.1);
        let how = match (worker.end, worker.status) {
            (End::Running, _) => "still running".to_string(),
            (End::Killed, _) => "killed (SIGKILL)".to_string(),
            (End::Crashed, Some(s)) => format!("EXITED ON ITS OWN ({s})"),
            (End::Stopped, Some(s)) => format!("stopped by SIGTERM ({s})"),
            (_, None) => "status unknown".to_string(),
        };
        let log = worker.log();
        println!(
            "  #{} pid {}: {:.1} s to {}, {answers} answers, {} reconnects; {}; log {}",
            worker.number,
            worker.pid,
            soak.since_start(worker.started),
            worker.ended.map_or("the end".to_string(), |t| format!(
                "{:.1} s",
                soak.since_start(t)
            )),
            log.reconnected.len(),
            how,
            worker.log_path.display()
        );
    }
}

/// Prints the verdict and the failures behind it: jobs never answered
/// (`unanswered`), wrong answers, workers that exited on their own or not
/// with 0 at SIGTERM, and the run's own failures; whether the run passed.
fn verdict(soak: &Soak, seen: &Seen, unanswered: &[u64]) -> bool {
    let lost = unanswered.len();
    let crashed: Vec<&Worker> = soak
        .workers
        .iter()
        .filter(|w| w.end == End::Crashed)
        .collect();
    let stopped: Vec<&Worker> = soak
        .workers
        .iter()
        .filter(|w| w.end == End::Stopped)
        .collect();
    let mut failures = soak.failures.clone();
    if lost > 0 {
        let ids: Vec<String> = unanswered.iter().take(20).map(u64::to_string).collect();
        failures.push(format!(
            "{lost} jobs never answered (first ids: {})",
            ids.join(", ")
        ));
    }
    if seen.wrong > 0 {
        failures.push(format!("{} wrong answers", seen.wrong));
    }
    if crashed.len() > 3 {
        failures.push(format!(
            "{} workers exited on their own; the first three:",
            crashed.len()
        ));
    }
    for worker in crashed.iter().take(3) {
        let log = worker.log();
        let tail = log.lines.len().saturating_sub(20);
        failures.push(format!(
            "worker #{} (pid {}) exited on its own ({}); its last lines (log {}):\n{}",
            worker.number,
            worker.pid,
            status_text(worker.status),
            worker.log_path.display(),
            log.lines[tail..].join("\n")
        ));
    }
    for worker in &stopped {
        if !worker.status.is_some_and(|s| s.success()) {
            failures.push(format!(
                "worker #{} (pid {}) did not exit 0 at SIGTERM: {} (log {})",
                worker.number,
                worker.pid,
                status_text(worker.status),
                worker.log_path.display()
            ));
        }
    }
    if failures.is_empty() {
        println!("result: PASS");
        true
    } else {
        println!("result: FAIL");
        for failure in &failures {
            println!("  - {failure}");
        }
        false
    }
}
