//! Job and result messages: the wire contract of docs/protocol.md (v1), field
//! for field.
//!
//! - [`job`]: [`Job::parse`] turns a message body into a [`Job`] or a
//!   [`Rejection`] that still carries the job's `id` (or `null` when the id
//!   itself is unacceptable). A job may ask for [`Analyses`] beside the
//!   solution: a rating and a canonical form (additions to v1).
//! - [`answer`]: [`Answer`] is one puzzle's result, [`Reply`] the whole
//!   result message, [`StatusCounts`] a tally of answers by status.
//! - [`task`]: from a job to its answer. [`answer_job`] turns a job
//!   message into its result message; a [`Task`] does the same in parts,
//!   for callers that spread a job over threads.
//!
//! - [`headers`]: the AMQP headers the contract names (`traceparent`,
//!   `x-sudokud-reason`).
//!
//! Nothing here touches the broker. docs/protocol.md is the users' copy of
//! the contract.

mod answer;
pub mod generation;
mod headers;
mod job;
mod task;

pub use answer::{Answer, AnswerStatus, Reply, SolveFn, StatusCounts, answer_guarded};
pub use headers::{DEAD_REASON_HEADER, TRACEPARENT, is_traceparent};
pub use job::{
    Analyses, Generation, Job, JobError, JobId, MAX_ID_BYTES, Puzzles, Rejection, excerpt,
};
#[cfg(test)]
pub(crate) use task::tests::{batch, stripped};
pub use task::{Answered, Answerer, Part, Tally, Task, answer_job};

/// What a job may ask for, and what it gets when it does not say. Its
/// `Default` is the default settings' (in [`crate::config`], which holds
/// every default, once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Bodies larger than this are answered `invalid` without being parsed.
    pub max_message_bytes: usize,
    /// Most puzzles in one batch.
    pub max_batch: usize,
    /// Most puzzles one generation job may ask for.
    pub max_generate: u64,
    /// The rating's budget in units of work (`solver.max_rate_work`).
    pub max_rate_work: u64,
    /// `limit` when a count job does not give one.
    pub default_count_limit: u64,
    /// Largest `limit` a count job may ask for.
    pub max_count_limit: u64,
    /// Per-puzzle deadline when a job does not give `timeout_ms`.
    pub default_timeout_ms: u64,
    /// Cap on any per-puzzle deadline.
    pub max_timeout_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Grid, Mode, Outcome, Status};
    use serde_json::{Value, json};
    use std::time::Duration;
    use sudokud_testkit::PUZZLE;

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
    fn ids_other_than_short_strings_and_numbers_are_invalid_and_not_echoed() {
        let nested = format!("{}{}", "[".repeat(100), "]".repeat(100));
        let long = format!("\"{}\"", "x".repeat(MAX_ID_BYTES + 1));
        for (id, found) in [
            (r#"{"nested": [1, 2]}"#, "an object"),
            ("[1, 2]", "an array"),
            (nested.as_str(), "an array"),
            ("true", "a boolean"),
            (long.as_str(), "a string of 257 bytes"),
        ] {
            let body = format!(r#"{{"id": {id}, "puzzle":"{PUZZLE}"}}"#);
            let rejection =
                Job::parse(body.as_bytes(), Some("m-1"), &Limits::default()).unwrap_err();
            assert_eq!(rejection.id, JobId::null(), "{found}");
            let error = rejection.error.to_string();
            assert_eq!(
                error,
                format!("id is {found}, expected a string of at most 256 bytes or a number")
            );
            let reply = Reply::rejected(&rejection, "w").to_json();
            assert!(reply.len() < 200, "{}", String::from_utf8_lossy(&reply));
        }
        // A number of any length is an id, echoed as sent.
        let long_number = "9".repeat(MAX_ID_BYTES + 1);
        let job = parse(&format!(r#"{{"id": {long_number}, "puzzle":"{PUZZLE}"}}"#)).unwrap();
        assert_eq!(job.id.as_json(), long_number);
        // At the limit: echoed as sent.
        let most = format!("\"{}\"", "é".repeat(MAX_ID_BYTES / 2));
        let job = parse(&format!(r#"{{"id": {most}, "puzzle":"{PUZZLE}"}}"#)).unwrap();
        assert_eq!(job.id.as_json(), most);
    }

    #[test]
    fn echoed_values_are_cut_short_and_escaped() {
        assert_eq!(excerpt("fast"), "fast");
        assert_eq!(excerpt("a\nb"), "a\\nb");
        let long = "y".repeat(100_000);
        let cut = excerpt(&long);
        assert_eq!(cut, format!("{}... (100000 bytes)", "y".repeat(40)));
        let mode = format!(r#"{{"puzzle":"{PUZZLE}","mode":"{long}"}}"#);
        let (_, error) = rejected(&mode);
        assert!(error.len() < 120, "{error}");
        let limit = format!(r#"{{"puzzle":"{PUZZLE}","mode":"count","limit":"{long}"}}"#);
        let (_, error) = rejected(&limit);
        assert!(error.len() < 120, "{error}");
        let timeout = format!(
            r#"{{"puzzle":"{PUZZLE}","timeout_ms":[{}]}}"#,
            "1,".repeat(5000) + "1"
        );
        let (_, error) = rejected(&timeout);
        assert!(error.len() < 120, "{error}");
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
                "job has no \"puzzle\", \"puzzles\" or \"generate\"".into()
            )
        );
        assert_eq!(
            rejected(&format!(
                r#"{{"id":2,"puzzle":"{PUZZLE}","puzzles":["{PUZZLE}"]}}"#
            )),
            (
                "2".into(),
                "job has more than one of \"puzzle\", \"puzzles\" and \"generate\": send exactly one".into()
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
        // Integers past 64 bits, and integers written with an exponent or a
        // zero fraction, are integers too: capped, not refused.
        for large in ["99999999999999999999999", "1e30", "250.0"] {
            let job = parse(&format!(r#"{{"puzzle":"{PUZZLE}","timeout_ms":{large}}}"#)).unwrap();
            let expected = if large == "250.0" { 250 } else { 60_000 };
            assert_eq!(job.timeout, Duration::from_millis(expected), "{large}");
        }
        for bad in ["0", "-1", "1.5", "\"10\"", "true"] {
            assert_eq!(
                rejected(&format!(r#"{{"puzzle":"{PUZZLE}","timeout_ms":{bad}}}"#)).1,
                format!("timeout_ms must be a positive integer (milliseconds), got {bad}")
            );
        }
    }

    #[test]
    fn reads_the_analysis_flags() {
        let job = parse(&format!(r#"{{"puzzle":"{PUZZLE}"}}"#)).unwrap();
        assert_eq!(job.analyses, Analyses::NONE);
        for (fields, rate, canonical) in [
            (r#""rate":true"#, true, false),
            (r#""canonical":true"#, false, true),
            (r#""rate":true,"canonical":true"#, true, true),
            (r#""rate":false,"canonical":null"#, false, false),
            (r#""rate":null,"canonical":true"#, false, true),
        ] {
            let job = parse(&format!(r#"{{"puzzle":"{PUZZLE}",{fields}}}"#)).unwrap();
            assert_eq!(job.analyses, Analyses::new(rate, canonical), "{fields}");
        }
        let job = parse(&format!(
            r#"{{"puzzles":["{PUZZLE}"],"rate":true,"canonical":true}}"#
        ))
        .unwrap();
        assert_eq!(job.analyses, Analyses::new(true, true));
    }

    #[test]
    fn rejects_analysis_flags_that_are_not_booleans() {
        for (field, value, shown) in [
            ("rate", r#""yes""#, r#""yes""#),
            ("rate", "1", "1"),
            ("canonical", "0", "0"),
            ("canonical", r#""true""#, r#""true""#),
            ("rate", "[true]", "[true]"),
            ("canonical", r#"{"on":true}"#, r#"{"on":true}"#),
        ] {
            let (id, error) = rejected(&format!(
                r#"{{"id":"a","puzzle":"{PUZZLE}","{field}":{value}}}"#
            ));
            assert_eq!(id, r#""a""#);
            assert_eq!(error, format!("{field} must be true or false, got {shown}"));
        }
        let long = "y".repeat(10_000);
        let (_, error) = rejected(&format!(r#"{{"puzzle":"{PUZZLE}","rate":"{long}"}}"#));
        assert!(error.len() < 120, "{error}");
        assert!(error.starts_with("rate must be true or false, got \"yyy"));
    }

    /// The `difficulty` the protocol writes for `grid`.
    fn difficulty_json(grid: &Grid) -> Value {
        let d = crate::solver::rate(grid).unwrap();
        let techniques: serde_json::Map<String, Value> = d
            .counts()
            .map(|(t, n)| (t.name().to_string(), json!(n)))
            .collect();
        json!({
            "technique": d.technique.name(),
            "score": d.score(),
            "pearl": d.pearl(),
            "diamond": d.diamond(),
            "steps": d.steps,
            "techniques": techniques,
        })
    }

    /// Deadlines to analyse with: none (rating settles uniqueness), and
    /// one (a search in mode `unique` does first, in mode `first`).
    const TIMEOUTS: [Option<Duration>; 2] = [None, Some(Duration::from_secs(10))];

    fn analysed(puzzle: &str, mode: Mode, analyses: Analyses) -> Value {
        analysed_within(puzzle, mode, analyses, None)
    }

    fn analysed_within(
        puzzle: &str,
        mode: Mode,
        analyses: Analyses,
        timeout: Option<Duration>,
    ) -> Value {
        let grid = Grid::parse(puzzle).unwrap();
        let (answer, panic) = answer_guarded(crate::solver::solve, &grid, mode, analyses, timeout);
        assert_eq!(panic, None);
        serde_json::to_value(&answer).unwrap()
    }

    const BOTH: Analyses = Analyses::new(true, true);

    #[test]
    fn writes_difficulty_and_canonical_when_asked() {
        let grid = Grid::parse(PUZZLE).unwrap();
        let form = crate::solver::canonical(&grid).to_text_with_zeros();
        for mode in [Mode::First, Mode::Unique, Mode::Count { limit: 10 }] {
            for timeout in TIMEOUTS {
                let body = analysed_within(PUZZLE, mode, BOTH, timeout);
                assert_eq!(body["status"], "solved");
                assert_eq!(body["difficulty"], difficulty_json(&grid), "{mode:?}");
                assert_eq!(body["canonical"], form, "{mode:?}");
                assert_eq!(body.get("unique").is_some(), mode != Mode::First);
            }
        }
        // A rating of many techniques, as the worker's and the command's
        // tests meet it: Inkala's puzzle.
        let (_, hard) = sudokud_testkit::FAMOUS[0];
        let body = analysed(hard, Mode::Unique, BOTH);
        assert_eq!(
            body["difficulty"],
            difficulty_json(&Grid::parse(hard).unwrap())
        );
        assert!(body["difficulty"]["techniques"].as_object().unwrap().len() > 2);
        // The shape, field for field: the Wikipedia puzzle needs singles
        // only.
        let body = analysed(PUZZLE, Mode::First, BOTH);
        let difficulty = body["difficulty"].as_object().unwrap();
        let keys: Vec<&str> = difficulty.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "diamond",
                "pearl",
                "score",
                "steps",
                "technique",
                "techniques"
            ]
        );
        for figure in ["score", "pearl", "diamond"] {
            assert!(body["difficulty"][figure].is_f64(), "{figure}");
        }
        let steps: u64 = difficulty["techniques"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(Some(steps), difficulty["steps"].as_u64());
        assert_eq!(form.len(), 81);
        assert!(form.bytes().all(|b| b.is_ascii_digit()));

        let rate_only = analysed(PUZZLE, Mode::First, Analyses::new(true, false));
        assert!(rate_only.get("canonical").is_none());
        assert_eq!(rate_only["difficulty"], difficulty_json(&grid));
        let off = analysed(PUZZLE, Mode::First, Analyses::NONE);
        assert!(off.get("canonical").is_none() && off.get("difficulty").is_none());
    }

    #[test]
    fn rates_only_puzzles_with_one_solution() {
        // The generator's first puzzle (minimal) with its first given
        // removed: several solutions.
        let generator = crate::solver::Generator::new(crate::solver::Spec::default()).unwrap();
        let mut cells = *generator.puzzle(0, || false).unwrap().puzzle.cells();
        let first = cells.iter().position(|&d| d != 0).unwrap();
        cells[first] = 0;
        let two = Grid::from_cells(cells).unwrap().to_string();
        let two = two.as_str();
        let counted = crate::solver::solve(&Grid::parse(two).unwrap(), Mode::Unique, None);
        assert_eq!(counted.unique, Some(false));
        let unsolvable = format!("12345678.........9{}", ".".repeat(63));
        for (puzzle, status) in [(two, "solved"), (unsolvable.as_str(), "unsolvable")] {
            let form = crate::solver::canonical(&Grid::parse(puzzle).unwrap()).to_text_with_zeros();
            for mode in [Mode::First, Mode::Unique, Mode::Count { limit: 10 }] {
                for timeout in TIMEOUTS {
                    let body = analysed_within(puzzle, mode, BOTH, timeout);
                    assert_eq!(body["status"], status, "{mode:?}");
                    assert!(body.get("difficulty").is_none(), "{mode:?}: {body}");
                    assert_eq!(body["canonical"], form, "{mode:?}");
                }
            }
        }
    }

    /// Solves in mode `first`; in mode `unique` (the check before rating)
    /// it times out.
    fn unique_check_times_out(grid: &Grid, mode: Mode, timeout: Option<Duration>) -> Outcome {
        let outcome = crate::solver::solve(grid, Mode::First, timeout);
        match mode {
            Mode::First => outcome,
            _ => Outcome {
                status: Status::Timeout,
                solution: None,
                unique: None,
                count: None,
                ..outcome
            },
        }
    }

    fn unique_check_panics(grid: &Grid, mode: Mode, timeout: Option<Duration>) -> Outcome {
        assert_eq!(mode, Mode::First, "injected failure");
        crate::solver::solve(grid, mode, timeout)
    }

    #[test]
    fn no_rating_when_uniqueness_is_not_settled_in_time() {
        let grid = Grid::parse(PUZZLE).unwrap();
        let timeout = Some(Duration::from_secs(1));
        let (answer, panic) =
            answer_guarded(unique_check_times_out, &grid, Mode::First, BOTH, timeout);
        assert_eq!(panic, None);
        assert_eq!(answer.status, AnswerStatus::Solved);
        assert_eq!(answer.difficulty, None);
        assert!(answer.canonical.is_some());
        // Off, the check does not run at all.
        let (answer, panic) = answer_guarded(
            unique_check_panics,
            &grid,
            Mode::First,
            Analyses::NONE,
            timeout,
        );
        assert_eq!((answer.status, panic), (AnswerStatus::Solved, None));
        // A panic in an analysis is an `error` answer, like one in the
        // solver.
        let (answer, panic) =
            answer_guarded(unique_check_panics, &grid, Mode::First, BOTH, timeout);
        assert_eq!(answer.status, AnswerStatus::Error);
        assert!(panic.unwrap().contains("injected failure"));
    }

    #[test]
    fn a_puzzle_not_solved_still_gets_its_canonical_form() {
        let grid = Grid::parse(PUZZLE).unwrap();
        let answer = Answer::timed_out("not reached").with_canonical(&grid, BOTH);
        assert_eq!(
            answer.canonical.as_deref(),
            Some(
                crate::solver::canonical(&grid)
                    .to_text_with_zeros()
                    .as_str()
            )
        );
        assert_eq!(answer.difficulty, None);
        let answer = Answer::timed_out("not reached").with_canonical(&grid, Analyses::NONE);
        assert_eq!(answer.canonical, None);
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
        // What was found before the deadline, a lower bound.
        assert!(
            answer.count.is_some_and(|count| (1..1000).contains(&count)),
            "{:?}",
            answer.count
        );
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
