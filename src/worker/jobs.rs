//! A job's life on the solver pool: read the message, answer it in parts
//! spread over the pool threads ([`Task`]), and hand back the
//! encoded result message; and the event loop's shortcut for small, easy
//! jobs ([`answer_inline`]).
//!
//! Everything here runs on pool threads, but [`answer_inline`] on the
//! event loop. Every job handed to [`Solvers::submit`] produces exactly
//! one [`Solved`], whatever happens: a panic in the solver becomes an
//! `error` answer for that puzzle, a panic in a part of a job `error`
//! answers for that part, and a panic anywhere else an `error` result for
//! the job (the [`Completion`] guard sends it when a panic drops it
//! unfinished). A job delivered on a connection that has since been lost
//! is not solved: its [`Solved`] comes back without a body, since the
//! broker redelivers the job anyway. Only a closed pool (at shutdown) ends
//! a job without a [`Solved`], and that job stays unacknowledged.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tracing::{Span, debug, error, warn};

use crate::pool::{Pool, PoolHandle};
use crate::protocol::{
    Answer, Answered, Answerer, Job, JobId, Limits, Part, Rejection, SolveFn, Task, excerpt,
};

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
    pub answered: Option<Answered>,
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
    fn finish(self, answered: Answered) {
        self.send(Some(answered));
    }

    /// Gives the job's pool slot back without an answer.
    fn skip(self) {
        self.send(None);
    }

    fn send(mut self, answered: Option<Answered>) {
        self.sent = true;
        // The receiver is gone only when the worker has stopped; the job
        // then stays unacknowledged and the broker redelivers it.
        let _ = self.ctx.done.send(Solved {
            key: self.key,
            answered,
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
        let answered = Answered::single(&self.id, answer, &self.ctx.worker_id);
        let _ = self.ctx.done.send(Solved {
            key: self.key,
            answered: Some(answered),
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
    let mut task = match read(ctx, &work) {
        Ok(task) => task,
        Err(rejected) => return completion.finish(rejected),
    };
    drop(work.body);
    completion.id = task.id().clone();
    task.split(ctx.threads, ctx.pool.has_waiting());
    if task.parts() == 1 {
        // Not worth a hand-off: answered here, as a part of its own.
        let stale = || ctx.is_stale(work.key.generation);
        let part = answer_part(&task, 0, &answerer(ctx, &stale));
        let answered = task.merge(vec![part], &ctx.worker_id);
        debug!(puzzles = answered.statuses.total(), "solved");
        completion.finish(answered);
        return;
    }
    SplitJob::start(
        ctx,
        task,
        completion,
        work.span.clone(),
        work.key.generation,
    );
}

/// Reads a job's message: its task, or its `invalid` result. The one place
/// a job is read, on the pool and on the event loop alike.
fn read(ctx: &Context, work: &Work) -> Result<Task, Answered> {
    let job = Job::parse(&work.body, work.message_id.as_deref(), &ctx.limits)
        .map_err(|rejection| rejected(ctx, &work.span, &rejection))?;
    work.span.record("job_id", excerpt(job.id.as_json()));
    #[cfg(feature = "fault-injection")]
    if ctx.abort_on_id.as_deref() == Some(job.id.as_json()) {
        error!("fault injection: aborting the process on this job");
        std::process::abort();
    }
    Ok(Task::new(job, work.delivered_at, ctx.max_job))
}

/// How the pool answers: with the context's solver and name, giving up on
/// the puzzles not started once `stale` says the connection is lost.
fn answerer<'a>(ctx: &'a Context, stale: &'a (dyn Fn() -> bool + Sync)) -> Answerer<'a> {
    Answerer {
        abandoned: Some(stale),
        ..Answerer::new(ctx.solve, &ctx.worker_id)
    }
}

/// Part `n` of `task`; `None` if answering it panicked outside the solver
/// (a bug: [`Task::merge`] answers its puzzles `error`).
fn answer_part(task: &Task, n: usize, answerer: &Answerer) -> Option<Part> {
    let part = catch_unwind(AssertUnwindSafe(|| task.part(n, answerer)));
    if part.is_err() {
        error!(part = n, "a part of a job failed outside the solver");
    }
    part.ok()
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
/// larger than a small batch, asks for a rating, or one of its puzzles
/// needs more than [`INLINE_BUDGET`]; it goes to the pool (which solves it
/// afresh, having lost at most that budget). The answer is exactly what
/// the pool would produce.
pub(crate) fn answer_inline(ctx: &Context, work: &Work) -> Option<Answered> {
    if work.body.len() > INLINE_MAX_BYTES {
        return None;
    }
    let _entered = work.span.enter();
    let task = match read(ctx, work) {
        Ok(task) => task,
        Err(rejected) => return Some(rejected),
    };
    if task.len() > INLINE_MAX_PUZZLES {
        return None;
    }
    let answered = task.answer_within(&Answerer::new(ctx.solve, &ctx.worker_id), INLINE_BUDGET)?;
    debug!(
        puzzles = answered.statuses.total(),
        "solved on the event loop"
    );
    Some(answered)
}

/// The `invalid` result of a job that could not be read, logged.
pub(crate) fn rejected(ctx: &Context, span: &Span, rejection: &Rejection) -> Answered {
    span.record("job_id", excerpt(rejection.id.as_json()));
    warn!(error = %rejection.error, "job rejected as invalid");
    Answered::rejected(rejection, &ctx.worker_id)
}

/// A job answered in parts: each part runs on any pool thread, and the one
/// that finishes last merges them and sends the result message. Parts in,
/// one result out, whatever the kind of job ([`Task`]).
struct SplitJob {
    ctx: Arc<Context>,
    task: Task,
    parts: Mutex<Vec<Option<Part>>>,
    remaining: AtomicUsize,
    completion: Mutex<Option<Completion>>,
    span: Span,
    generation: u64,
}

impl SplitJob {
    fn start(ctx: &Arc<Context>, task: Task, completion: Completion, span: Span, generation: u64) {
        let parts = task.parts();
        let job = Arc::new(SplitJob {
            ctx: Arc::clone(ctx),
            task,
            parts: Mutex::new(vec![None; parts]),
            remaining: AtomicUsize::new(parts),
            completion: Mutex::new(Some(completion)),
            span,
            generation,
        });
        for n in 1..parts {
            let job = Arc::clone(&job);
            ctx.pool.submit(Box::new(move || {
                let _entered = job.span.enter();
                job.answer_part(n);
            }));
        }
        job.answer_part(0);
    }

    fn answer_part(&self, n: usize) {
        // A job of a lost connection: its result would be dropped, so its
        // puzzles not yet started are not solved.
        let stale = || self.ctx.is_stale(self.generation);
        let part = answer_part(&self.task, n, &answerer(&self.ctx, &stale));
        self.parts.lock().unwrap_or_else(|e| e.into_inner())[n] = part;
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.finish();
        }
    }

    fn finish(&self) {
        let Some(completion) = self.take_completion() else {
            return;
        };
        if self.ctx.is_stale(self.generation) {
            completion.skip();
            return;
        }
        let parts = std::mem::take(&mut *self.parts.lock().unwrap_or_else(|e| e.into_inner()));
        let answered = self.task.merge(parts, &self.ctx.worker_id);
        debug!(puzzles = answered.statuses.total(), "job solved in parts");
        completion.finish(answered);
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
    use crate::protocol::{AnswerStatus, StatusCounts, batch, stripped};
    use crate::solver::{Grid, Mode, Outcome, Status};
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
                let answered = solved.answered.unwrap();
                let body: Value = serde_json::from_slice(&answered.body).unwrap();
                (solved.key.tag, body, answered.statuses)
            })
            .collect();
        out.sort_by_key(|r| r.0);
        out
    }

    #[test]
    fn answers_single_batch_and_rejected_jobs() {
        let out = run_jobs(
            crate::solver::solve,
            2,
            &[
                format!(r#"{{"id":1,"puzzle":"{PUZZLE}"}}"#),
                batch(100),
                "not json".to_string(),
            ],
        );
        assert_eq!(out[0].1["solution"], SOLUTION);
        assert_eq!(out[0].1["worker"], "test/1");
        assert_eq!(out[0].2.get(AnswerStatus::Solved), 1);
        let results = out[1].1["results"].as_array().unwrap();
        assert_eq!(results.len(), 100);
        for (i, result) in results.iter().enumerate() {
            if i % 7 == 3 {
                assert_eq!(result["status"], "invalid", "{i}");
            } else {
                assert_eq!(result["solution"], SOLUTION, "{i}");
            }
        }
        assert_eq!(out[1].2.get(AnswerStatus::Invalid), 14);
        assert_eq!(out[1].2.get(AnswerStatus::Solved), 86);
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
        let answered = solved.answered.unwrap();
        let body: Value = serde_json::from_slice(&answered.body).unwrap();
        assert_eq!(
            (solved.key.tag, &body["status"], &body["id"]),
            (1, &Value::from("error"), &Value::from("m"))
        );
        assert_eq!(answered.statuses.get(AnswerStatus::Error), 1);
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
        assert!(out[0].answered.is_none() && out[1].answered.is_none());
        let body = |n: usize| -> Value {
            serde_json::from_slice(&out[n].answered.as_ref().unwrap().body).unwrap()
        };
        assert_eq!(body(2)["solution"], SOLUTION);
        let body = body(3);
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
            let inline = answer_inline(&ctx, &work(7, &body, 0)).unwrap();
            start(&ctx, work(7, &body, 0));
            let pooled = results.blocking_recv().unwrap().answered.unwrap();
            assert_eq!(stripped(&inline), stripped(&pooled), "{body}");
            assert_eq!(inline.statuses, pooled.statuses, "{body}");
        }
    }

    /// A solver for which every puzzle is hard: it uses its whole deadline
    /// and times out (the real one counts the empty grid's first thousand
    /// solutions within the inline budget when optimised).
    fn always_hard(_: &Grid, mode: Mode, timeout: Option<Duration>) -> Outcome {
        let timeout = timeout.unwrap_or(Duration::from_millis(10));
        std::thread::sleep(timeout);
        Outcome {
            status: Status::Timeout,
            solution: None,
            unique: None,
            count: matches!(mode, Mode::Count { .. }).then_some(0),
            guesses: 128,
            elapsed: timeout,
        }
    }

    #[test]
    fn hard_or_large_jobs_go_to_the_pool() {
        let pool = Pool::start(1).unwrap();
        let (done, _results) = mpsc::unbounded_channel();
        let ctx = context(&pool, 1, done, always_hard);
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
}
