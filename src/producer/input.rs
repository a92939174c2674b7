//! Input files of the producer commands: one job per line, checked before
//! anything is sent, and packed into job messages.
//!
//! A line is a puzzle (81 cells, `.` or `0` for blanks, or a 9x9 JSON array)
//! or a JSON job object as the protocol defines it. Blank lines and lines
//! starting with `#` are skipped. Every line is checked as a worker would
//! check it ([`Grid::parse`], [`Job::parse`] under the configured limits),
//! and [`read`] reports every bad line at once, so a bad file sends nothing.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use anyhow::Context;

use serde::Serialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::protocol::{Job, Limits, Puzzles};
use crate::solver::Grid;

/// What a job asks the solver for, as the protocol's `mode` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobMode {
    First,
    Unique,
    Count,
}

impl JobMode {
    /// The wire name, as in a job's `mode`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobMode::First => "first",
            JobMode::Unique => "unique",
            JobMode::Count => "count",
        }
    }
}

/// How input lines become job messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOptions {
    /// Puzzles per message: 1 sends `puzzle` jobs, more sends `puzzles`
    /// batches of up to this many.
    pub batch: usize,
    /// `mode` of every job (the worker's default, `first`, when `None`).
    pub mode: Option<JobMode>,
    /// `limit` of every job.
    pub limit: Option<u64>,
    /// `timeout_ms` of every job.
    pub timeout_ms: Option<u64>,
    /// `"rate": true` in every job: answers carry a difficulty.
    pub rate: bool,
    /// `"canonical": true` in every job: answers carry the canonical form.
    pub canonical: bool,
    /// Ids become the strings `"<prefix><line>"` instead of line numbers.
    pub id_prefix: Option<String>,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            batch: 1,
            mode: None,
            limit: None,
            timeout_ms: None,
            rate: false,
            canonical: false,
            id_prefix: None,
        }
    }
}

/// How a message relates to the input, which decides how its result is
/// read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One puzzle line, sent as a `puzzle` job.
    Puzzle,
    /// Several puzzle lines packed into one `puzzles` batch, in line order.
    Packed,
    /// A JSON job line, sent as written (plus the fields it lacked).
    Job,
}

/// One job message, ready to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The body: a JSON job object.
    pub body: Vec<u8>,
    /// Line numbers (from 1) of the puzzles or job in it, in order.
    pub lines: Vec<usize>,
    pub shape: Shape,
    /// Puzzles in the message (a JSON batch line counts its puzzles).
    pub puzzles: usize,
}

/// The messages of a whole input, in input order.
#[derive(Debug, Default)]
pub struct Batch {
    pub messages: Vec<Message>,
    /// Puzzles over all messages.
    pub puzzles: usize,
}

/// A line that a worker would answer `invalid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line: usize,
    pub reason: String,
}

/// Why an input could not be read: I/O, or bad lines (all of them).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read input at line {line}: {source}")]
    Io {
        line: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", bad_lines_message(.0))]
    BadLines(Vec<BadLine>),
    #[error("input has no puzzles (blank lines and lines starting with # are skipped)")]
    Empty,
    #[error("--batch {batch} is over the maximum batch of {max} (worker.max_batch)")]
    BatchTooLarge { batch: usize, max: usize },
    #[error("--batch must be at least 1")]
    BatchZero,
    #[error("--limit caps a count of solutions: use it with --mode count")]
    LimitWithoutCount,
}

/// Bad lines shown in an error; the rest are counted.
const BAD_LINES_SHOWN: usize = 20;

fn bad_lines_message(lines: &[BadLine]) -> String {
    let mut text = format!(
        "{} bad input line{}, nothing sent:",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" }
    );
    for bad in lines.iter().take(BAD_LINES_SHOWN) {
        text.push_str(&format!("\n  line {}: {}", bad.line, bad.reason));
    }
    if lines.len() > BAD_LINES_SHOWN {
        text.push_str(&format!(
            "\n  ... and {} more",
            lines.len() - BAD_LINES_SHOWN
        ));
    }
    text
}

/// A job body as built from puzzle lines.
#[derive(Serialize)]
struct OutJob<'a> {
    id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    puzzle: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    puzzles: Option<&'a [Box<RawValue>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    rate: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    canonical: bool,
}

impl JobOptions {
    /// Whether these options make sense together and under `limits`,
    /// before any input is read.
    pub fn check(&self, limits: &Limits) -> Result<(), InputError> {
        if self.limit.is_some() && self.mode != Some(JobMode::Count) {
            return Err(InputError::LimitWithoutCount);
        }
        if self.batch == 0 {
            return Err(InputError::BatchZero);
        }
        if self.batch > limits.max_batch {
            return Err(InputError::BatchTooLarge {
                batch: self.batch,
                max: limits.max_batch,
            });
        }
        Ok(())
    }

    /// The `id` a job built from `line` gets.
    pub fn id_for(&self, line: usize) -> Value {
        match &self.id_prefix {
            Some(prefix) => Value::String(format!("{prefix}{line}")),
            None => Value::from(line),
        }
    }

    fn body(
        &self,
        first_line: usize,
        puzzle: Option<&RawValue>,
        puzzles: Option<&[Box<RawValue>]>,
    ) -> Vec<u8> {
        let job = OutJob {
            id: &self.id_for(first_line),
            puzzle,
            puzzles,
            mode: self.mode.map(JobMode::as_str),
            limit: self.limit,
            timeout_ms: self.timeout_ms,
            rate: self.rate,
            canonical: self.canonical,
        };
        // Strings, integers and JSON that parsed already: cannot fail.
        serde_json::to_vec(&job).unwrap_or_default()
    }

    /// `text` (a JSON job object) with the fields it lacks added: `id` from
    /// the line number, `mode`, `limit`, `timeout_ms`, `rate` and
    /// `canonical` from the options.
    /// Present fields, even `null` ones, are kept as written.
    fn fill(&self, text: &str, line: usize) -> String {
        let Ok(keys) = serde_json::from_str::<HashMap<String, IgnoredAny>>(text) else {
            // Not an object: the job check reports why.
            return text.to_string();
        };
        let mut added = String::new();
        let mut add = |key: &str, value: String| {
            if !keys.contains_key(key) {
                added.push_str(&format!(",\"{key}\":{value}"));
            }
        };
        add("id", self.id_for(line).to_string());
        if let Some(mode) = self.mode {
            add("mode", format!("\"{}\"", mode.as_str()));
        }
        if let Some(limit) = self.limit {
            add("limit", limit.to_string());
        }
        if let Some(timeout_ms) = self.timeout_ms {
            add("timeout_ms", timeout_ms.to_string());
        }
        if self.rate {
            add("rate", "true".into());
        }
        if self.canonical {
            add("canonical", "true".into());
        }
        if added.is_empty() || keys.is_empty() {
            return text.to_string();
        }
        // An object with at least one key ends in `}`: append before it.
        let trimmed = text.trim_end();
        match trimmed.strip_suffix('}') {
            Some(open) => format!("{open}{added}}}"),
            None => text.to_string(),
        }
    }
}

/// A puzzle line, checked, as the JSON value it is sent as.
fn puzzle_json(text: &str) -> Result<Box<RawValue>, String> {
    if text.starts_with('[') {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("puzzle is not valid JSON: {e}"))?;
        Grid::from_json(&value).map_err(|e| e.to_string())?;
        serde_json::value::to_raw_value(&value).map_err(|e| e.to_string())
    } else {
        Grid::parse(text).map_err(|e| e.to_string())?;
        serde_json::value::to_raw_value(text).map_err(|e| e.to_string())
    }
}

/// Reads a whole input and turns it into messages, checking every line as
/// a worker with `limits` would. Fails with every bad line, or with the
/// first I/O error; never returns an empty batch.
pub fn read(
    input: impl BufRead,
    options: &JobOptions,
    limits: &Limits,
) -> Result<Batch, InputError> {
    options.check(limits)?;
    let mut packer = Packer::new(options, limits);
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|source| InputError::Io {
            line: number,
            source,
        })?;
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        if text.starts_with('{') {
            packer.job_line(text, number);
        } else {
            packer.puzzle_line(text, number);
        }
    }
    packer.finish()
}

/// The messages of an input, built line by line: puzzle lines packed
/// `options.batch` to a message, each JSON job line a message of its own.
/// Once a line is bad the input will be refused, and only more bad lines
/// are looked for.
struct Packer<'a> {
    options: &'a JobOptions,
    limits: &'a Limits,
    batch: Batch,
    bad: Vec<BadLine>,
    /// Puzzles read and not yet packed into a message, with their lines.
    pending: Vec<Box<RawValue>>,
    pending_lines: Vec<usize>,
}

impl<'a> Packer<'a> {
    fn new(options: &'a JobOptions, limits: &'a Limits) -> Packer<'a> {
        Packer {
            options,
            limits,
            batch: Batch::default(),
            bad: Vec::new(),
            pending: Vec::new(),
            pending_lines: Vec::new(),
        }
    }

    /// Packs the pending puzzles, if any, into one message.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let body = self
            .options
            .body(self.pending_lines[0], None, Some(&self.pending));
        self.batch.puzzles += self.pending.len();
        self.batch.messages.push(Message {
            body,
            lines: std::mem::take(&mut self.pending_lines),
            shape: Shape::Packed,
            puzzles: self.pending.len(),
        });
        self.pending.clear();
    }

    /// A JSON job line, its missing fields filled from the options: a
    /// message of its own, after the puzzles pending before it.
    fn job_line(&mut self, text: &str, number: usize) {
        let body = self.options.fill(text, number);
        match Job::parse(body.as_bytes(), None, self.limits) {
            Err(rejection) => self.bad.push(BadLine {
                line: number,
                reason: rejection.error.to_string(),
            }),
            Ok(job) => {
                if let Puzzles::Batch(items) = &job.puzzles {
                    for (i, item) in items.iter().enumerate() {
                        if let Err(e) = item {
                            self.bad.push(BadLine {
                                line: number,
                                reason: format!("puzzle {} of the batch: {e}", i + 1),
                            });
                        }
                    }
                }
                if !self.bad.is_empty() {
                    return;
                }
                self.flush();
                self.batch.puzzles += job.len();
                self.batch.messages.push(Message {
                    body: body.into_bytes(),
                    lines: vec![number],
                    shape: Shape::Job,
                    puzzles: job.len(),
                });
            }
        }
    }

    /// A puzzle line: a message of its own with `--batch 1`, else pending
    /// until `options.batch` puzzles fill a message.
    fn puzzle_line(&mut self, text: &str, number: usize) {
        let puzzle = match puzzle_json(text) {
            Ok(puzzle) => puzzle,
            Err(reason) => {
                self.bad.push(BadLine {
                    line: number,
                    reason,
                });
                return;
            }
        };
        if !self.bad.is_empty() {
            // The input will be refused: only look for more bad lines.
            return;
        }
        if self.options.batch == 1 {
            self.batch.puzzles += 1;
            self.batch.messages.push(Message {
                body: self.options.body(number, Some(&puzzle), None),
                lines: vec![number],
                shape: Shape::Puzzle,
                puzzles: 1,
            });
        } else {
            self.pending.push(puzzle);
            self.pending_lines.push(number);
            if self.pending.len() == self.options.batch {
                self.flush();
            }
        }
    }

    /// The batch, or every bad line; an error too for an input without
    /// puzzles or a message over the size limit.
    fn finish(mut self) -> Result<Batch, InputError> {
        if !self.bad.is_empty() {
            return Err(InputError::BadLines(self.bad));
        }
        self.flush();
        let (batch, limits) = (self.batch, self.limits);
        if batch.messages.is_empty() {
            return Err(InputError::Empty);
        }
        if let Some(big) = batch
            .messages
            .iter()
            .find(|m| m.body.len() > limits.max_message_bytes)
        {
            return Err(InputError::BadLines(vec![BadLine {
                line: big.lines[0],
                reason: format!(
                    "a batch of {} puzzles from here is {} bytes, over the message limit of {} bytes (worker.max_message_bytes): use a smaller --batch",
                    big.lines.len(),
                    big.body.len(),
                    limits.max_message_bytes
                ),
            }]));
        }
        Ok(batch)
    }
}

/// A command's input, named on its command line: a file, or standard
/// input for `-` or no name.
pub struct Source {
    pub reader: Box<dyn BufRead>,
    /// Its size in bytes, when it is a file.
    pub size: Option<u64>,
    /// How errors name it: the path, or "standard input".
    pub name: String,
}

impl Source {
    pub fn open(path: Option<&Path>) -> anyhow::Result<Source> {
        match path {
            Some(path) if path.as_os_str() != "-" => {
                let file =
                    File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
                Ok(Source {
                    size: file.metadata().ok().map(|m| m.len()),
                    reader: Box::new(BufReader::with_capacity(1 << 16, file)),
                    name: path.display().to_string(),
                })
            }
            _ => Ok(Source {
                reader: Box::new(io::stdin().lock()),
                size: None,
                name: "standard input".to_string(),
            }),
        }
    }
}

/// [`read`] of the input at `path` (standard input for `-` or `None`),
/// the options checked before it is opened; errors name the input.
pub fn read_source(
    path: Option<&Path>,
    options: &JobOptions,
    limits: &Limits,
) -> anyhow::Result<Batch> {
    options.check(limits)?;
    let source = Source::open(path)?;
    read(source.reader, options, limits).context(source.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sudokud_testkit::PUZZLE;

    fn read_str(text: &str, options: &JobOptions) -> Result<Batch, InputError> {
        read(text.as_bytes(), options, &Limits::default())
    }

    fn bodies(batch: &Batch) -> Vec<Value> {
        batch
            .messages
            .iter()
            .map(|m| serde_json::from_slice(&m.body).unwrap())
            .collect()
    }

    #[test]
    fn one_job_per_puzzle_line_with_the_line_as_id() {
        let text = format!("# a comment\n\n{PUZZLE}\n  {PUZZLE}  \n");
        let batch = read_str(&text, &JobOptions::default()).unwrap();
        assert_eq!(batch.puzzles, 2);
        assert_eq!(
            bodies(&batch),
            vec![
                json!({"id": 3, "puzzle": PUZZLE}),
                json!({"id": 4, "puzzle": PUZZLE})
            ]
        );
        assert_eq!(batch.messages[1].lines, vec![4]);
        assert_eq!(batch.messages[1].shape, Shape::Puzzle);
    }

    #[test]
    fn options_go_into_every_job() {
        let options = JobOptions {
            mode: Some(JobMode::Count),
            limit: Some(7),
            timeout_ms: Some(250),
            id_prefix: Some("r-".into()),
            ..JobOptions::default()
        };
        let batch = read_str(&format!("{PUZZLE}\n"), &options).unwrap();
        assert_eq!(
            bodies(&batch),
            vec![
                json!({"id": "r-1", "puzzle": PUZZLE, "mode": "count", "limit": 7, "timeout_ms": 250})
            ]
        );
        let options = JobOptions {
            batch: 2,
            rate: true,
            canonical: true,
            ..JobOptions::default()
        };
        let text = format!("{PUZZLE}\n{PUZZLE}\n{{\"puzzle\": \"{PUZZLE}\", \"rate\": false}}\n");
        let batch = read_str(&text, &options).unwrap();
        assert_eq!(
            bodies(&batch),
            vec![
                json!({"id": 1, "puzzles": [PUZZLE, PUZZLE], "rate": true, "canonical": true}),
                json!({"puzzle": PUZZLE, "rate": false, "id": 3, "canonical": true}),
            ]
        );
    }

    #[test]
    fn batches_pack_lines_in_order_with_the_first_line_as_id() {
        let text = format!("{PUZZLE}\n{PUZZLE}\n# skip\n{PUZZLE}\n{PUZZLE}\n{PUZZLE}\n");
        let options = JobOptions {
            batch: 2,
            ..JobOptions::default()
        };
        let batch = read_str(&text, &options).unwrap();
        let lines: Vec<_> = batch.messages.iter().map(|m| m.lines.clone()).collect();
        assert_eq!(lines, vec![vec![1, 2], vec![4, 5], vec![6]]);
        assert!(batch.messages.iter().all(|m| m.shape == Shape::Packed));
        assert_eq!(
            bodies(&batch)[1],
            json!({"id": 4, "puzzles": [PUZZLE, PUZZLE]})
        );
        assert_eq!(batch.puzzles, 5);
    }

    #[test]
    fn json_jobs_are_sent_as_written_plus_what_they_lack() {
        let big = "123456789012345678901234567890";
        let text = format!(
            "{PUZZLE}\n{{\"id\": {big}, \"puzzle\": \"{PUZZLE}\", \"mode\": \"unique\" }}\n{{\"puzzles\": [\"{PUZZLE}\"], \"id\": null}}\n{PUZZLE}\n"
        );
        let options = JobOptions {
            batch: 5,
            mode: Some(JobMode::Count),
            ..JobOptions::default()
        };
        let batch = read_str(&text, &options).unwrap();
        let texts: Vec<String> = batch
            .messages
            .iter()
            .map(|m| String::from_utf8(m.body.clone()).unwrap())
            .collect();
        // Input order is kept: the pending batch goes out before a JSON job.
        assert_eq!(
            texts[0],
            format!(r#"{{"id":1,"puzzles":["{PUZZLE}"],"mode":"count"}}"#)
        );
        // The id stays 30 digits; mode is the line's own.
        assert_eq!(
            texts[1],
            format!(r#"{{"id": {big}, "puzzle": "{PUZZLE}", "mode": "unique" }}"#)
        );
        // A null id is kept (so it is not sent twice); mode is filled.
        assert_eq!(
            texts[2],
            format!(r#"{{"puzzles": ["{PUZZLE}"], "id": null,"mode":"count"}}"#)
        );
        assert_eq!(batch.messages[2].shape, Shape::Job);
        assert_eq!(batch.messages[3].lines, vec![4]);
        assert_eq!(batch.puzzles, 4);
    }

    #[test]
    fn array_lines_are_puzzles() {
        let rows: Vec<Vec<u8>> = (0..9).map(|_| vec![0; 9]).collect();
        let text = serde_json::to_string(&rows).unwrap();
        let batch = read_str(&text, &JobOptions::default()).unwrap();
        assert_eq!(bodies(&batch), vec![json!({"id": 1, "puzzle": rows})]);
        let err = read_str("[[1,2,3]]", &JobOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "1 bad input line, nothing sent:\n  line 1: puzzle has 1 rows, expected 9"
        );
    }

    #[test]
    fn every_bad_line_is_reported() {
        let mut text = String::new();
        for _ in 0..25 {
            text.push_str("12\n");
        }
        text.push_str(&format!("{{\"puzzles\": [\"{PUZZLE}\", \"x\"]}}\n"));
        let Err(InputError::BadLines(bad)) = read_str(&text, &JobOptions::default()) else {
            panic!("expected bad lines")
        };
        assert_eq!(bad.len(), 26);
        assert_eq!(
            bad[25].reason,
            "puzzle 2 of the batch: invalid character 'x' at row 1, column 1"
        );
        let message = InputError::BadLines(bad).to_string();
        assert!(message.starts_with(
            "26 bad input lines, nothing sent:\n  line 1: puzzle has 2 cells, expected 81\n"
        ));
        assert!(message.ends_with("\n  ... and 6 more"), "{message}");
    }

    #[test]
    fn limits_are_the_workers() {
        let limits = Limits {
            max_batch: 3,
            max_count_limit: 10,
            max_message_bytes: 200,
            ..Limits::default()
        };
        let options = JobOptions {
            batch: 4,
            ..JobOptions::default()
        };
        assert_eq!(
            read(PUZZLE.as_bytes(), &options, &limits)
                .unwrap_err()
                .to_string(),
            "--batch 4 is over the maximum batch of 3 (worker.max_batch)"
        );
        let options = JobOptions {
            mode: Some(JobMode::Count),
            limit: Some(11),
            ..JobOptions::default()
        };
        let json_line = format!("{{\"puzzle\": \"{PUZZLE}\"}}");
        assert_eq!(
            read(json_line.as_bytes(), &options, &limits)
                .unwrap_err()
                .to_string(),
            "1 bad input line, nothing sent:\n  line 1: limit must be an integer from 1 to 10, got 11"
        );
        let options = JobOptions {
            batch: 3,
            ..JobOptions::default()
        };
        let text = format!("{PUZZLE}\n{PUZZLE}\n{PUZZLE}\n");
        let error = read(text.as_bytes(), &options, &limits)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("line 1: a batch of 3 puzzles from here is"),
            "{error}"
        );
        assert!(error.contains("use a smaller --batch"), "{error}");
    }

    #[test]
    fn a_limit_needs_mode_count() {
        for mode in [None, Some(JobMode::First), Some(JobMode::Unique)] {
            let options = JobOptions {
                mode,
                limit: Some(5),
                ..JobOptions::default()
            };
            assert!(matches!(
                read_str(PUZZLE, &options),
                Err(InputError::LimitWithoutCount)
            ));
        }
    }

    #[test]
    fn empty_input_and_zero_batches_are_refused() {
        assert!(matches!(
            read_str("# nothing\n\n", &JobOptions::default()),
            Err(InputError::Empty)
        ));
        let options = JobOptions {
            batch: 0,
            ..JobOptions::default()
        };
        assert!(matches!(
            read_str(PUZZLE, &options),
            Err(InputError::BatchZero)
        ));
    }
}
