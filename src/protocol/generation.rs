//! Generation jobs (PROTOCOL.md, "Generation jobs"): the `generate` object
//! read into a [`Request`], with errors that name the field, and the
//! entries of a generation result.

use std::ops::Range;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use super::job::kind_of;
use super::{Analyses, AnswerStatus, Tally};
use crate::solver::{
    Difficulty, GenerateError, Generated, Generator, MAX_SEED, Spec, Symmetry, Technique,
    canonical, rate_with_budget,
};

/// The fields `generate` may hold, as an error about an unknown one lists
/// them.
const FIELDS: [&str; 7] = [
    "count",
    "seed",
    "symmetry",
    "minimal",
    "givens",
    "difficulty",
    "technique",
];

/// A `generate` object, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Puzzles to make.
    pub count: u64,
    /// Whether the job gave the seed (otherwise the worker picked it and
    /// the result reports it all the same).
    pub seed_given: bool,
    /// Makes the puzzles.
    pub generator: Generator,
}

impl Request {
    /// Reads `generate` under `limits` (at most `max_generate` puzzles,
    /// rated within `max_rate_work`); `pick_seed` supplies the seed when
    /// the object has none, and must return one of at most [`MAX_SEED`].
    pub fn read(
        generate: &Value,
        limits: &super::Limits,
        pick_seed: impl FnOnce() -> u64,
    ) -> Result<Request, String> {
        let max_count = limits.max_generate;
        let Value::Object(fields) = generate else {
            return Err(not_a("generate", "an object", generate));
        };
        if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(format!(
                "generate.{} is not a field of generate (it has {})",
                super::excerpt(unknown),
                FIELDS.join(", ")
            ));
        }
        let count = match fields.get("count") {
            None | Some(Value::Null) => return Err("generate.count is missing".into()),
            Some(value) => integer(value, "generate.count")?,
        };
        if !(1..=max_count).contains(&count) {
            return Err(format!(
                "generate.count {count} is out of range: 1 to {max_count} puzzles a job"
            ));
        }
        let (seed, seed_given) = match present(fields, "seed") {
            None => (pick_seed().min(MAX_SEED), false),
            Some(value) => (integer(value, "generate.seed")?, true),
        };
        let spec = Spec {
            seed,
            symmetry: symmetry(fields)?,
            minimal: minimal(fields)?,
            givens: givens(fields)?,
            difficulty: difficulty(fields)?,
            technique: match present(fields, "technique") {
                None => None,
                Some(Value::String(name)) => Some(technique(name)?),
                Some(other) => return Err(not_a("generate.technique", "a string", other)),
            },
            max_rate_work: limits.max_rate_work,
        };
        let generator = Generator::new(spec).map_err(|e: GenerateError| e.to_string())?;
        Ok(Request {
            count,
            seed_given,
            generator,
        })
    }
}

// The difficulty bounds are finite (the reader refuses others), so equality
// on them is an equivalence.
impl Eq for Request {}

/// A seed for a job or a run that gave none, in `0..=MAX_SEED`: the
/// standard library's randomly keyed hasher over the clock, so two picked
/// at the same moment still differ.
pub fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    RandomState::new().hash_one(now) & MAX_SEED
}

/// The technique called `name`, as `difficulty.technique` writes it.
pub fn technique(name: &str) -> Result<Technique, String> {
    Technique::ALL
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| {
            format!(
                "generate.technique {:?} is not a technique (one of {})",
                super::excerpt(name),
                Technique::ALL.map(Technique::name).join(", ")
            )
        })
}

/// `generate.symmetry`, `none` when absent.
fn symmetry(fields: &Map<String, Value>) -> Result<Symmetry, String> {
    match present(fields, "symmetry") {
        None => Ok(Symmetry::None),
        Some(Value::String(name)) => Symmetry::from_name(name).ok_or_else(|| {
            format!(
                "generate.symmetry {:?} is not a symmetry (one of {})",
                super::excerpt(name),
                Symmetry::ALL.map(Symmetry::name).join(", ")
            )
        }),
        Some(other) => Err(not_a("generate.symmetry", "a string", other)),
    }
}

/// `generate.minimal`, `true` when absent.
fn minimal(fields: &Map<String, Value>) -> Result<bool, String> {
    match present(fields, "minimal") {
        None => Ok(true),
        Some(Value::Bool(minimal)) => Ok(*minimal),
        Some(other) => Err(not_a("generate.minimal", "true or false", other)),
    }
}

/// `generate.givens`, a missing bound being 17 or 81.
fn givens(fields: &Map<String, Value>) -> Result<Option<(u8, u8)>, String> {
    let Some(value) = present(fields, "givens") else {
        return Ok(None);
    };
    let (min, max) = band(value, "generate.givens", |v, name| {
        let n = integer(v, name)?;
        u8::try_from(n).map_err(|_| format!("{name} {n} is above 81"))
    })?;
    Ok(Some((min.unwrap_or(17), max.unwrap_or(81))))
}

/// `generate.difficulty`, a missing bound being 0 or unbounded.
fn difficulty(fields: &Map<String, Value>) -> Result<Option<(f64, f64)>, String> {
    let Some(value) = present(fields, "difficulty") else {
        return Ok(None);
    };
    let (min, max) = band(value, "generate.difficulty", number)?;
    Ok(Some((min.unwrap_or(0.0), max.unwrap_or(f64::MAX))))
}

/// The error for a field of the wrong type.
fn not_a(name: &str, expected: &str, found: &Value) -> String {
    format!("{name} must be {expected}, not {}", kind_of(found))
}

/// A field that is there and not `null`.
fn present<'a>(fields: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    fields.get(name).filter(|v| !v.is_null())
}

/// `{"min": a, "max": b}`, either bound optional.
fn band<T: PartialOrd + Copy>(
    value: &Value,
    name: &str,
    read: impl Fn(&Value, &str) -> Result<T, String>,
) -> Result<(Option<T>, Option<T>), String> {
    let Value::Object(bounds) = value else {
        return Err(format!(
            r#"{name} must be an object like {{"min": 20, "max": 30}}, not {}"#,
            kind_of(value)
        ));
    };
    if let Some(unknown) = bounds.keys().find(|k| *k != "min" && *k != "max") {
        return Err(format!(
            "{name}.{} is not a bound (min or max)",
            super::excerpt(unknown)
        ));
    }
    let bound = |which: &str| {
        present(bounds, which)
            .map(|v| read(v, &format!("{name}.{which}")))
            .transpose()
    };
    Ok((bound("min")?, bound("max")?))
}

/// A non-negative integer up to 2^53 - 1 (the seed's range, and more than
/// any count).
fn integer(value: &Value, name: &str) -> Result<u64, String> {
    match value.as_u64() {
        Some(n) if n <= MAX_SEED => Ok(n),
        Some(n) => Err(format!("{name} {n} is above 2^53 - 1")),
        None => Err(format!(
            "{name} must be a non-negative integer, not {}",
            excerpt_of(value)
        )),
    }
}

/// A finite number.
fn number(value: &Value, name: &str) -> Result<f64, String> {
    value
        .as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("{name} must be a number, not {}", excerpt_of(value)))
}

fn excerpt_of(value: &Value) -> String {
    super::excerpt(&value.to_string())
}

/// One entry of a generation result's `results`: a puzzle made, with the
/// analyses asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub index: u64,
    /// 81 characters, `.` for blanks.
    pub puzzle: String,
    /// 81 digits.
    pub solution: String,
    pub givens: usize,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::answer::write_difficulty"
    )]
    pub difficulty: Option<Box<Difficulty>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical: Option<Box<str>>,
}

impl Entry {
    /// The entry of `made`: its rating when the generator rated it or
    /// `rate` asks for one, its canonical form when asked.
    pub fn new(made: Generated, analyses: Analyses) -> Entry {
        let difficulty = match made.difficulty {
            Some(difficulty) => Some(Box::new(difficulty)),
            // A generated puzzle has one solution, so it always rates.
            None if analyses.rate => rate_with_budget(&made.puzzle, analyses.rate_work)
                .ok()
                .map(Box::new),
            None => None,
        };
        Entry {
            index: made.index,
            puzzle: made.puzzle.to_text(),
            solution: made.solution.to_text(),
            givens: made.puzzle.givens(),
            difficulty,
            canonical: analyses.canonical.then(|| {
                canonical(&made.puzzle)
                    .to_text_with_zeros()
                    .into_boxed_str()
            }),
        }
    }
}

/// What one part of a generation job made: its entries in index order
/// (those the deadline cut off are missing), the candidates it drew and
/// the time it took.
#[derive(Debug, Clone)]
pub(super) struct Made {
    entries: Vec<Entry>,
    tried: u64,
    elapsed: Duration,
}

/// Makes puzzles `indices` of `request`, until `stop` says so.
pub(super) fn make(
    request: &Request,
    indices: Range<u64>,
    analyses: Analyses,
    mut stop: impl FnMut() -> bool,
) -> Made {
    let started = Instant::now();
    let mut made = Made {
        entries: Vec::with_capacity(indices.clone().count()),
        tried: 0,
        elapsed: Duration::ZERO,
    };
    for index in indices {
        match request.generator.puzzle(index, &mut stop) {
            Ok(puzzle) => {
                made.tried += puzzle.tried;
                made.entries.push(Entry::new(puzzle, analyses));
            }
            Err(stopped) => {
                made.tried += stopped.tried;
                break;
            }
        }
    }
    made.elapsed = started.elapsed();
    made
}

/// The result message of a generation job from its parts, in order (a
/// part missing, `None`, was lost to a bug): `generated` when every
/// puzzle was made, `timeout` with those made when the job's `deadline`
/// came first, `error` with those made when a part was lost. Also the
/// status it counts under, and what it made.
pub(super) fn reply(
    id: &super::JobId,
    request: &Request,
    parts: Vec<Option<Made>>,
    deadline: Duration,
    worker: &str,
) -> (Vec<u8>, AnswerStatus, Tally) {
    let mut results = Vec::with_capacity(request.count as usize);
    let (mut tried, mut elapsed, mut lost) = (0, Duration::ZERO, false);
    for part in parts {
        match part {
            Some(made) => {
                results.extend(made.entries);
                tried += made.tried;
                elapsed += made.elapsed;
            }
            None => lost = true,
        }
    }
    let (count, made) = (request.count, results.len() as u64);
    let (status, error) = if lost {
        let error = "the worker failed on part of this job (a bug); it has been logged";
        (AnswerStatus::Error, Some(error.to_string()))
    } else if made < count {
        let error = format!(
            "made {made} of {count} puzzles within the job's deadline of {} ms",
            deadline.as_millis()
        );
        (AnswerStatus::Timeout, Some(error))
    } else {
        (AnswerStatus::Solved, None)
    };
    let reply = GenerationReply {
        id,
        status: if status == AnswerStatus::Solved {
            "generated"
        } else {
            status.as_str()
        },
        error,
        seed: request.generator.spec().seed,
        results,
        tried,
        elapsed_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        worker,
    };
    let generated = Tally {
        puzzles: made,
        tried,
    };
    (reply.to_json(), status, generated)
}

/// The result message of a generation job.
#[derive(Debug, Serialize)]
struct GenerationReply<'a> {
    id: &'a super::JobId,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    seed: u64,
    results: Vec<Entry>,
    tried: u64,
    elapsed_us: u64,
    worker: &'a str,
}

impl GenerationReply<'_> {
    /// The message body: compact UTF-8 JSON.
    fn to_json(&self) -> Vec<u8> {
        // Every field is a string, a number or raw JSON that was valid
        // when it was read, so this cannot fail.
        serde_json::to_vec(self).unwrap_or_else(|e| {
            format!(r#"{{"id":null,"status":"error","error":"cannot encode result: {e}"}}"#)
                .into_bytes()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Result<Request, String> {
        let limits = super::super::Limits {
            max_generate: 1000,
            ..super::super::Limits::default()
        };
        Request::read(&value, &limits, || 77)
    }

    #[test]
    fn a_full_object_is_read() {
        let request = read(
            json!({"count": 5, "seed": 42, "symmetry": "central", "minimal": true,
            "givens": {"min": 20, "max": 30}, "difficulty": {"min": 2.0, "max": 4.0},
            "technique": "naked single"}),
        )
        .unwrap();
        assert_eq!(request.count, 5);
        assert!(request.seed_given);
        let spec = request.generator.spec();
        assert_eq!(spec.seed, 42);
        assert_eq!(spec.symmetry, Symmetry::Central);
        assert_eq!(spec.givens, Some((20, 30)));
        assert_eq!(spec.difficulty, Some((2.0, 4.0)));
        assert_eq!(spec.technique, Some(Technique::NakedSingle));
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let request = read(json!({"count": 1})).unwrap();
        assert!(!request.seed_given);
        let spec = request.generator.spec();
        assert_eq!(spec.seed, 77);
        assert_eq!(spec.symmetry, Symmetry::None);
        assert!(spec.minimal);
        assert_eq!(
            (spec.givens, spec.difficulty, spec.technique),
            (None, None, None)
        );
        let half = read(json!({"count": 1, "givens": {"max": 25}})).unwrap();
        assert_eq!(half.generator.spec().givens, Some((17, 25)));
    }

    #[test]
    fn every_wrong_parameter_names_its_field() {
        let cases = [
            (json!({}), "generate.count is missing"),
            (json!({"count": 0}), "generate.count 0 is out of range"),
            (
                json!({"count": 1001}),
                "generate.count 1001 is out of range",
            ),
            (
                json!({"count": 2.5}),
                "generate.count must be a non-negative integer",
            ),
            (json!({"count": 1, "seed": -1}), "generate.seed must be"),
            (
                json!({"count": 1, "seed": 9007199254740992u64}),
                "generate.seed 9007199254740992 is above",
            ),
            (
                json!({"count": 1, "symmetry": "spiral"}),
                "generate.symmetry \"spiral\" is not a symmetry",
            ),
            (
                json!({"count": 1, "symmetry": 3}),
                "generate.symmetry must be a string",
            ),
            (
                json!({"count": 1, "minimal": "yes"}),
                "generate.minimal must be true or false",
            ),
            (
                json!({"count": 1, "givens": {"min": 30, "max": 20}}),
                "generate.givens.min 30 is above generate.givens.max 20",
            ),
            (
                json!({"count": 1, "givens": {"max": 16}}),
                "generate.givens.max 16 is below 17",
            ),
            (
                json!({"count": 1, "givens": {"max": 300}}),
                "generate.givens.max 300 is above 81",
            ),
            (
                json!({"count": 1, "givens": [20, 30]}),
                "generate.givens must be an object",
            ),
            (
                json!({"count": 1, "givens": {"least": 20}}),
                "generate.givens.least is not a bound",
            ),
            (
                json!({"count": 1, "difficulty": {"min": 9.0, "max": 3.0}}),
                "generate.difficulty.min 9 is above generate.difficulty.max 3",
            ),
            (
                json!({"count": 1, "difficulty": {"min": "hard"}}),
                "generate.difficulty.min must be a number",
            ),
            (
                json!({"count": 1, "technique": "x-wing", "difficulty": {"min": 5.0}}),
                "generate.technique \"x-wing\" rates 3.2, outside generate.difficulty 5 or more",
            ),
            (
                json!({"count": 1, "difficulty": {"min": 4.01, "max": 4.09}}),
                "generate.difficulty 4.01 to 4.09 holds no score: scores have one decimal",
            ),
            (
                json!({"count": 1, "symmetry": "quarter", "givens": {"min": 18, "max": 19}}),
                "generate.givens 18 to 19 cannot be met under generate.symmetry \"quarter\"",
            ),
            (
                json!({"count": 1, "technique": "guessing"}),
                "generate.technique \"guessing\" is not a technique",
            ),
            (
                json!({"count": 1, "symetry": "central"}),
                "generate.symetry is not a field of generate",
            ),
            (json!([1]), "generate must be an object"),
        ];
        for (value, want) in cases {
            let error = read(value.clone()).unwrap_err();
            assert!(error.contains(want), "{value}: {error}");
        }
    }

    #[test]
    fn an_entry_writes_the_puzzle_with_dots() {
        let request = read(json!({"count": 1, "seed": 5})).unwrap();
        let made = request.generator.puzzle(0, || false).unwrap();
        let entry = Entry::new(made.clone(), Analyses::new(true, true));
        let text = serde_json::to_value(&entry).unwrap();
        assert_eq!(text["index"], 0);
        assert_eq!(text["puzzle"].as_str().unwrap(), made.puzzle.to_text());
        assert_eq!(
            text["puzzle"].as_str().unwrap().matches('.').count(),
            81 - made.givens()
        );
        assert_eq!(text["givens"], made.givens());
        assert!(text["difficulty"]["score"].as_f64().is_some());
        assert_eq!(text["canonical"].as_str().unwrap().len(), 81);
    }
}
