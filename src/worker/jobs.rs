//! A job's life on the solver pool: parse the message, solve its puzzle or
//! the chunks of its batch, and hand back the encoded result message.
//!
//! Everything here runs on pool threads. Every job handed to [`start`]
//! produces exactly one [`Solved`], whatever happens: a panic in the solver
//! becomes an `error` answer for that puzzle, and a panic anywhere else
//! becomes an `error` result for the job (the [`Completion`] guard sends it
//! when a panic drops it unfinished). A job delivered on a connection that
//! has since been lost is not solved: its [`Solved`] comes back without a
//! body, since the broker redelivers the job anyway. Only a closed pool (at
//! shutdown) ends a job without a [`Solved`], and that job stays
//! unacknowledged.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tracing::{Span, debug, error, warn};

use crate::pool::{Pool, PoolHandle};
use crate::protocol::StatusCounts;
use crate::protocol::{
    Analyses, Answer, AnswerStatus, Job, JobId, Limits, Puzzles, Rejection, Reply, SolveFn,
    answer_guarded, excerpt,
};
use crate::solver::{Grid, GridError, Mode};

/// Fewest puzzles in one chunk of a batch: an easy puzzle takes a few
/// microseconds, so smaller chunks would cost more in hand-offs than they
/// gain in balance.
const MIN_CHUNK: usize = 16;
/// Most puzzles in one chunk, so hard batches spread over every thread and
/// other jobs get a turn between chunks.
const MAX_CHUNK: usize = 256;
/// Chunks per thread a large batch is cut into.
const CHUNKS_PER_THREAD: usize = 4;

/// What every job needs to know, shared by the pool threads.
pub(crate) struct Context {
    pub limits: Limits,
    pub worker_id: Arc<str>,
    pub threads: usize,
    pub pool: PoolHandle,
    pub done: UnboundedSender<Solved>,
    pub solve: SolveFn,
    /// Deadline of a whole job, from its delivery (`worker.max_job_ms`).
    pub max_job: Duration,
    /// The current connection's generation (how many connections were
    /// lost before it): jobs delivered on an earlier one are skipped (see
    /// [`Key::generation`]).
    pub generation: Arc<AtomicU64>,
    /// Test-only fault injection: a job with this id (as JSON text) aborts
    /// the process whenever it is picked up.
    #[cfg(feature = "fault-injection")]
    pub abort_on_id: Option<String>,
}

impl Context {
    /// Whether the connection of `generation` has been replaced since.
    fn is_stale(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Acquire) != generation
    }
}

/// The worker's name for a job it holds: its delivery tag, and the
/// connection it came on (tags start again at 1 on every channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// The connection it was delivered on: [`Context::generation`] then.
    pub generation: u64,
    pub tag: u64,
}

/// A delivered job, as the pool gets it.
pub(crate) struct Work {
    pub key: Key,
    /// The message body, shared with the worker's record of the job.
    pub body: Arc<Vec<u8>>,
    pub delivered_at: Instant,
    pub message_id: Option<String>,
    /// The job's span; `job_id` is recorded in it once the body is read.
    pub span: Span,
}

/// A job's encoded result message, ready to publish.
#[derive(Debug)]
pub(crate) struct Solved {
    pub key: Key,
    /// `None`: the job was skipped, its connection being lost.
    pub body: Option<Vec<u8>>,
    pub statuses: StatusCounts,
}

/// Queues a delivered job on the pool.
fn start(ctx: &Arc<Context>, work: Work) {
    let ctx = Arc::clone(ctx);
    let pool = ctx.pool.clone();
    pool.submit(Box::new(move || process(&ctx, work)));
}

/// The solver pool as the event loop sees it: its threads, what every job
/// needs, and the jobs handed to it whose [`Solved`] has not come back,
/// from the current connection or a lost one (they occupy solver threads
/// either way).
pub(crate) struct Solvers {
    pool: Pool,
    ctx: Arc<Context>,
    solved: UnboundedReceiver<Solved>,
    in_pool: usize,
}

impl Solvers {
    pub(crate) fn new(pool: Pool, ctx: Arc<Context>, solved: UnboundedReceiver<Solved>) -> Solvers {
        Solvers {
            pool,
            ctx,
            solved,
            in_pool: 0,
        }
    }

    pub(crate) fn ctx(&self) -> &Context {
        &self.ctx
    }

    pub(crate) fn threads(&self) -> usize {
        self.pool.threads()
    }

    /// Whether the pool can take another job.
    pub(crate) fn has_room(&self) -> bool {
        self.in_pool < self.pool.capacity()
    }

    /// Hands a job to the pool; its [`Solved`] comes back through
    /// [`Solvers::next`].
    pub(crate) fn submit(&mut self, work: Work) {
        self.in_pool += 1;
        start(&self.ctx, work);
    }

    /// The next job back from the pool.
    pub(crate) async fn next(&mut self) -> Option<Solved> {
        let solved = self.solved.recv().await?;
        self.in_pool -= 1;
        Some(solved)
    }

    /// The generation of the current connection.
    pub(crate) fn generation(&self) -> u64 {
        self.ctx.generation.load(Ordering::Acquire)
    }

    /// The connection is lost: work of it still queued is skipped.
    pub(crate) fn connection_lost(&self) {
        self.ctx.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// Sends the job's result exactly once: by [`Completion::finish`], or, if
/// the job's code panicked and dropped the guard unfinished, an `error`
/// result.
struct Completion {
    ctx: Arc<Context>,
    key: Key,
    id: JobId,
    sent: bool,
}

impl Completion {
    fn finish(self, body: Vec<u8>, statuses: StatusCounts) {
        self.send(Some(body), statuses);
    }

    /// Gives the job's pool slot back without an answer.
    fn skip(self) {
        self.send(None, StatusCounts::default());
    }

    fn send(mut self, body: Option<Vec<u8>>, statuses: StatusCounts) {
        self.sent = true;
        // The receiver is gone only when the worker has stopped; the job
        // then stays unacknowledged and the broker redelivers it.
        let _ = self.ctx.done.send(Solved {
            key: self.key,
            body,
            statuses,
        });
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if self.sent {
            return;
        }
        if !std::thread::panicking() {
            // Not a failure: the pool closed at shutdown and dropped the
            // rest of this job's work. The job stays unacknowledged.
            debug!("job abandoned at shutdown");
            return;
        }
        error!("the worker failed on this job (a bug); answering with an error result");
        let answer = Answer::error("the worker failed on this job (a bug); it has been logged");
        let mut statuses = StatusCounts::default();
        statuses.add(answer.status);
        let body = Reply::single(&self.id, answer, &self.ctx.worker_id).to_json();
        let _ = self.ctx.done.send(Solved {
            key: self.key,
            body: Some(body),
            statuses,
        });
    }
}

fn process(ctx: &Arc<Context>, work: Work) {
    let _entered = work.span.enter();
    let mut completion = Completion {
        ctx: Arc::clone(ctx),
        key: work.key,
        id: JobId::from_message_id(work.message_id.as_deref()),
        sent: false,
    };
    if ctx.is_stale(work.key.generation) {
        debug!("job of a lost connection skipped; the broker redelivers it");
        completion.skip();
        return;
    }
    let job = match Job::parse(&work.body, work.message_id.as_deref(), &ctx.limits) {
        Ok(job) => job,
        Err(rejection) => {
            let (body, statuses) = rejected(ctx, &work.span, &rejection);
            completion.finish(body, statuses);
            return;
        }
    };
    drop(work.body);
    work.span.record("job_id", excerpt(job.id.as_json()));
    #[cfg(feature = "fault-injection")]
    if ctx.abort_on_id.as_deref() == Some(job.id.as_json()) {
        error!("fault injection: aborting the process on this job");
        std::process::abort();
    }
    completion.id = job.id.clone();
    let Job {
        id,
        puzzles,
        mode,
        timeout,
        analyses,
    } = job;
    let budget = Budget {
        per_puzzle: timeout,
        job_ends: work.delivered_at + ctx.max_job,
        max_job: ctx.max_job,
    };
    match puzzles {
        Puzzles::One(grid) => {
            let answer = answer(ctx, &grid, mode, analyses, budget);
            let mut statuses = StatusCounts::default();
            statuses.add(answer.status);
            debug!(status = answer.status.as_str(), "solved");
            let body = Reply::single(&id, answer, &ctx.worker_id).to_json();
            completion.finish(body, statuses);
        }
        Puzzles::Batch(items) => {
            SplitBatch::start(
                ctx,
                id,
                items,
                mode,
                analyses,
                budget,
                completion,
                work.span.clone(),
                work.key.generation,
            );
        }
    }
}

/// Largest job message worth trying on the event loop: a single puzzle or
/// a small batch.
const INLINE_MAX_BYTES: usize = 8 * 1024;

/// Most puzzles of a batch tried on the event loop.
const INLINE_MAX_PUZZLES: usize = 4;

/// Solver time a job may take on the event loop, all its puzzles together.
/// The solver reads its clock every 128 guesses, so a puzzle overruns this
/// by at most that many guesses (tens of microseconds).
const INLINE_BUDGET: Duration = Duration::from_micros(300);

/// Answers a small, easy job on the calling thread (the worker's event
/// loop), sparing it two hand-offs between threads. `None`: the job is
/// larger than a small batch, or one of its puzzles needs more than
/// [`INLINE_BUDGET`]; it goes to the pool (which solves it afresh, having
/// lost at most that budget). The answer and statuses are exactly what
/// the pool would produce.
pub(crate) fn answer_inline(ctx: &Context, work: &Work) -> Option<(Vec<u8>, StatusCounts)> {
    if work.body.len() > INLINE_MAX_BYTES {
        return None;
    }
    let _entered = work.span.enter();
    let job = match Job::parse(&work.body, work.message_id.as_deref(), &ctx.limits) {
        Ok(job) => job,
        Err(rejection) => return Some(rejected(ctx, &work.span, &rejection)),
    };
    if matches!(&job.puzzles, Puzzles::Batch(items) if items.len() > INLINE_MAX_PUZZLES) {
        return None;
    }
    // A rating can take milliseconds: never on the event loop.
    if job.analyses.rate {
        return None;
    }
    #[cfg(feature = "fault-injection")]
    if ctx.abort_on_id.as_deref() == Some(job.id.as_json()) {
        error!("fault injection: aborting the process on this job");
        std::process::abort();
    }
    let started = Instant::now();
    let budget = Budget {
        per_puzzle: job.timeout,
        job_ends: work.delivered_at + ctx.max_job,
        max_job: ctx.max_job,
    };
    // One puzzle within what is left of the inline budget; `None` when it
    // needed more and its own deadline allows more.
    let quick = |grid: &Grid| {
        let left = INLINE_BUDGET.saturating_sub(started.elapsed());
        let capped = Budget {
            per_puzzle: budget.per_puzzle.min(left),
            ..budget
        };
        let answer = answer(ctx, grid, job.mode, job.analyses, capped);
        let cut_short = answer.status == AnswerStatus::Timeout && budget.per_puzzle > left;
        (!cut_short).then_some(answer)
    };
    let mut statuses = StatusCounts::default();
    let body = match &job.puzzles {
        Puzzles::One(grid) => {
            let answer = quick(grid)?;
            statuses.add(answer.status);
            Reply::single(&job.id, answer, &ctx.worker_id).to_json()
        }
        Puzzles::Batch(items) => {
            let mut answers = Vec::with_capacity(items.len());
            for item in items {
                let answer = match item {
                    Ok(grid) => quick(grid)?,
                    Err(e) => Answer::invalid(e),
                };
                statuses.add(answer.status);
                answers.push(answer);
            }
            Reply::batch(&job.id, answers, &ctx.worker_id).to_json()
        }
    };
    work.span.record("job_id", excerpt(job.id.as_json()));
    debug!(puzzles = statuses.total(), "solved on the event loop");
    Some((body, statuses))
}

/// The `invalid` result of a job that could not be read, with its statuses.
pub(crate) fn rejected(
    ctx: &Context,
    span: &Span,
    rejection: &Rejection,
) -> (Vec<u8>, StatusCounts) {
    span.record("job_id", excerpt(rejection.id.as_json()));
    warn!(error = %rejection.error, "job rejected as invalid");
    let mut statuses = StatusCounts::default();
    statuses.add(AnswerStatus::Invalid);
    (
        Reply::rejected(rejection, &ctx.worker_id).to_json(),
        statuses,
    )
}

/// How long a job's puzzles may take: each its own deadline, and all of
/// them together what is left of the job's (`worker.max_job_ms` from its
/// delivery), so a huge batch is answered before the broker's
/// `consumer_timeout` takes the job back.
#[derive(Debug, Clone, Copy)]
struct Budget {
    per_puzzle: Duration,
    job_ends: Instant,
    max_job: Duration,
}

impl Budget {
    /// The deadline of the next puzzle; `None` when the job's time is up.
    fn next(&self) -> Option<Duration> {
        let left = self.job_ends.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| self.per_puzzle.min(left))
    }
}

/// One puzzle's answer, with the analyses asked for; a panic in the solver
/// becomes an `error` answer, and a puzzle reached after the job's deadline
/// a `timeout` one.
fn answer(ctx: &Context, grid: &Grid, mode: Mode, analyses: Analyses, budget: Budget) -> Answer {
    let Some(timeout) = budget.next() else {
        return Answer::timed_out(format!(
            "not reached within the job's deadline of {} ms (worker.max_job_ms)",
            budget.max_job.as_millis()
        ))
        .with_canonical(grid, analyses);
    };
    let (answer, panic) = answer_guarded(ctx.solve, grid, mode, analyses, Some(timeout));
    if let Some(panic) = panic {
        error!(panic = %panic, puzzle = %grid, "the solver panicked");
    }
    answer
}

/// Puzzles per chunk for a batch of `len` on `threads` threads.
fn chunk_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1) * CHUNKS_PER_THREAD)
        .clamp(MIN_CHUNK, MAX_CHUNK)
}

/// A batch being solved: its chunks run on any pool thread, and the one
/// that finishes last assembles and sends the result message.
struct SplitBatch {
    ctx: Arc<Context>,
    id: JobId,
    items: Vec<Result<Grid, GridError>>,
    mode: Mode,
    analyses: Analyses,
    budget: Budget,
    chunk: usize,
    parts: Mutex<Vec<Option<Vec<Answer>>>>,
    remaining: AtomicUsize,
    completion: Mutex<Option<Completion>>,
    span: Span,
    generation: u64,
}

impl SplitBatch {
    #[allow(clippy::too_many_arguments)]
    fn start(
        ctx: &Arc<Context>,
        id: JobId,
        items: Vec<Result<Grid, GridError>>,
        mode: Mode,
        analyses: Analyses,
        budget: Budget,
        completion: Completion,
        span: Span,
        generation: u64,
    ) {
        // While other tasks wait for a thread, every thread is busy: a
        // batch that fits in one chunk is not split, sparing the hand-offs.
        let chunk = if items.len() <= MAX_CHUNK && ctx.pool.has_waiting() {
            items.len().max(1)
        } else {
            chunk_len(items.len(), ctx.threads)
        };
        let chunks = items.len().div_ceil(chunk);
        let batch = Arc::new(SplitBatch {
            ctx: Arc::clone(ctx),
            id,
            items,
            mode,
            analyses,
            budget,
            chunk,
            parts: Mutex::new(vec![None; chunks]),
            remaining: AtomicUsize::new(chunks),
            completion: Mutex::new(Some(completion)),
            span,
            generation,
        });
        for n in 1..chunks {
            let batch = Arc::clone(&batch);
            ctx.pool.submit(Box::new(move || {
                let _entered = batch.span.enter();
                batch.solve_chunk(n);
            }));
        }
        batch.solve_chunk(0);
    }

    fn solve_chunk(&self, n: usize) {
        let start = n * self.chunk;
        let end = (start + self.chunk).min(self.items.len());
        let items = &self.items[start..end];
        // A batch of a lost connection: its result would be dropped, so its
        // remaining chunks are not solved.
        let stale = self.ctx.is_stale(self.generation);
        let answers = catch_unwind(AssertUnwindSafe(|| {
            items
                .iter()
                .map(|item| match item {
                    Ok(_) if stale => Answer::error("not solved: the connection was lost"),
                    Ok(grid) => answer(&self.ctx, grid, self.mode, self.analyses, self.budget),
                    Err(e) => Answer::invalid(e),
                })
                .collect::<Vec<_>>()
        }))
        .unwrap_or_else(|_| {
            error!(chunk = n, "a batch chunk failed outside the solver");
            vec![
                Answer::error("the worker failed on this puzzle (a bug); it has been logged");
                items.len()
            ]
        });
        self.parts.lock().unwrap_or_else(|e| e.into_inner())[n] = Some(answers);
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.finish();
        }
    }

    fn finish(&self) {
        if self.ctx.is_stale(self.generation) {
            if let Some(completion) = self.take_completion() {
                completion.skip();
            }
            return;
        }
        let parts = std::mem::take(&mut *self.parts.lock().unwrap_or_else(|e| e.into_inner()));
        let mut results = Vec::with_capacity(self.items.len());
        for (n, part) in parts.into_iter().enumerate() {
            match part {
                Some(answers) => results.extend(answers),
                // Every chunk stores its part before counting itself done.
                None => {
                    let len = self.chunk.min(self.items.len() - n * self.chunk);
                    results.extend(std::iter::repeat_n(
                        Answer::error("the worker lost this puzzle (a bug); it has been logged"),
                        len,
                    ));
                }
            }
        }
        let mut statuses = StatusCounts::default();
        for answer in &results {
            statuses.add(answer.status);
        }
        debug!(puzzles = results.len(), "batch solved");
        let body = Reply::batch(&self.id, results, &self.ctx.worker_id).to_json();
        if let Some(completion) = self.take_completion() {
            completion.finish(body, statuses);
        }
    }

    /// The job's completion, to the one caller that sends its result.
    fn take_completion(&self) -> Option<Completion> {
        self.completion
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Pool;
    use crate::protocol::AnswerStatus;
    use crate::solver::Outcome;
    use serde_json::Value;
    use sudokud_testkit::{PUZZLE, SOLUTION};
    use tokio::sync::mpsc;

    fn context(
        pool: &Pool,
        threads: usize,
        done: mpsc::UnboundedSender<Solved>,
        solve: SolveFn,
    ) -> Arc<Context> {
        Arc::new(Context {
            limits: Limits::default(),
            worker_id: "test/1".into(),
            threads,
            pool: pool.handle(),
            done,
            solve,
            max_job: Duration::from_secs(600),
            generation: Arc::new(AtomicU64::new(0)),
            #[cfg(feature = "fault-injection")]
            abort_on_id: None,
        })
    }

    fn work(tag: u64, body: &str, generation: u64) -> Work {
        Work {
            key: Key { generation, tag },
            body: Arc::new(body.as_bytes().to_vec()),
            delivered_at: Instant::now(),
            message_id: Some(format!("m{tag}")),
            span: Span::none(),
        }
    }

    fn run_jobs(
        solve: SolveFn,
        threads: usize,
        bodies: &[String],
    ) -> Vec<(u64, Value, StatusCounts)> {
        let pool = Pool::start(threads).unwrap();
        let (done, mut results) = mpsc::unbounded_channel();
        let ctx = context(&pool, threads, done, solve);
        for (key, body) in bodies.iter().enumerate() {
            start(&ctx, work(key as u64, body, 0));
        }
        let mut out: Vec<_> = (0..bodies.len())
            .map(|_| {
                let solved = results.blocking_recv().unwrap();
                let body: Value = serde_json::from_slice(&solved.body.unwrap()).unwrap();
                (solved.key.tag, body, solved.statuses)
            })
            .collect();
        out.sort_by_key(|r| r.0);
        out
    }

    #[test]
    fn answers_single_batch_and_rejected_jobs() {
        let batch: Vec<String> = (0..100)
            .map(|i| {
                if i % 10 == 3 {
                    "\"x\"".to_string()
                } else {
                    format!("\"{PUZZLE}\"")
                }
            })
            .collect();
        let out = run_jobs(
            crate::solver::solve,
            2,
            &[
                format!(r#"{{"id":1,"puzzle":"{PUZZLE}"}}"#),
                format!(r#"{{"id":"b","puzzles":[{}]}}"#, batch.join(",")),
                "not json".to_string(),
            ],
        );
        assert_eq!(out[0].1["solution"], SOLUTION);
        assert_eq!(out[0].1["worker"], "test/1");
        assert_eq!(out[0].2.get(AnswerStatus::Solved), 1);
        let results = out[1].1["results"].as_array().unwrap();
        assert_eq!(results.len(), 100);
        for (i, result) in results.iter().enumerate() {
            if i % 10 == 3 {
                assert_eq!(result["status"], "invalid", "{i}");
            } else {
                assert_eq!(result["solution"], SOLUTION, "{i}");
            }
        }
        assert_eq!(out[1].2.get(AnswerStatus::Invalid), 10);
        assert_eq!(out[1].2.get(AnswerStatus::Solved), 90);
        assert_eq!(out[2].1["id"], "m2");
        assert_eq!(out[2].1["status"], "invalid");
    }

    fn panicking_solve(_: &Grid, _: Mode, _: Option<Duration>) -> Outcome {
        panic!("injected failure")
    }

    #[test]
    fn a_solver_panic_becomes_an_error_answer() {
        let out = run_jobs(
            panicking_solve,
            1,
            &[
                format!(r#"{{"id":1,"puzzle":"{PUZZLE}"}}"#),
                format!(r#"{{"id":2,"puzzles":["{PUZZLE}","bad"]}}"#),
            ],
        );
        assert_eq!(out[0].1["status"], "error");
        assert_eq!(out[0].1["id"], 1);
        assert!(out[0].1["error"].as_str().unwrap().contains("a bug"));
        let results = out[1].1["results"].as_array().unwrap();
        assert_eq!(results[0]["status"], "error");
        assert_eq!(results[1]["status"], "invalid");
    }

    #[test]
    fn a_panic_outside_the_solver_still_answers_and_a_shutdown_does_not() {
        let pool = Pool::start(1).unwrap();
        let (done, mut results) = mpsc::unbounded_channel();
        let ctx = context(&pool, 1, done, crate::solver::solve);
        let completion = |tag| Completion {
            ctx: Arc::clone(&ctx),
            key: Key { generation: 0, tag },
            id: JobId::from_message_id(Some("m")),
            sent: false,
        };
        let guard = completion(1);
        let panicked = catch_unwind(AssertUnwindSafe(move || {
            let _guard = guard;
            panic!("injected failure outside the solver");
        }));
        assert!(panicked.is_err());
        let solved = results.try_recv().unwrap();
        let body: Value = serde_json::from_slice(&solved.body.unwrap()).unwrap();
        assert_eq!(
            (solved.key.tag, &body["status"], &body["id"]),
            (1, &Value::from("error"), &Value::from("m"))
        );
        assert_eq!(solved.statuses.get(AnswerStatus::Error), 1);
        // Dropped without a panic: the pool gave up the work at shutdown.
        drop(completion(2));
        assert!(results.try_recv().is_err());
    }

    #[test]
    fn jobs_of_a_lost_connection_are_skipped_not_solved() {
        let pool = Pool::start(2).unwrap();
        let (done, mut results) = mpsc::unbounded_channel();
        let ctx = context(&pool, 2, done, crate::solver::solve);
        ctx.generation.store(1, Ordering::Release);
        let puzzles = vec![format!("\"{PUZZLE}\""); 100];
        let batch = format!(r#"{{"id":"b","puzzles":[{}]}}"#, puzzles.join(","));
        let single = format!(r#"{{"id":1,"puzzle":"{PUZZLE}"}}"#);
        start(&ctx, work(0, &single, 0));
        start(&ctx, work(1, &batch, 0));
        start(&ctx, work(2, &single, 1));
        start(&ctx, work(3, &batch, 1));
        let mut out: Vec<Solved> = (0..4).map(|_| results.blocking_recv().unwrap()).collect();
        out.sort_by_key(|s| s.key.tag);
        // Each job still comes back once, so its pool slot is freed; only
        // the current connection's are answered.
        assert!(out[0].body.is_none() && out[1].body.is_none());
        assert_eq!(out[0].statuses.total() + out[1].statuses.total(), 0);
        let body: Value = serde_json::from_slice(out[2].body.as_ref().unwrap()).unwrap();
        assert_eq!(body["solution"], SOLUTION);
        let body: Value = serde_json::from_slice(out[3].body.as_ref().unwrap()).unwrap();
        assert_eq!(body["results"].as_array().unwrap().len(), 100);
        assert!(results.try_recv().is_err());
    }

    #[test]
    fn small_easy_jobs_are_answered_inline_exactly_as_the_pool_would() {
        let pool = Pool::start(1).unwrap();
        let (done, mut results) = mpsc::unbounded_channel();
        let ctx = context(&pool, 1, done, crate::solver::solve);
        let batch: Vec<String> = (0..INLINE_MAX_PUZZLES - 1)
            .map(|_| format!("\"{PUZZLE}\""))
            .collect();
        for body in [
            format!(r#"{{"id":1,"puzzle":"{PUZZLE}","mode":"unique"}}"#),
            format!(r#"{{"id":"b","puzzles":[{},"bad"]}}"#, batch.join(",")),
            "not json".to_string(),
        ] {
            let (inline, statuses) = answer_inline(&ctx, &work(7, &body, 0)).unwrap();
            start(&ctx, work(7, &body, 0));
            let pooled = results.blocking_recv().unwrap();
            let strip = |body: &[u8]| {
                let mut value: Value = serde_json::from_slice(body).unwrap();
                strip_timings(&mut value);
                value
            };
            assert_eq!(strip(&inline), strip(&pooled.body.unwrap()), "{body}");
            assert_eq!(statuses, pooled.statuses, "{body}");
        }
    }

    /// Drops the fields that differ from run to run.
    fn strip_timings(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("elapsed_us");
                map.values_mut().for_each(strip_timings);
            }
            Value::Array(items) => items.iter_mut().for_each(strip_timings),
            _ => {}
        }
    }

    #[test]
    fn hard_or_large_jobs_go_to_the_pool() {
        let pool = Pool::start(1).unwrap();
        let (done, _results) = mpsc::unbounded_channel();
        let ctx = context(&pool, 1, done, crate::solver::solve);
        let empty = ".".repeat(81);
        let hard = format!(r#"{{"id":1,"puzzle":"{empty}","mode":"count","limit":1000}}"#);
        assert!(answer_inline(&ctx, &work(1, &hard, 0)).is_none());
        let many: Vec<String> = (0..INLINE_MAX_PUZZLES + 1)
            .map(|_| "\"x\"".to_string())
            .collect();
        let large = format!(r#"{{"id":2,"puzzles":[{}]}}"#, many.join(","));
        assert!(answer_inline(&ctx, &work(2, &large, 0)).is_none());
        // Even a 1 ms deadline is longer than the inline budget: the puzzle
        // gets its whole deadline, on the pool.
        let short =
            format!(r#"{{"id":3,"puzzle":"{empty}","mode":"count","limit":1000,"timeout_ms":1}}"#);
        assert!(
            answer_inline(&ctx, &work(3, &short, 0)).is_none(),
            "1 ms is above the inline budget"
        );
    }

    #[test]
    fn chunks_are_neither_tiny_nor_huge() {
        assert_eq!(chunk_len(1, 2), MIN_CHUNK);
        assert_eq!(chunk_len(32, 2), MIN_CHUNK);
        assert_eq!(chunk_len(1000, 2), 125);
        assert_eq!(chunk_len(10_000, 2), MAX_CHUNK);
    }
}
