//! Job and result messages: the wire contract of `PROTOCOL.md` (v1), field
//! for field.
//!
//! [`Job::parse`] turns a message body into a [`Job`] or a [`Rejection`]
//! that still carries the job's `id`; [`Answer`] is one puzzle's result and
//! [`Reply`] the whole result message. Nothing here touches the broker.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::solver::{Grid, GridError, Mode, Outcome, Status};

/// What a job may ask for, and what it gets when it does not say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Bodies larger than this are answered `invalid` without being parsed.
    pub max_message_bytes: usize,
    /// Most puzzles in one batch.
    pub max_batch: usize,
    /// `limit` when a count job does not give one.
    pub default_count_limit: u64,
    /// Largest `limit` a count job may ask for.
    pub max_count_limit: u64,
    /// Per-puzzle deadline when a job does not give `timeout_ms`.
    pub default_timeout_ms: u64,
    /// Cap on any per-puzzle deadline.
    pub max_timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 1024 * 1024,
            max_batch: 10_000,
            default_count_limit: 1000,
            max_count_limit: 1000,
            default_timeout_ms: 10_000,
            max_timeout_ms: 60_000,
        }
    }
}

/// A job's `id`, kept as the exact JSON text it was sent as (a 30-digit
/// number stays 30 digits), or the message's `message_id`, or `null`.
#[derive(Debug, Clone)]
pub struct JobId(Box<RawValue>);

impl PartialEq for JobId {
    fn eq(&self, other: &JobId) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Eq for JobId {}

impl JobId {
    /// `null`: the job had no id and the message no `message_id`.
    pub fn null() -> JobId {
        JobId(RawValue::NULL.to_owned())
    }

    /// The id to use when the body has none: the AMQP `message_id`, else null.
    pub fn from_message_id(message_id: Option<&str>) -> JobId {
        match message_id {
            Some(text) => match serde_json::value::to_raw_value(text) {
                Ok(raw) => JobId(raw),
                Err(_) => JobId::null(),
            },
            None => JobId::null(),
        }
    }

    /// The id's JSON text, e.g. `"job-42"` (with quotes) or `12`.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }
}

impl Serialize for JobId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// The puzzle or puzzles of a job. A batch keeps each puzzle's own parse
/// result: one bad puzzle makes only its own entry `invalid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Puzzles {
    One(Grid),
    Batch(Vec<Result<Grid, GridError>>),
}

/// A job that was understood: what to solve and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: JobId,
    pub puzzles: Puzzles,
    pub mode: Mode,
    /// Per-puzzle deadline, already capped by [`Limits::max_timeout_ms`].
    pub timeout: Duration,
}

impl Job {
    /// Number of puzzles the job carries.
    pub fn len(&self) -> usize {
        match &self.puzzles {
            Puzzles::One(_) => 1,
            Puzzles::Batch(items) => items.len(),
        }
    }

    /// Always false: a job carries at least one puzzle.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Why a job as a whole could not be understood. Every variant is answered
/// with a single `invalid` result carrying this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    #[error("message is {size} bytes, over the limit of {max} bytes")]
    TooLarge { size: usize, max: usize },
    #[error("message is not UTF-8: {0}")]
    NotUtf8(String),
    #[error("message is not JSON: {0}")]
    NotJson(String),
    #[error("message is {0}, expected a JSON object")]
    NotObject(&'static str),
    #[error("message is not a valid job: {0}")]
    Malformed(String),
    #[error("job has neither \"puzzle\" nor \"puzzles\"")]
    NoPuzzle,
    #[error("job has both \"puzzle\" and \"puzzles\": send exactly one")]
    BothPuzzleAndPuzzles,
    #[error("puzzles is {0}, expected an array of puzzles")]
    BatchNotArray(&'static str),
    #[error("puzzles is empty: a batch holds 1 to {max} puzzles")]
    EmptyBatch { max: usize },
    #[error("batch has {len} puzzles, over the maximum of {max}")]
    BatchTooLarge { len: usize, max: usize },
    #[error("unknown mode {0}: expected \"first\", \"unique\" or \"count\"")]
    UnknownMode(String),
    #[error("limit must be an integer from 1 to {max}, got {found}")]
    BadLimit { found: String, max: u64 },
    #[error("timeout_ms must be a positive integer (milliseconds), got {0}")]
    BadTimeout(String),
    #[error("{0}")]
    Puzzle(#[from] GridError),
}

/// A job that cannot be answered puzzle by puzzle: its id (as far as it
/// could be read) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub id: JobId,
    pub error: JobError,
}

/// The fields of a job body, each kept as raw JSON until it is checked.
#[derive(Deserialize)]
struct RawJob<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    puzzle: Option<&'a RawValue>,
    #[serde(borrow)]
    puzzles: Option<&'a RawValue>,
    #[serde(borrow)]
    mode: Option<&'a RawValue>,
    #[serde(borrow)]
    limit: Option<&'a RawValue>,
    #[serde(borrow)]
    timeout_ms: Option<&'a RawValue>,
}

impl Job {
    /// Reads a job message body. `message_id` is the AMQP property, used as
    /// the id when the body has none or cannot be read.
    ///
    /// The size is checked before anything is parsed. Unknown fields are
    /// ignored, so producers may add their own.
    pub fn parse(body: &[u8], message_id: Option<&str>, limits: &Limits) -> Result<Job, Rejection> {
        let fallback_id = || JobId::from_message_id(message_id);
        let reject = |id: JobId, error: JobError| Rejection { id, error };
        if body.len() > limits.max_message_bytes {
            return Err(reject(
                fallback_id(),
                JobError::TooLarge {
                    size: body.len(),
                    max: limits.max_message_bytes,
                },
            ));
        }
        let text = std::str::from_utf8(body)
            .map_err(|e| reject(fallback_id(), JobError::NotUtf8(e.to_string())))?;
        let raw: RawJob = serde_json::from_str(text).map_err(|e| {
            let error = match e.classify() {
                serde_json::error::Category::Data => match json_kind(text) {
                    Some(kind) if kind != "an object" => JobError::NotObject(kind),
                    _ => JobError::Malformed(e.to_string()),
                },
                _ => JobError::NotJson(e.to_string()),
            };
            reject(fallback_id(), error)
        })?;
        let id = match raw.id {
            Some(id) if id.get() != "null" => JobId(id.to_owned()),
            _ => fallback_id(),
        };
        match raw.checked(limits) {
            Ok((puzzles, mode, timeout)) => Ok(Job {
                id,
                puzzles,
                mode,
                timeout,
            }),
            Err(error) => Err(reject(id, error)),
        }
    }
}

impl RawJob<'_> {
    fn checked(&self, limits: &Limits) -> Result<(Puzzles, Mode, Duration), JobError> {
        let mode = match self.mode.map(parse_value).transpose()? {
            None | Some(Value::Null) => "first".to_string(),
            Some(Value::String(mode)) => mode,
            Some(other) => return Err(JobError::UnknownMode(other.to_string())),
        };
        let limit = match self.limit.map(parse_value).transpose()? {
            None | Some(Value::Null) => limits.default_count_limit,
            Some(value) => value
                .as_u64()
                .filter(|&n| n >= 1 && n <= limits.max_count_limit)
                .ok_or_else(|| JobError::BadLimit {
                    found: value.to_string(),
                    max: limits.max_count_limit,
                })?,
        };
        let mode = match mode.as_str() {
            "first" => Mode::First,
            "unique" => Mode::Unique,
            "count" => Mode::Count { limit },
            _ => return Err(JobError::UnknownMode(Value::String(mode).to_string())),
        };
        let timeout_ms = match self.timeout_ms.map(parse_value).transpose()? {
            None | Some(Value::Null) => limits.default_timeout_ms,
            Some(value) => value
                .as_u64()
                .filter(|&n| n >= 1)
                .ok_or_else(|| JobError::BadTimeout(value.to_string()))?,
        };
        let timeout = Duration::from_millis(timeout_ms.min(limits.max_timeout_ms));
        let puzzles = match (self.puzzle, self.puzzles) {
            (Some(_), Some(_)) => return Err(JobError::BothPuzzleAndPuzzles),
            (None, None) => return Err(JobError::NoPuzzle),
            (Some(one), None) => Puzzles::One(read_puzzle(one)?),
            (None, Some(many)) => {
                if json_kind(many.get()) != Some("an array") {
                    return Err(JobError::BatchNotArray(kind_of(&parse_value(many)?)));
                }
                // Items stay raw: each is read straight into a grid.
                let items: Vec<&RawValue> = serde_json::from_str(many.get())
                    .map_err(|e| JobError::Malformed(e.to_string()))?;
                if items.is_empty() {
                    return Err(JobError::EmptyBatch {
                        max: limits.max_batch,
                    });
                }
                if items.len() > limits.max_batch {
                    return Err(JobError::BatchTooLarge {
                        len: items.len(),
                        max: limits.max_batch,
                    });
                }
                let read = |item| match read_puzzle(item) {
                    Ok(grid) => Ok(grid),
                    Err(JobError::Puzzle(error)) => Err(error),
                    // Only a malformed item, which parsing the body already
                    // ruled out, gets here.
                    Err(other) => Err(GridError::NotAPuzzle {
                        found: other.to_string(),
                    }),
                };
                Puzzles::Batch(items.into_iter().map(read).collect())
            }
        };
        Ok((puzzles, mode, timeout))
    }
}

/// One puzzle in any protocol format. A string without escapes is read in
/// place, with no allocation; anything else goes through a JSON value.
fn read_puzzle(raw: &RawValue) -> Result<Grid, JobError> {
    if let Ok(text) = serde_json::from_str::<&str>(raw.get()) {
        return Ok(Grid::parse(text)?);
    }
    Ok(Grid::from_json(&parse_value(raw)?)?)
}

fn parse_value(raw: &RawValue) -> Result<Value, JobError> {
    // The text already parsed once as part of the body, so this cannot fail
    // short of a serde_json bug; report it rather than panic all the same.
    serde_json::from_str(raw.get()).map_err(|e| JobError::Malformed(e.to_string()))
}

/// What kind of JSON value `text` holds, judged by its first character.
fn json_kind(text: &str) -> Option<&'static str> {
    Some(match text.trim_start().chars().next()? {
        '{' => "an object",
        '[' => "an array",
        '"' => "a string",
        't' | 'f' => "a boolean",
        'n' => "null",
        _ => "a number",
    })
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The result for one puzzle: the fields of a result message other than
/// `id` and `worker`, and exactly one entry of a batch's `results`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answer {
    pub status: AnswerStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guesses: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_us: Option<u64>,
}

/// The `status` field of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerStatus {
    Solved,
    Unsolvable,
    Invalid,
    Timeout,
    Error,
}

impl AnswerStatus {
    pub const ALL: [AnswerStatus; 5] = [
        AnswerStatus::Solved,
        AnswerStatus::Unsolvable,
        AnswerStatus::Invalid,
        AnswerStatus::Timeout,
        AnswerStatus::Error,
    ];

    /// The wire name, as in `status`.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerStatus::Solved => "solved",
            AnswerStatus::Unsolvable => "unsolvable",
            AnswerStatus::Invalid => "invalid",
            AnswerStatus::Timeout => "timeout",
            AnswerStatus::Error => "error",
        }
    }
}

/// Puzzles answered, by status, in [`AnswerStatus::ALL`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts(pub [u64; 5]);

impl StatusCounts {
    /// Counts one more answer of `status`.
    pub fn add(&mut self, status: AnswerStatus) {
        self.0[Self::index(status)] += 1;
    }

    pub fn get(&self, status: AnswerStatus) -> u64 {
        self.0[Self::index(status)]
    }

    /// Answers counted, all statuses together.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    fn index(status: AnswerStatus) -> usize {
        match status {
            AnswerStatus::Solved => 0,
            AnswerStatus::Unsolvable => 1,
            AnswerStatus::Invalid => 2,
            AnswerStatus::Timeout => 3,
            AnswerStatus::Error => 4,
        }
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &StatusCounts) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }
}

impl Answer {
    fn bare(status: AnswerStatus, error: Option<String>) -> Answer {
        Answer {
            status,
            solution: None,
            unique: None,
            count: None,
            error,
            guesses: None,
            elapsed_us: None,
        }
    }

    /// The answer for a puzzle the solver ran on. `timeout` is the deadline
    /// it had, for the message of a `timeout` answer.
    pub fn from_outcome(outcome: &Outcome, timeout: Duration) -> Answer {
        let (status, error) = match outcome.status {
            Status::Solved => (AnswerStatus::Solved, None),
            Status::Unsolvable => (AnswerStatus::Unsolvable, None),
            Status::Timeout => (
                AnswerStatus::Timeout,
                Some(format!(
                    "no answer within the deadline of {} ms ({} guesses made)",
                    timeout.as_millis(),
                    outcome.guesses
                )),
            ),
        };
        Answer {
            status,
            solution: outcome.solution.map(|grid| grid.to_text()),
            unique: outcome.unique,
            count: outcome.count,
            error,
            guesses: Some(outcome.guesses),
            elapsed_us: Some(u64::try_from(outcome.elapsed.as_micros()).unwrap_or(u64::MAX)),
        }
    }

    /// `invalid`, with the reason.
    pub fn invalid(reason: impl ToString) -> Answer {
        Answer::bare(AnswerStatus::Invalid, Some(reason.to_string()))
    }

    /// `error`: the worker failed on this puzzle.
    pub fn error(reason: impl ToString) -> Answer {
        Answer::bare(AnswerStatus::Error, Some(reason.to_string()))
    }
}

/// The solver entry point, as [`answer_guarded`] calls it; a parameter so
/// tests can make it fail.
pub type SolveFn = fn(&Grid, Mode, Option<Duration>) -> Outcome;

/// Solves one puzzle and makes its answer. A panic in the solver becomes an
/// `error` answer instead of taking the caller down; the panic's message
/// comes back beside it, for the caller's log.
pub fn answer_guarded(
    solve: SolveFn,
    grid: &Grid,
    mode: Mode,
    timeout: Option<Duration>,
) -> (Answer, Option<String>) {
    let solved = std::panic::catch_unwind(|| solve(grid, mode, timeout));
    match solved {
        Ok(outcome) => (
            Answer::from_outcome(&outcome, timeout.unwrap_or(Duration::MAX)),
            None,
        ),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let answer =
                Answer::error("the solver failed on this puzzle (a bug); it has been logged");
            (answer, Some(what))
        }
    }
}

/// A result message: one answer, a batch of answers, or a whole-job
/// rejection (which is a single `invalid` answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reply<'a> {
    pub id: &'a JobId,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<Answer>>,
    pub worker: &'a str,
}

impl<'a> Reply<'a> {
    pub fn single(id: &'a JobId, answer: Answer, worker: &'a str) -> Reply<'a> {
        Reply {
            id,
            answer: Some(answer),
            results: None,
            worker,
        }
    }

    pub fn batch(id: &'a JobId, results: Vec<Answer>, worker: &'a str) -> Reply<'a> {
        Reply {
            id,
            answer: None,
            results: Some(results),
            worker,
        }
    }

    pub fn rejected(rejection: &'a Rejection, worker: &'a str) -> Reply<'a> {
        Reply::single(&rejection.id, Answer::invalid(&rejection.error), worker)
    }

    /// The message body: compact UTF-8 JSON.
    pub fn to_json(&self) -> Vec<u8> {
        // Room for a solved answer per entry, so a batch's result is written
        // without growing the buffer again and again.
        let entries = self.results.as_ref().map_or(1, Vec::len);
        let mut body = Vec::with_capacity(64 + self.id.as_json().len() + 160 * entries);
        // Serializing these types cannot fail: every field is a string, a
        // number, a bool or raw JSON that was valid when it was read.
        match serde_json::to_writer(&mut body, self) {
            Ok(()) => body,
            Err(e) => {
                format!(r#"{{"id":null,"status":"error","error":"cannot encode result: {e}"}}"#)
                    .into_bytes()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PUZZLE: &str =
        "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";

    fn parse(body: &str) -> Result<Job, Rejection> {
        Job::parse(body.as_bytes(), None, &Limits::default())
    }

    fn rejected(body: &str) -> (String, String) {
        let r = parse(body).unwrap_err();
        (r.id.as_json().to_string(), r.error.to_string())
    }

    #[test]
    fn reads_a_minimal_job() {
        let job = parse(&format!(r#"{{"id":"job-42","puzzle":"{PUZZLE}"}}"#)).unwrap();
        assert_eq!(job.id.as_json(), r#""job-42""#);
        assert_eq!(job.mode, Mode::First);
        assert_eq!(job.timeout, Duration::from_millis(10_000));
        assert_eq!(job.puzzles, Puzzles::One(Grid::parse(PUZZLE).unwrap()));
        assert_eq!(job.len(), 1);
    }

    #[test]
    fn keeps_ids_exactly_as_sent() {
        for id in [
            "123456789012345678901234567890",
            "-1.50e3",
            "\"\\u00e9t\\u00e9\"",
            "7",
        ] {
            let job = parse(&format!(r#"{{"id": {id}, "puzzle":"{PUZZLE}"}}"#)).unwrap();
            assert_eq!(job.id.as_json(), id);
            let reply = Reply::single(&job.id, Answer::invalid("x"), "w").to_json();
            let text = String::from_utf8(reply).unwrap();
            assert!(text.starts_with(&format!("{{\"id\":{id},")), "{text}");
        }
    }

    #[test]
    fn falls_back_to_message_id_then_null() {
        let body = format!(r#"{{"puzzle":"{PUZZLE}"}}"#);
        let limits = Limits::default();
        let job = Job::parse(body.as_bytes(), Some("m-1"), &limits).unwrap();
        assert_eq!(job.id.as_json(), r#""m-1""#);
        let job = Job::parse(body.as_bytes(), None, &limits).unwrap();
        assert_eq!(job.id.as_json(), "null");
        let bad = Job::parse(b"not json", Some("m-2"), &limits).unwrap_err();
        assert_eq!(bad.id.as_json(), r#""m-2""#);
        let null_id = format!(r#"{{"id":null,"puzzle":"{PUZZLE}"}}"#);
        let job = Job::parse(null_id.as_bytes(), Some("m-3"), &limits).unwrap();
        assert_eq!(job.id.as_json(), r#""m-3""#);
    }

    #[test]
    fn rejects_unreadable_bodies() {
        let limits = Limits::default();
        let bad = Job::parse(&[b'{', 0xff, b'}'], None, &limits).unwrap_err();
        assert_eq!(
            bad.error.to_string(),
            "message is not UTF-8: invalid utf-8 sequence of 1 bytes from index 1"
        );
        assert_eq!(
            rejected("hello").1,
            "message is not JSON: expected value at line 1 column 1"
        );
        assert_eq!(
            rejected(r#"{"puzzle": "#).1,
            "message is not JSON: EOF while parsing a value at line 1 column 11"
        );
        assert_eq!(
            rejected("[1,2]").1,
            "message is an array, expected a JSON object"
        );
        assert_eq!(
            rejected("\"x\"").1,
            "message is a string, expected a JSON object"
        );
        assert_eq!(
            rejected("42").1,
            "message is a number, expected a JSON object"
        );
        assert_eq!(
            rejected("null").1,
            "message is null, expected a JSON object"
        );
        assert_eq!(
            rejected(r#"{"puzzle":"1","puzzle":"2"}"#).1,
            "message is not a valid job: duplicate field `puzzle` at line 1 column 22"
        );
    }

    #[test]
    fn checks_size_before_parsing() {
        let limits = Limits {
            max_message_bytes: 10,
            ..Limits::default()
        };
        let bad = Job::parse(b"{\"id\": \"12345\"}", Some("m"), &limits).unwrap_err();
        assert_eq!(
            bad.error.to_string(),
            "message is 15 bytes, over the limit of 10 bytes"
        );
        assert_eq!(bad.id.as_json(), r#""m""#);
    }

    #[test]
    fn rejects_missing_or_doubled_puzzles() {
        assert_eq!(
            rejected(r#"{"id":1}"#),
            (
                "1".into(),
                "job has neither \"puzzle\" nor \"puzzles\"".into()
            )
        );
        assert_eq!(
            rejected(&format!(
                r#"{{"id":2,"puzzle":"{PUZZLE}","puzzles":["{PUZZLE}"]}}"#
            )),
            (
                "2".into(),
                "job has both \"puzzle\" and \"puzzles\": send exactly one".into()
            )
        );
    }

    #[test]
    fn rejects_bad_puzzles_with_the_grid_reason() {
        assert_eq!(
            rejected(&format!(r#"{{"id":"a","puzzle":"{}"}}"#, &PUZZLE[..80])).1,
            "puzzle has 80 cells, expected 81"
        );
        let repeated = format!("55{}", &PUZZLE[2..]);
        assert_eq!(
            rejected(&format!(r#"{{"puzzle":"{repeated}"}}"#)).1,
            "row 1 has 5 twice (columns 1 and 2)"
        );
        assert_eq!(
            rejected(r#"{"puzzle":[1,2,3]}"#).1,
            "row 1 is a number, expected an array of 9 cells"
        );
    }

    #[test]
    fn reads_modes_and_limits() {
        let job = parse(&format!(r#"{{"puzzle":"{PUZZLE}","mode":"unique"}}"#)).unwrap();
        assert_eq!(job.mode, Mode::Unique);
        let job = parse(&format!(r#"{{"puzzle":"{PUZZLE}","mode":"count"}}"#)).unwrap();
        assert_eq!(job.mode, Mode::Count { limit: 1000 });
        let job = parse(&format!(
            r#"{{"puzzle":"{PUZZLE}","mode":"count","limit":7}}"#
        ))
        .unwrap();
        assert_eq!(job.mode, Mode::Count { limit: 7 });
        assert_eq!(
            rejected(&format!(r#"{{"puzzle":"{PUZZLE}","mode":"fast"}}"#)).1,
            "unknown mode \"fast\": expected \"first\", \"unique\" or \"count\""
        );
        assert_eq!(
            rejected(&format!(r#"{{"puzzle":"{PUZZLE}","mode":3}}"#)).1,
            "unknown mode 3: expected \"first\", \"unique\" or \"count\""
        );
        for (limit, shown) in [
            ("0", "0"),
            ("1001", "1001"),
            ("-3", "-3"),
            ("2.5", "2.5"),
            ("\"9\"", "\"9\""),
        ] {
            assert_eq!(
                rejected(&format!(
                    r#"{{"puzzle":"{PUZZLE}","mode":"count","limit":{limit}}}"#
                ))
                .1,
                format!("limit must be an integer from 1 to 1000, got {shown}")
            );
        }
    }

    #[test]
    fn reads_and_caps_timeouts() {
        let job = parse(&format!(r#"{{"puzzle":"{PUZZLE}","timeout_ms":250}}"#)).unwrap();
        assert_eq!(job.timeout, Duration::from_millis(250));
        let job = parse(&format!(r#"{{"puzzle":"{PUZZLE}","timeout_ms":99999999}}"#)).unwrap();
        assert_eq!(job.timeout, Duration::from_millis(60_000));
        for bad in ["0", "-1", "1.5", "\"10\"", "true"] {
            assert_eq!(
                rejected(&format!(r#"{{"puzzle":"{PUZZLE}","timeout_ms":{bad}}}"#)).1,
                format!("timeout_ms must be a positive integer (milliseconds), got {bad}")
            );
        }
    }

    #[test]
    fn reads_batches_with_bad_entries() {
        let job = parse(&format!(
            r#"{{"id":"b","puzzles":["{PUZZLE}","xx",[[1]]],"mode":"unique","other":1}}"#
        ))
        .unwrap();
        assert_eq!(job.len(), 3);
        let Puzzles::Batch(items) = &job.puzzles else {
            panic!("expected a batch")
        };
        assert!(items[0].is_ok());
        assert_eq!(
            items[1].as_ref().unwrap_err().to_string(),
            "invalid character 'x' at row 1, column 1"
        );
        assert_eq!(
            items[2].as_ref().unwrap_err().to_string(),
            "puzzle has 1 rows, expected 9"
        );
    }

    #[test]
    fn reads_escaped_and_array_puzzles_in_batches() {
        let pretty: String = PUZZLE
            .as_bytes()
            .chunks(9)
            .map(|row| format!("{}\n", std::str::from_utf8(row).unwrap()))
            .collect();
        let rows: Vec<Vec<u8>> = PUZZLE
            .bytes()
            .map(|b| if b == b'.' { 0 } else { b - b'0' })
            .collect::<Vec<u8>>()
            .chunks(9)
            .map(<[u8]>::to_vec)
            .collect();
        let body = serde_json::to_string(&json!({"puzzles": [pretty, rows, PUZZLE]})).unwrap();
        assert!(body.contains("\\n"), "the puzzle string carries escapes");
        let job = parse(&body).unwrap();
        let grid = Grid::parse(PUZZLE).unwrap();
        assert_eq!(
            job.puzzles,
            Puzzles::Batch(vec![Ok(grid), Ok(grid), Ok(grid)])
        );
        let single = serde_json::to_string(&json!({"puzzle": pretty})).unwrap();
        assert_eq!(parse(&single).unwrap().puzzles, Puzzles::One(grid));
    }

    #[test]
    fn rejects_bad_batches() {
        assert_eq!(
            rejected(r#"{"puzzles":[]}"#).1,
            "puzzles is empty: a batch holds 1 to 10000 puzzles"
        );
        assert_eq!(
            rejected(&format!(r#"{{"puzzles":"{PUZZLE}"}}"#)).1,
            "puzzles is a string, expected an array of puzzles"
        );
        let limits = Limits {
            max_batch: 2,
            ..Limits::default()
        };
        let body = format!(r#"{{"puzzles":["{PUZZLE}","{PUZZLE}","{PUZZLE}"]}}"#);
        let bad = Job::parse(body.as_bytes(), None, &limits).unwrap_err();
        assert_eq!(
            bad.error.to_string(),
            "batch has 3 puzzles, over the maximum of 2"
        );
    }

    #[test]
    fn writes_results_as_the_protocol_shows() {
        let grid = Grid::parse(PUZZLE).unwrap();
        let outcome = crate::solver::solve(&grid, Mode::Unique, None);
        let id = JobId::from_message_id(Some("job-42"));
        let answer = Answer::from_outcome(&outcome, Duration::from_secs(1));
        let body: Value =
            serde_json::from_slice(&Reply::single(&id, answer, "host-a/1873").to_json()).unwrap();
        assert_eq!(
            body,
            json!({
                "id": "job-42",
                "status": "solved",
                "solution": "534678912672195348198342567859761423426853791713924856961537284287419635345286179",
                "unique": true,
                "guesses": 0,
                "elapsed_us": body["elapsed_us"],
                "worker": "host-a/1873",
            })
        );
        assert!(body["elapsed_us"].is_u64());
    }

    #[test]
    fn writes_batches_and_rejections() {
        let id = JobId::from_message_id(Some("batch-7"));
        let results = vec![
            Answer::invalid("puzzle has 80 cells, expected 81"),
            Answer::error("boom"),
        ];
        let body: Value =
            serde_json::from_slice(&Reply::batch(&id, results, "w/1").to_json()).unwrap();
        assert_eq!(
            body,
            json!({
                "id": "batch-7",
                "results": [
                    {"status": "invalid", "error": "puzzle has 80 cells, expected 81"},
                    {"status": "error", "error": "boom"},
                ],
                "worker": "w/1",
            })
        );
        let rejection = parse("[]").unwrap_err();
        let body: Value =
            serde_json::from_slice(&Reply::rejected(&rejection, "w/1").to_json()).unwrap();
        assert_eq!(
            body,
            json!({"id": null, "status": "invalid", "error": "message is an array, expected a JSON object", "worker": "w/1"})
        );
    }

    #[test]
    fn writes_count_and_timeout_answers() {
        let empty = Grid::EMPTY;
        let outcome = crate::solver::solve(&empty, Mode::Count { limit: 5 }, None);
        let answer = Answer::from_outcome(&outcome, Duration::from_secs(1));
        assert_eq!(answer.status, AnswerStatus::Solved);
        assert_eq!(answer.count, Some(5));
        assert_eq!(answer.unique, Some(false));
        let outcome = crate::solver::solve(
            &empty,
            Mode::Count { limit: 1000 },
            Some(Duration::from_nanos(1)),
        );
        let answer = Answer::from_outcome(&outcome, Duration::from_millis(1));
        assert_eq!(answer.status, AnswerStatus::Timeout);
        assert_eq!(answer.count, None);
        assert!(answer.solution.is_none());
        assert!(
            answer
                .error
                .as_deref()
                .unwrap()
                .starts_with("no answer within the deadline of 1 ms"),
            "{:?}",
            answer.error
        );
    }
}
