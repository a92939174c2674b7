//! From a job to its answer: [`answer_job`], the one function that turns a
//! job message into its result message, and the steps it is made of, for
//! callers that spread a job over threads.
//!
//! A job read ([`Job::parse`]) becomes a [`Task`] with its [`Budget`]. A
//! task is answered in *parts* ([`Task::parts`], [`Task::part`]), each on
//! its own, on any thread and in any order; [`Task::merge`] takes the
//! parts back, in order, and writes the one result message. [`answer_job`]
//! does the same on the calling thread, part after part. A single puzzle is
//! one part; a batch is cut into chunks of puzzles.
//!
//! A new kind of job is a new variant of `Work` (the job's own data) with
//! its arm in each of [`Task::parts`], [`Task::part`] and [`Task::merge`]
//! (and its `Piece` variant for what a part holds): every caller (the
//! worker's pool, `sudokud solve`-like tools, the benches) then answers it
//! unchanged.

use std::time::{Duration, Instant};

use super::generation;
use super::{Analyses, Answer, Generation, Job, JobId, Limits, Puzzles, Rejection, Reply, SolveFn};
use super::{AnswerStatus, StatusCounts, answer_guarded};
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
/// Most puzzles one part of a generation job makes: a puzzle takes from
/// tens of microseconds (no band) to seconds (a hard band), so parts stay
/// small enough to spread over every thread.
const MAX_GENERATE_CHUNK: usize = 16;

/// What answering needs beside the job: the solver and the worker's name
/// for the result message, and optionally a way to learn that the answer
/// is no longer wanted.
#[derive(Clone, Copy)]
pub struct Answerer<'a> {
    pub solve: SolveFn,
    pub worker: &'a str,
    /// Whether the answer is no longer wanted (the worker lost the
    /// connection it would go out on): the puzzles not yet started are
    /// then not solved. Asked between puzzles.
    pub abandoned: Option<&'a (dyn Fn() -> bool + Sync)>,
}

impl<'a> Answerer<'a> {
    pub fn new(solve: SolveFn, worker: &'a str) -> Answerer<'a> {
        Answerer {
            solve,
            worker,
            abandoned: None,
        }
    }

    fn abandoned(&self) -> bool {
        self.abandoned.is_some_and(|abandoned| abandoned())
    }
}

/// How long a job's puzzles may take: each its own deadline, and all of
/// them together what is left of the job's (`worker.max_job_ms` from its
/// delivery), so a huge batch is answered before the broker's
/// `consumer_timeout` takes the job back.
#[derive(Debug, Clone, Copy)]
struct Budget {
    per_puzzle: Duration,
    /// `None`: no deadline for the whole job.
    job_ends: Option<Instant>,
    max_job: Duration,
}

impl Budget {
    /// Each puzzle `per_puzzle`, the whole job `max_job` from `delivered_at`.
    fn new(per_puzzle: Duration, delivered_at: Instant, max_job: Duration) -> Budget {
        Budget {
            per_puzzle,
            job_ends: delivered_at.checked_add(max_job),
            max_job,
        }
    }

    /// A generation job's: no per-puzzle deadline, the whole job ending
    /// after its own `timeout`, or `max_job` if that is sooner or there is
    /// none.
    fn whole(timeout: Option<Duration>, delivered_at: Instant, max_job: Duration) -> Budget {
        let bound = timeout.map_or(max_job, |t| t.min(max_job));
        Budget {
            per_puzzle: bound,
            job_ends: delivered_at.checked_add(bound),
            max_job: bound,
        }
    }

    /// Whether the whole job's time is up.
    fn over(&self) -> bool {
        self.job_ends.is_some_and(|ends| Instant::now() >= ends)
    }

    /// The deadline of the next puzzle; `None` when the job's time is up.
    fn next(&self) -> Option<Duration> {
        let Some(job_ends) = self.job_ends else {
            return Some(self.per_puzzle);
        };
        let left = job_ends.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| self.per_puzzle.min(left))
    }
}

/// A result message ready to publish, with the statuses of its answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub body: Vec<u8>,
    pub statuses: StatusCounts,
    /// For a generation job: puzzles made, and candidates drawn.
    pub generated: Option<Tally>,
}

/// What a generation job made, for the worker's metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub puzzles: u64,
    pub tried: u64,
}

impl Answered {
    /// The result message of a job with one answer.
    pub fn single(id: &JobId, answer: Answer, worker: &str) -> Answered {
        let mut statuses = StatusCounts::default();
        statuses.add(answer.status);
        Answered {
            body: Reply::single(id, answer, worker).to_json(),
            statuses,
            generated: None,
        }
    }

    /// The `invalid` result message of a job that could not be read.
    pub fn rejected(rejection: &Rejection, worker: &str) -> Answered {
        let mut statuses = StatusCounts::default();
        statuses.add(AnswerStatus::Invalid);
        Answered {
            body: Reply::rejected(rejection, worker).to_json(),
            statuses,
            generated: None,
        }
    }
}

/// The job message `body`, answered on the calling thread: its result
/// message, `invalid` if it cannot be read. `message_id` stands in for a
/// missing `id`; `budget` gives the job's time (its per-puzzle deadline is
/// the job's own `timeout_ms`).
pub fn answer_job(
    body: &[u8],
    message_id: Option<&str>,
    limits: &Limits,
    delivered_at: Instant,
    max_job: Duration,
    answerer: &Answerer,
) -> Answered {
    match Job::parse(body, message_id, limits) {
        Ok(job) => Task::new(job, delivered_at, max_job).answer(answerer),
        Err(rejection) => Answered::rejected(&rejection, answerer.worker),
    }
}

/// What a job asks for, by kind.
#[derive(Debug)]
enum Work {
    One(Grid),
    Batch(Vec<Result<Grid, GridError>>),
    Generate(Box<Generation>),
}

/// A job read and ready to answer, in parts.
#[derive(Debug)]
pub struct Task {
    id: JobId,
    work: Work,
    mode: Mode,
    analyses: Analyses,
    budget: Budget,
    /// Items (puzzles) per part.
    chunk: usize,
}

/// What one part of a task holds once answered.
#[derive(Debug, Clone)]
enum Piece {
    Answers(Vec<Answer>),
    /// What a part of a generation job made.
    Made(generation::Made),
}

/// One answered part of a [`Task`], for [`Task::merge`].
#[derive(Debug, Clone)]
pub struct Part(Piece);

impl Task {
    /// The task of `job`, delivered at `delivered_at`, with `max_job` for
    /// the whole of it. It is one part until [`Task::split`].
    pub fn new(job: Job, delivered_at: Instant, max_job: Duration) -> Task {
        let Job {
            id,
            puzzles,
            mode,
            timeout,
            analyses,
        } = job;
        let (work, budget) = match puzzles {
            Puzzles::One(grid) => (Work::One(grid), Budget::new(timeout, delivered_at, max_job)),
            Puzzles::Batch(items) => (
                Work::Batch(items),
                Budget::new(timeout, delivered_at, max_job),
            ),
            Puzzles::Generate(generation) => {
                let budget = Budget::whole(generation.timeout, delivered_at, max_job);
                (Work::Generate(generation), budget)
            }
        };
        let chunk = match &work {
            Work::One(_) => 1,
            Work::Batch(items) => items.len().max(1),
            Work::Generate(generation) => generation.request.count as usize,
        };
        Task {
            id,
            work,
            mode,
            analyses,
            budget,
            chunk,
        }
    }

    pub fn id(&self) -> &JobId {
        &self.id
    }

    /// Puzzles the job carries, or asks to be made.
    pub fn len(&self) -> usize {
        match &self.work {
            Work::One(_) => 1,
            Work::Batch(items) => items.len(),
            Work::Generate(generation) => generation.request.count as usize,
        }
    }

    /// Always false: a job carries at least one puzzle.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Cuts the task into parts for `threads` threads: a few per thread,
    /// each neither tiny nor huge. `busy`: every thread has work waiting
    /// already, so a task that fits in one part stays whole (sparing the
    /// hand-offs).
    pub fn split(&mut self, threads: usize, busy: bool) {
        match &self.work {
            Work::One(_) => {}
            Work::Batch(items) => {
                self.chunk = if busy && items.len() <= MAX_CHUNK {
                    items.len().max(1)
                } else {
                    chunk_len(items.len(), threads)
                };
            }
            // However busy: one puzzle may take long, so a job is always
            // spread over the threads.
            Work::Generate(_) => {
                self.chunk = self
                    .len()
                    .div_ceil(threads.max(1) * CHUNKS_PER_THREAD)
                    .clamp(1, MAX_GENERATE_CHUNK);
            }
        }
    }

    /// How many parts the task is answered in.
    pub fn parts(&self) -> usize {
        self.len().div_ceil(self.chunk)
    }

    /// Answers part `n` (below [`Task::parts`]). A panic in the solver
    /// becomes an `error` answer for that puzzle, and a puzzle reached
    /// after the job's deadline a `timeout` one.
    pub fn part(&self, n: usize, answerer: &Answerer) -> Part {
        let answers = match &self.work {
            Work::Generate(generation) => return self.make(generation, n, answerer),
            Work::One(grid) => vec![self.puzzle(grid, answerer, self.budget)],
            Work::Batch(items) => {
                let start = n * self.chunk;
                let end = (start + self.chunk).min(items.len());
                items
                    .get(start..end)
                    .unwrap_or_default()
                    .iter()
                    .map(|item| match item {
                        Ok(grid) => self.puzzle(grid, answerer, self.budget),
                        Err(e) => Answer::invalid(e),
                    })
                    .collect()
            }
        };
        Part(Piece::Answers(answers))
    }

    /// Makes the puzzles of part `n` of a generation job, until the job's
    /// deadline or until the answer is no longer wanted.
    fn make(&self, generation: &Generation, n: usize, answerer: &Answerer) -> Part {
        let first = (n * self.chunk) as u64;
        let last = (first + self.chunk as u64).min(generation.request.count);
        let stop = || self.budget.over() || answerer.abandoned();
        Part(Piece::Made(generation::make(
            &generation.request,
            first..last,
            self.analyses,
            stop,
        )))
    }

    /// The result message from every part, in order; a part missing
    /// (`None`: its thread failed, a bug) is answered `error`.
    pub fn merge(&self, parts: Vec<Option<Part>>, worker: &str) -> Answered {
        if let Work::Generate(generation) = &self.work {
            return self.merge_made(generation, parts, worker);
        }
        let mut answers = Vec::with_capacity(self.len());
        for (n, part) in parts.into_iter().enumerate() {
            match part {
                Some(Part(Piece::Answers(part))) => answers.extend(part),
                Some(Part(Piece::Made(_))) | None => {
                    let len = self.chunk.min(self.len().saturating_sub(n * self.chunk));
                    answers.extend(std::iter::repeat_n(
                        Answer::error(
                            "the worker failed on this puzzle (a bug); it has been logged",
                        ),
                        len,
                    ));
                }
            }
        }
        self.finish(answers, worker)
    }

    /// The result message of a generation job ([`generation::reply`]).
    fn merge_made(
        &self,
        generation: &Generation,
        parts: Vec<Option<Part>>,
        worker: &str,
    ) -> Answered {
        let parts = parts
            .into_iter()
            .map(|part| match part {
                Some(Part(Piece::Made(made))) => Some(made),
                Some(Part(Piece::Answers(_))) | None => None,
            })
            .collect();
        let (body, status, generated) = generation::reply(
            &self.id,
            &generation.request,
            parts,
            self.budget.max_job,
            worker,
        );
        let mut statuses = StatusCounts::default();
        statuses.add(status);
        Answered {
            body,
            statuses,
            generated: Some(generated),
        }
    }

    /// The result message of the job's answers, one per puzzle in order.
    fn finish(&self, mut answers: Vec<Answer>, worker: &str) -> Answered {
        let mut statuses = StatusCounts::default();
        for answer in &answers {
            statuses.add(answer.status);
        }
        let body = match &self.work {
            Work::One(_) => {
                let answer = answers.pop().unwrap_or_else(|| {
                    Answer::error("the worker lost this puzzle (a bug); it has been logged")
                });
                if statuses.total() == 0 {
                    statuses.add(answer.status);
                }
                Reply::single(&self.id, answer, worker).to_json()
            }
            Work::Batch(_) | Work::Generate(_) => Reply::batch(&self.id, answers, worker).to_json(),
        };
        Answered {
            body,
            statuses,
            generated: None,
        }
    }

    /// Every part on the calling thread, merged.
    pub fn answer(&self, answerer: &Answerer) -> Answered {
        let parts = (0..self.parts())
            .map(|n| Some(self.part(n, answerer)))
            .collect();
        self.merge(parts, answerer.worker)
    }

    /// Answers the task on the calling thread if every puzzle takes less
    /// than what is left of `within`, all together, and no rating is
    /// asked for (a rating can take milliseconds). `None` otherwise, having
    /// spent at most about `within`: the caller answers it in full
    /// elsewhere. The answer is exactly what [`Task::answer`] gives.
    pub fn answer_within(&self, answerer: &Answerer, within: Duration) -> Option<Answered> {
        if self.analyses.rate || matches!(self.work, Work::Generate(_)) {
            return None;
        }
        let started = Instant::now();
        // One puzzle within what is left; `None` when it needed more and
        // its own deadline allows more.
        let quick = |grid: &Grid| {
            let left = within.saturating_sub(started.elapsed());
            let capped = Budget {
                per_puzzle: self.budget.per_puzzle.min(left),
                ..self.budget
            };
            let answer = self.puzzle(grid, answerer, capped);
            let cut_short = answer.status == AnswerStatus::Timeout && self.budget.per_puzzle > left;
            (!cut_short).then_some(answer)
        };
        let answers = match &self.work {
            Work::Generate(_) => return None,
            Work::One(grid) => vec![quick(grid)?],
            Work::Batch(items) => items
                .iter()
                .map(|item| match item {
                    Ok(grid) => quick(grid),
                    Err(e) => Some(Answer::invalid(e)),
                })
                .collect::<Option<Vec<Answer>>>()?,
        };
        Some(self.finish(answers, answerer.worker))
    }

    /// One puzzle's answer within `budget`, with the analyses asked for.
    fn puzzle(&self, grid: &Grid, answerer: &Answerer, budget: Budget) -> Answer {
        if answerer.abandoned() {
            return Answer::error("not solved: the connection was lost");
        }
        let Some(timeout) = budget.next() else {
            let mut answer = Answer::timed_out(format!(
                "not reached within the job's deadline of {} ms (worker.max_job_ms)",
                budget.max_job.as_millis()
            ));
            if matches!(self.mode, Mode::Count { .. }) {
                // No solution found: the lower bound a timeout gives is 0.
                answer.count = Some(0);
            }
            return answer.with_canonical(grid, self.analyses);
        };
        let (answer, panic) = answer_guarded(
            answerer.solve,
            grid,
            self.mode,
            self.analyses,
            Some(timeout),
        );
        if let Some(panic) = panic {
            tracing::error!(panic = %panic, puzzle = %grid, "the solver panicked");
        }
        answer
    }
}

/// Puzzles per chunk for a batch of `len` on `threads` threads.
fn chunk_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1) * CHUNKS_PER_THREAD)
        .clamp(MIN_CHUNK, MAX_CHUNK)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::Value;
    use sudokud_testkit::{PUZZLE, SOLUTION};

    const WORKER: &str = "test/1";
    const MAX_JOB: Duration = Duration::from_secs(600);

    fn task(body: &str) -> Task {
        let job = Job::parse(body.as_bytes(), Some("m"), &Limits::default()).unwrap();
        Task::new(job, Instant::now(), MAX_JOB)
    }

    /// The result message without the fields that differ from run to run.
    pub(crate) fn stripped(answered: &Answered) -> Value {
        fn strip(value: &mut Value) {
            match value {
                Value::Object(map) => {
                    map.remove("elapsed_us");
                    map.values_mut().for_each(strip);
                }
                Value::Array(items) => items.iter_mut().for_each(strip),
                _ => {}
            }
        }
        let mut value: Value = serde_json::from_slice(&answered.body).unwrap();
        strip(&mut value);
        value
    }

    /// A batch job of `len` puzzles, every seventh from the fourth on
    /// (`i % 7 == 3`) not a puzzle.
    pub(crate) fn batch(len: usize) -> String {
        let puzzles: Vec<String> = (0..len)
            .map(|i| {
                if i % 7 == 3 {
                    "\"bad\"".to_string()
                } else {
                    format!("\"{PUZZLE}\"")
                }
            })
            .collect();
        format!(r#"{{"id":"b","puzzles":[{}]}}"#, puzzles.join(","))
    }

    #[test]
    fn answer_job_reads_solves_and_writes_or_rejects() {
        let answerer = Answerer::new(crate::solver::solve, WORKER);
        let limits = Limits::default();
        let now = Instant::now();
        let body = format!(r#"{{"id":1,"puzzle":"{PUZZLE}"}}"#);
        let answered = answer_job(body.as_bytes(), None, &limits, now, MAX_JOB, &answerer);
        let value = stripped(&answered);
        assert_eq!(value["solution"], SOLUTION);
        assert_eq!(
            (value["id"].clone(), value["worker"].clone()),
            (1.into(), WORKER.into())
        );
        assert_eq!(answered.statuses.get(AnswerStatus::Solved), 1);
        let answered = answer_job(b"[]", Some("m-1"), &limits, now, MAX_JOB, &answerer);
        let value = stripped(&answered);
        assert_eq!(
            (value["id"].clone(), value["status"].clone()),
            ("m-1".into(), "invalid".into())
        );
        assert_eq!(answered.statuses.get(AnswerStatus::Invalid), 1);
    }

    #[test]
    fn parts_merged_in_order_are_the_whole_answer_however_split() {
        let answerer = Answerer::new(crate::solver::solve, WORKER);
        let whole = task(&batch(300)).answer(&answerer);
        assert_eq!(whole.statuses.total(), 300);
        assert_eq!(whole.statuses.get(AnswerStatus::Invalid), 43);
        for (threads, busy) in [(1, false), (2, false), (4, false), (2, true)] {
            let mut task = task(&batch(300));
            task.split(threads, busy);
            // Parts answered out of order, merged in order.
            let mut parts: Vec<Option<Part>> = vec![None; task.parts()];
            for n in (0..task.parts()).rev() {
                parts[n] = Some(task.part(n, &answerer));
            }
            let merged = task.merge(parts, WORKER);
            assert_eq!(stripped(&merged), stripped(&whole), "{threads} {busy}");
            assert_eq!(merged.statuses, whole.statuses);
        }
    }

    #[test]
    fn a_missing_part_is_answered_error_and_the_rest_stands() {
        let answerer = Answerer::new(crate::solver::solve, WORKER);
        let mut task = task(&batch(100));
        task.split(1, false);
        assert_eq!((task.parts(), task.chunk), (4, 25));
        let mut parts: Vec<Option<Part>> = (0..task.parts())
            .map(|n| Some(task.part(n, &answerer)))
            .collect();
        parts[1] = None;
        let merged = task.merge(parts, WORKER);
        let value = stripped(&merged);
        let results = value["results"].as_array().unwrap();
        assert_eq!(results.len(), 100);
        assert!(results[25..50].iter().all(|r| r["status"] == "error"));
        assert_eq!(results[0]["solution"], SOLUTION);
        assert_eq!(merged.statuses.get(AnswerStatus::Error), 25);
    }

    #[test]
    fn an_abandoned_task_solves_nothing_more() {
        let abandoned = || true;
        let answerer = Answerer {
            abandoned: Some(&abandoned),
            ..Answerer::new(crate::solver::solve, WORKER)
        };
        let answered = task(&batch(10)).answer(&answerer);
        // Bad puzzles are still invalid; none is solved.
        assert_eq!(answered.statuses.get(AnswerStatus::Solved), 0);
        assert_eq!(answered.statuses.get(AnswerStatus::Error), 9);
    }

    #[test]
    fn a_job_past_its_deadline_times_out_puzzle_by_puzzle() {
        let answerer = Answerer::new(crate::solver::solve, WORKER);
        let job = Job::parse(batch(5).as_bytes(), None, &Limits::default()).unwrap();
        let long_ago = Instant::now() - Duration::from_secs(2);
        let task = Task::new(job, long_ago, Duration::from_secs(1));
        let value = stripped(&task.answer(&answerer));
        let results = value["results"].as_array().unwrap();
        assert_eq!(results[0]["status"], "timeout");
        assert!(
            results[0]["error"]
                .as_str()
                .unwrap()
                .contains("worker.max_job_ms")
        );
        assert_eq!(results[3]["status"], "invalid");
    }

    #[test]
    fn answered_within_a_budget_is_the_same_answer_or_none() {
        let answerer = Answerer::new(crate::solver::solve, WORKER);
        for body in [
            format!(r#"{{"id":1,"puzzle":"{PUZZLE}","mode":"unique"}}"#),
            batch(4),
        ] {
            let task = task(&body);
            let quick = task
                .answer_within(&answerer, Duration::from_secs(5))
                .unwrap();
            let whole = task.answer(&answerer);
            assert_eq!(stripped(&quick), stripped(&whole), "{body}");
            assert_eq!(quick.statuses, whole.statuses);
        }
        let empty = ".".repeat(81);
        let hard = task(&format!(
            r#"{{"puzzle":"{empty}","mode":"count","limit":1000}}"#
        ));
        assert!(
            hard.answer_within(&answerer, Duration::from_micros(50))
                .is_none()
        );
        let rated = task(&format!(r#"{{"puzzle":"{PUZZLE}","rate":true}}"#));
        assert!(
            rated
                .answer_within(&answerer, Duration::from_secs(5))
                .is_none()
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
