//! Result messages: one puzzle's [`Answer`], the whole [`Reply`], and the
//! tally of answers by status.

use std::time::Duration;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeStruct};

use super::{Analyses, JobId, Rejection};
use crate::solver::{Difficulty, Grid, Mode, Outcome, Status, canonical, rate_with_budget};

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
    /// With `"rate": true`, for a puzzle shown to have exactly one
    /// solution: `{"technique", "score", "pearl", "diamond", "steps",
    /// "techniques"}`, and `"bound": "lower"` when the rating ran out of
    /// budget. Boxed, so an answer without it stays as small as before.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "write_difficulty"
    )]
    pub difficulty: Option<Box<Difficulty>>,
    /// With `"canonical": true`, for every puzzle that was read: its
    /// canonical form, 81 characters, `0` for blanks. A boxed `str`, to
    /// keep answers without it small.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical: Option<Box<str>>,
}

/// `difficulty` as the protocol writes it: the hardest technique's name,
/// SE's three ratings (ER as `score`, EP as `pearl`, ED as `diamond`, one
/// decimal each), `bound` only for a rating cut short by its budget, the
/// step count, and the steps per technique in ladder order.
pub(super) fn write_difficulty<S: serde::Serializer>(
    difficulty: &Option<Box<Difficulty>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    struct Techniques<'a>(&'a Difficulty);
    impl Serialize for Techniques<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(None)?;
            for (technique, steps) in self.0.counts() {
                map.serialize_entry(technique.name(), &steps)?;
            }
            map.end()
        }
    }
    match difficulty {
        None => serializer.serialize_none(),
        Some(difficulty) => {
            let bounded = difficulty.is_lower_bound();
            let mut out = serializer.serialize_struct("Difficulty", 6 + usize::from(bounded))?;
            out.serialize_field("technique", difficulty.technique.name())?;
            out.serialize_field("score", &difficulty.score())?;
            out.serialize_field("pearl", &difficulty.pearl())?;
            out.serialize_field("diamond", &difficulty.diamond())?;
            if bounded {
                out.serialize_field("bound", "lower")?;
            }
            out.serialize_field("steps", &difficulty.steps)?;
            out.serialize_field("techniques", &Techniques(difficulty))?;
            out.end()
        }
    }
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
            difficulty: None,
            canonical: None,
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
            difficulty: None,
            canonical: None,
        }
    }

    /// This answer with the analyses that need no solving (the canonical
    /// form), for a puzzle the solver did not run on.
    pub fn with_canonical(mut self, grid: &Grid, analyses: Analyses) -> Answer {
        if analyses.canonical {
            self.canonical = Some(canonical(grid).to_text_with_zeros().into_boxed_str());
        }
        self
    }

    /// `invalid`, with the reason.
    pub fn invalid(reason: impl ToString) -> Answer {
        Answer::bare(AnswerStatus::Invalid, Some(reason.to_string()))
    }

    /// `timeout`, with the reason, for a puzzle the solver did not run on.
    pub fn timed_out(reason: impl ToString) -> Answer {
        Answer::bare(AnswerStatus::Timeout, Some(reason.to_string()))
    }

    /// `error`: the worker failed on this puzzle.
    pub fn error(reason: impl ToString) -> Answer {
        Answer::bare(AnswerStatus::Error, Some(reason.to_string()))
    }
}

/// The solver entry point, as [`answer_guarded`] calls it; a parameter so
/// tests can make it fail.
pub type SolveFn = fn(&Grid, Mode, Option<Duration>) -> Outcome;

/// Solves one puzzle and makes its answer, with the `analyses` asked for
/// (see [`analyse`]). A panic in the solver or an analysis becomes an
/// `error` answer instead of taking the caller down; the panic's message
/// comes back beside it, for the caller's log.
pub fn answer_guarded(
    solve: SolveFn,
    grid: &Grid,
    mode: Mode,
    analyses: Analyses,
    timeout: Option<Duration>,
) -> (Answer, Option<String>) {
    let solved = std::panic::catch_unwind(|| {
        let outcome = solve(grid, mode, timeout);
        let answer = Answer::from_outcome(&outcome, timeout.unwrap_or(Duration::MAX));
        if analyses == Analyses::NONE {
            return answer;
        }
        analyse(solve, grid, &outcome, analyses, timeout, answer)
    });
    match solved {
        Ok(answer) => (answer, None),
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

/// Adds the analyses asked for to the `answer` of a puzzle the solver ran
/// on (its `outcome`, searched with deadline `timeout`).
///
/// - `canonical`: always.
/// - `difficulty`: only for a puzzle with exactly one solution, as a
///   rating describes the one way to it. When the mode did not settle
///   uniqueness (mode `first`) and there is a deadline, a search in mode
///   `unique` does, within what is left of it; if that runs out, the
///   answer has no `difficulty`. Rating repeats that search (it cannot
///   take longer than it just did) and then runs the ladder, which is
///   bounded: a few milliseconds on the hardest known puzzles. Without a
///   deadline, rating's own search settles uniqueness.
fn analyse(
    solve: SolveFn,
    grid: &Grid,
    outcome: &Outcome,
    analyses: Analyses,
    timeout: Option<Duration>,
    answer: Answer,
) -> Answer {
    let mut answer = answer.with_canonical(grid, analyses);
    if analyses.rate && outcome.status == Status::Solved {
        let unique = match (outcome.unique, timeout) {
            (Some(unique), _) => unique,
            // No deadline to keep: rating settles uniqueness itself.
            (None, None) => true,
            (None, Some(timeout)) => {
                let left = timeout.saturating_sub(outcome.elapsed);
                solve(grid, Mode::Unique, Some(left)).unique == Some(true)
            }
        };
        if unique {
            answer.difficulty = rate_with_budget(grid, analyses.rate_work)
                .ok()
                .map(Box::new);
        }
    }
    answer
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
