//! Generation jobs (PROTOCOL.md, "Generation jobs"): the `generate` object
//! read into a [`Request`], with errors that name the field, and the
//! entries of a generation result.

use serde::Serialize;
use serde_json::{Map, Value};

use super::Analyses;
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
            return Err(format!(
                "generate must be an object, not {}",
                kind(generate)
            ));
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
        let symmetry = match present(fields, "symmetry") {
            None => Symmetry::None,
            Some(Value::String(name)) => Symmetry::from_name(name).ok_or_else(|| {
                format!(
                    "generate.symmetry {:?} is not a symmetry (one of {})",
                    super::excerpt(name),
                    Symmetry::ALL.map(Symmetry::name).join(", ")
                )
            })?,
            Some(other) => {
                return Err(format!(
                    "generate.symmetry must be a string, not {}",
                    kind(other)
                ));
            }
        };
        let minimal = match present(fields, "minimal") {
            None => true,
            Some(Value::Bool(minimal)) => *minimal,
            Some(other) => {
                return Err(format!(
                    "generate.minimal must be true or false, not {}",
                    kind(other)
                ));
            }
        };
        let givens = match present(fields, "givens") {
            None => None,
            Some(value) => {
                let (min, max) = band(value, "generate.givens", |v, name| {
                    let n = integer(v, name)?;
                    u8::try_from(n).map_err(|_| format!("{name} {n} is above 81"))
                })?;
                Some((min.unwrap_or(17), max.unwrap_or(81)))
            }
        };
        let difficulty = match present(fields, "difficulty") {
            None => None,
            Some(value) => {
                let (min, max) = band(value, "generate.difficulty", number)?;
                Some((min.unwrap_or(0.0), max.unwrap_or(f64::MAX)))
            }
        };
        let technique = match present(fields, "technique") {
            None => None,
            Some(Value::String(name)) => Some(technique(name)?),
            Some(other) => {
                return Err(format!(
                    "generate.technique must be a string, not {}",
                    kind(other)
                ));
            }
        };
        let spec = Spec {
            seed,
            symmetry,
            minimal,
            givens,
            difficulty,
            technique,
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
            kind(value)
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

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
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

/// The result message of a generation job.
#[derive(Debug, Serialize)]
pub(super) struct GenerationReply<'a> {
    pub(super) id: &'a super::JobId,
    pub(super) status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<String>,
    pub(super) seed: u64,
    pub(super) results: Vec<Entry>,
    pub(super) tried: u64,
    pub(super) elapsed_us: u64,
    pub(super) worker: &'a str,
}

impl GenerationReply<'_> {
    /// The message body: compact UTF-8 JSON.
    pub(super) fn to_json(&self) -> Vec<u8> {
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
