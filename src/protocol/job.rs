//! Job messages: reading a body into a [`Job`], or into a [`Rejection`]
//! that says why and still carries the job's id.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::Limits;
use super::generation::{Request, random_seed};
use crate::solver::{Grid, GridError, Mode};

/// Longest string id a job may carry, in bytes (decoded); a longer one
/// makes the job `invalid`.
pub const MAX_ID_BYTES: usize = 256;

/// Characters of a producer's value that an error text or log line shows.
const EXCERPT_CHARS: usize = 40;

/// A short prefix of `text` for error messages and logs: at most 40
/// characters, control characters escaped, and when cut, `...` and the
/// whole length. Nothing a producer sends reaches a log or an error text
/// at full length.
pub fn excerpt(text: &str) -> String {
    let mut out = String::with_capacity(EXCERPT_CHARS + 16);
    let mut chars = text.char_indices();
    for (_, c) in chars.by_ref().take(EXCERPT_CHARS) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if chars.next().is_some() {
        out.push_str(&format!("... ({} bytes)", text.len()));
    }
    out
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
    /// The id a job sent, if it is one the protocol allows: a string of at
    /// most [`MAX_ID_BYTES`] bytes, or a number.
    fn checked(raw: &RawValue) -> Result<JobId, JobError> {
        let text = raw.get();
        let found = match json_kind(text) {
            Some("a string") => {
                let decoded: String = serde_json::from_str(text)
                    .map_err(|e| JobError::Malformed(excerpt(&e.to_string())))?;
                if decoded.len() <= MAX_ID_BYTES {
                    return Ok(JobId(raw.to_owned()));
                }
                format!("a string of {} bytes", decoded.len())
            }
            // Any number, as the protocol says: the message size bounds it.
            Some("a number") => return Ok(JobId(raw.to_owned())),
            Some(kind) => kind.to_string(),
            None => "empty".to_string(),
        };
        Err(JobError::BadId(found))
    }

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
/// result: one bad puzzle makes only its own entry `invalid`. A generation
/// job asks for puzzles to be made instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Puzzles {
    One(Grid),
    Batch(Vec<Result<Grid, GridError>>),
    Generate(Box<Generation>),
}

/// A generation job's `generate`, and the deadline of the whole job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    pub request: Request,
    /// The job's `timeout_ms`, which bounds the whole job (not capped by
    /// `solver.max_timeout_ms`: `worker.max_job_ms` caps it instead).
    pub timeout: Option<Duration>,
}

/// The optional analyses a job asks for beside the solution: `"rate":
/// true` and `"canonical": true`. Both off unless asked for, and then they
/// cost nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Analyses {
    /// Rate each puzzle by the hardest human technique it needs
    /// ([`crate::solver::rate`]): the answer's `difficulty`.
    pub rate: bool,
    /// Give each puzzle's canonical form ([`crate::solver::canonical`]):
    /// the answer's `canonical`.
    pub canonical: bool,
    /// The rating's budget, in units of work (`solver.max_rate_work`):
    /// past it a rating stops and is a lower bound.
    pub rate_work: u64,
}

impl Analyses {
    /// Neither analysis.
    pub const NONE: Analyses = Analyses::new(false, false);

    /// The analyses asked for, rating within the default budget.
    pub const fn new(rate: bool, canonical: bool) -> Analyses {
        Analyses {
            rate,
            canonical,
            rate_work: crate::solver::DEFAULT_MAX_RATE_WORK,
        }
    }
}

/// A job that was understood: what to solve and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: JobId,
    pub puzzles: Puzzles,
    pub mode: Mode,
    /// Per-puzzle deadline, already capped by [`Limits::max_timeout_ms`].
    pub timeout: Duration,
    /// What each answer carries beside the solution.
    pub analyses: Analyses,
}

impl Job {
    /// Number of puzzles the job carries.
    pub fn len(&self) -> usize {
        match &self.puzzles {
            Puzzles::One(_) => 1,
            Puzzles::Batch(items) => items.len(),
            Puzzles::Generate(generation) => generation.request.count as usize,
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
    #[error("id is {0}, expected a string of at most 256 bytes or a number")]
    BadId(String),
    #[error("job has no \"puzzle\", \"puzzles\" or \"generate\"")]
    NoPuzzle,
    #[error("job has more than one of \"puzzle\", \"puzzles\" and \"generate\": send exactly one")]
    BothPuzzleAndPuzzles,
    #[error("{0}")]
    Generate(String),
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
    #[error("{field} must be true or false, got {found}")]
    NotABoolean { field: &'static str, found: String },
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
/// Each borrows from the body (the bound says so for every field at once).
#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a"))]
struct RawJob<'a> {
    id: Option<&'a RawValue>,
    puzzle: Option<&'a RawValue>,
    puzzles: Option<&'a RawValue>,
    generate: Option<&'a RawValue>,
    mode: Option<&'a RawValue>,
    limit: Option<&'a RawValue>,
    timeout_ms: Option<&'a RawValue>,
    rate: Option<&'a RawValue>,
    canonical: Option<&'a RawValue>,
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
            Some(id) if id.get() != "null" => {
                // An id the protocol does not allow is not echoed at all.
                JobId::checked(id).map_err(|error| reject(JobId::null(), error))?
            }
            _ => fallback_id(),
        };
        match raw.checked(limits) {
            Ok((puzzles, mode, timeout, analyses)) => Ok(Job {
                id,
                puzzles,
                mode,
                timeout,
                analyses,
            }),
            Err(error) => Err(reject(id, error)),
        }
    }
}

/// A JSON number with no fractional part, saturated to `u64`: an integer
/// too large for 64 bits (read as a float) is still an integer, and is then
/// capped like any large one. `None` for fractions, negatives and
/// non-numbers.
fn whole_number(value: &Value) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return Some(n);
    }
    let x = value.as_f64()?;
    // `as` saturates at u64::MAX.
    (x >= 0.0 && x.fract() == 0.0).then_some(x as u64)
}

impl RawJob<'_> {
    /// The `generate` object, if the job has one (and no puzzle), and the
    /// whole job's deadline: `timeout_ms` as sent (checked like any),
    /// capped later by `worker.max_job_ms`.
    fn generation(&self, limits: &Limits) -> Result<Option<Puzzles>, JobError> {
        let given = |raw: Option<&RawValue>| raw.is_some_and(|r| r.get() != "null");
        if !given(self.generate) {
            return Ok(None);
        }
        if given(self.puzzle) || given(self.puzzles) {
            return Err(JobError::BothPuzzleAndPuzzles);
        }
        let generate = self
            .generate
            .map(parse_value)
            .transpose()?
            .unwrap_or(Value::Null);
        let request = Request::read(&generate, limits, random_seed).map_err(JobError::Generate)?;
        let timeout = match self.timeout_ms.map(parse_value).transpose()? {
            None | Some(Value::Null) => None,
            Some(value) => Some(Duration::from_millis(
                whole_number(&value)
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| JobError::BadTimeout(excerpt(&value.to_string())))?,
            )),
        };
        Ok(Some(Puzzles::Generate(Box::new(Generation {
            request,
            timeout,
        }))))
    }
}

impl RawJob<'_> {
    fn checked(&self, limits: &Limits) -> Result<(Puzzles, Mode, Duration, Analyses), JobError> {
        let mode = match self.mode.map(parse_value).transpose()? {
            None | Some(Value::Null) => "first".to_string(),
            Some(Value::String(mode)) => mode,
            Some(other) => return Err(JobError::UnknownMode(excerpt(&other.to_string()))),
        };
        let limit = match self.limit.map(parse_value).transpose()? {
            None | Some(Value::Null) => limits.default_count_limit,
            Some(value) => value
                .as_u64()
                .filter(|&n| n >= 1 && n <= limits.max_count_limit)
                .ok_or_else(|| JobError::BadLimit {
                    found: excerpt(&value.to_string()),
                    max: limits.max_count_limit,
                })?,
        };
        let mode = match mode.as_str() {
            "first" => Mode::First,
            "unique" => Mode::Unique,
            "count" => Mode::Count { limit },
            _ => {
                return Err(JobError::UnknownMode(excerpt(
                    &Value::String(mode).to_string(),
                )));
            }
        };
        let timeout_ms = match self.timeout_ms.map(parse_value).transpose()? {
            None | Some(Value::Null) => limits.default_timeout_ms,
            Some(value) => whole_number(&value)
                .filter(|&n| n >= 1)
                .ok_or_else(|| JobError::BadTimeout(excerpt(&value.to_string())))?,
        };
        let timeout = Duration::from_millis(timeout_ms.min(limits.max_timeout_ms));
        let analyses = Analyses {
            rate: flag("rate", self.rate)?,
            canonical: flag("canonical", self.canonical)?,
            rate_work: limits.max_rate_work,
        };
        if let Some(generation) = self.generation(limits)? {
            return Ok((generation, mode, timeout, analyses));
        }
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
        Ok((puzzles, mode, timeout, analyses))
    }
}

/// A boolean job field: absent or `null` is false.
fn flag(field: &'static str, raw: Option<&RawValue>) -> Result<bool, JobError> {
    match raw.map(parse_value).transpose()? {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(on)) => Ok(on),
        Some(other) => Err(JobError::NotABoolean {
            field,
            found: excerpt(&other.to_string()),
        }),
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

/// What a JSON value is, in words for an error message ("a string").
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
