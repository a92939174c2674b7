//! The puzzle sets of the benches and tools: the public sets (README.md,
//! "Puzzle sets") read from the directory named by `SUDOKUD_DATA`, or, when
//! the variable is unset, puzzles the generator makes (said on standard
//! error). The repository holds no copy of the public sets.
//!
//! Included by path (`#[path = ".../benches/data.rs"] mod data;`) in every
//! crate that reads them, so it depends on nothing but `sudokud`.

use std::path::PathBuf;

use sudokud::solver::{Generator, Spec};

/// The environment variable naming the directory of the public sets.
pub const VAR: &str = "SUDOKUD_DATA";

/// The seed of the generated stand-ins.
const SEED: u64 = 1;

/// At most this many generated puzzles stand in for an easy set...
const EASY_CAP: usize = 50_000;

/// ... and for a hard one (a difficulty band takes longer to fill).
const HARD_CAP: usize = 1_000;

/// The difficulty band of the hard stand-in: chains and search.
const HARD_BAND: (f64, f64) = (6.0, 8.5);

/// What a set is like, for its generated stand-in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Mostly decided by propagation: the generator's minimal puzzles.
    Easy,
    /// Needs chains or search: the generator's puzzles scored 6.0 to 8.5.
    Hard,
}

/// A puzzle set: its name and its puzzles, 81 characters each.
pub struct Set {
    pub name: String,
    pub puzzles: Vec<String>,
}

/// The sets `(name, file, max, kind)`: with `SUDOKUD_DATA` set, the first
/// `max` puzzles of each `file` in its directory (a file that cannot be
/// read ends the program with its path); without it, one generated set per
/// kind asked for, `generated` (easy) and `generated_hard`, as many
/// puzzles as the largest `max` of that kind (capped at 50,000 and 1,000).
pub fn sets(wanted: &[(&str, &str, usize, Kind)]) -> Vec<Set> {
    match std::env::var_os(VAR) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            wanted
                .iter()
                .map(|&(name, file, max, _)| {
                    let path = dir.join(file);
                    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                        panic!(
                            "{}: {e} ({VAR}; README.md, \"Puzzle sets\")",
                            path.display()
                        )
                    });
                    let puzzles = text
                        .lines()
                        .map(str::trim)
                        .filter(|l| l.len() == 81 && !l.starts_with('#'))
                        .take(max)
                        .map(str::to_string)
                        .collect();
                    Set {
                        name: name.to_string(),
                        puzzles,
                    }
                })
                .collect()
        }
        None => {
            let mut sets = Vec::new();
            for (kind, name, cap) in [
                (Kind::Easy, "generated", EASY_CAP),
                (Kind::Hard, "generated_hard", HARD_CAP),
            ] {
                let Some(max) = wanted.iter().filter(|w| w.3 == kind).map(|w| w.2).max() else {
                    continue;
                };
                let n = max.min(cap);
                eprintln!(
                    "{VAR} is unset: {n} generated puzzles ({name}, seed {SEED}) stand in for the \
                     public sets (README.md, \"Puzzle sets\")"
                );
                sets.push(Set {
                    name: name.to_string(),
                    puzzles: generate(kind, n),
                });
            }
            sets
        }
    }
}

/// The generator's first `n` puzzles of `kind`, on every core (the
/// sequence does not depend on the threads).
fn generate(kind: Kind, n: usize) -> Vec<String> {
    let spec = Spec {
        seed: SEED,
        difficulty: (kind == Kind::Hard).then_some(HARD_BAND),
        ..Spec::default()
    };
    let generator = Generator::new(spec).expect("the stand-ins' parameters are valid");
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let mut made: Vec<(usize, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let generator = &generator;
                scope.spawn(move || {
                    (t..n)
                        .step_by(threads)
                        .map(|i| {
                            let made = generator
                                .puzzle(i as u64, || false)
                                .expect("a generator never told to stop makes its puzzle");
                            (i, made.puzzle.to_string())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("the generator does not panic"))
            .collect()
    });
    made.sort_by_key(|&(i, _)| i);
    made.into_iter().map(|(_, p)| p).collect()
}
