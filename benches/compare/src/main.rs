//! Throughput of sudokud's solver against the `sudoku` crate 0.8 (a port of
//! JCZSolve), single thread, side by side in one run.
//!
//! Usage: `cargo run --release -p sudokud-compare -- [--rounds N] [--mode first|unique|both] [--only sudokud|sudoku] [SET...]`
//! where each SET is a file of one puzzle a line (default: the public sets
//! in the directory named by `SUDOKUD_DATA`, README.md "Puzzle sets", or
//! generated puzzles when it is unset). Each round runs every solver once over the whole set,
//! taking turns every 256 puzzles; the table shows the median of the
//! rounds in puzzles per second and the median ratio sudokud / sudoku.
//!
//! `cargo run --release -p sudokud-compare -- rate FILE` rates a file of
//! puzzles instead and compares with the reference ratings it carries (see
//! the `rate` module).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use data::{Kind, Set};
use sudokud::{Mode, Status};

#[path = "../../data.rs"]
mod data;
mod rate;

/// Puzzles timed at a stretch before the other solver takes its turn.
const CHUNK: usize = 256;

/// The public sets timed by default, read from `SUDOKUD_DATA` (whole).
const DEFAULT_SETS: [(&str, &str, usize, Kind); 6] = [
    (
        "puzzles2_17_clue",
        "puzzles2_17_clue.txt",
        usize::MAX,
        Kind::Easy,
    ),
    (
        "puzzles3_magictour_top1465",
        "puzzles3_magictour_top1465.txt",
        usize::MAX,
        Kind::Hard,
    ),
    (
        "puzzles5_forum_hardest_1905_11+",
        "puzzles5_forum_hardest_1905_11+.txt",
        usize::MAX,
        Kind::Hard,
    ),
    (
        "puzzles6_forum_hardest_1106",
        "puzzles6_forum_hardest_1106.txt",
        usize::MAX,
        Kind::Hard,
    ),
    (
        "puzzles7_serg_benchmark",
        "puzzles7_serg_benchmark.txt",
        usize::MAX,
        Kind::Easy,
    ),
    ("mixed_hard", "mixed_hard.txt", usize::MAX, Kind::Hard),
];

#[derive(Clone, Copy, PartialEq)]
enum Which {
    First,
    Unique,
}

/// Which solving modes to time.
#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum Modes {
    First,
    Unique,
    Both,
}

/// Which solver to time alone.
#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum Solver {
    Sudokud,
    Sudoku,
}

/// sudokud's solver against the `sudoku` crate 0.8, single thread, side by
/// side in one run.
#[derive(clap::Parser)]
struct Args {
    /// Rounds over each set; the table shows their medians.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    #[arg(long, value_enum, default_value_t = Modes::Both)]
    mode: Modes,
    /// Time one solver alone (for profiling).
    #[arg(long, value_enum)]
    only: Option<Solver>,
    /// Files of one puzzle a line (default: the public sets in the
    /// directory named by `SUDOKUD_DATA`, or generated puzzles).
    sets: Vec<PathBuf>,
}

fn sudokud_pass(lines: &[String], which: Which) -> usize {
    let mode = match which {
        Which::First => Mode::First,
        Which::Unique => Mode::Unique,
    };
    let mut solved = 0;
    for line in lines {
        let outcome =
            sudokud::solver::solve_text(line, mode, None).expect("benchmark puzzles are valid");
        if outcome.status == Status::Solved {
            solved += 1;
        }
        black_box(&outcome);
    }
    solved
}

fn sudoku_pass(lines: &[String], which: Which) -> usize {
    let mut solved = 0;
    for line in lines {
        let puzzle = sudoku::Sudoku::from_str_line(line).expect("benchmark puzzles are valid");
        // Both return the first solution found; `unique` also counts to 2,
        // as sudokud's unique mode does.
        let mut buf = [[0u8; 81]; 1];
        let limit = if which == Which::First { 1 } else { 2 };
        if puzzle.solutions_up_to_buffer(&mut buf, limit) >= 1 {
            solved += 1;
        }
        black_box(&buf);
    }
    solved
}

/// The puzzles of a file named on the command line, named by its stem.
fn read_set(path: &Path) -> Set {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Set {
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        puzzles: text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(String::from)
            .collect(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("rate") {
        return rate::main(std::env::args().skip(1));
    }
    let Args {
        rounds,
        mode,
        only,
        sets,
    } = clap::Parser::parse();
    let modes = match mode {
        Modes::First => vec![Which::First],
        Modes::Unique => vec![Which::Unique],
        Modes::Both => vec![Which::First, Which::Unique],
    };
    let sets: Vec<Set> = if sets.is_empty() {
        data::sets(&DEFAULT_SETS)
    } else {
        sets.iter().map(|path| read_set(path)).collect()
    };

    println!("| set | mode | puzzles | sudokud puzzles/s | sudoku 0.8 puzzles/s | ratio |");
    println!("|---|---|---:|---:|---:|---:|");
    for Set {
        name,
        puzzles: lines,
    } in &sets
    {
        for &which in &modes {
            match only {
                Some(solver) => alone(name, lines, which, solver, rounds),
                None => side_by_side(name, lines, which, rounds),
            }
        }
    }
}

/// One solver alone on `lines`: its median rate over `rounds`.
fn alone(name: &str, lines: &[String], which: Which, solver: Solver, rounds: usize) {
    let mut rates = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        match solver {
            Solver::Sudoku => sudoku_pass(lines, which),
            Solver::Sudokud => sudokud_pass(lines, which),
        };
        rates.push(lines.len() as f64 / start.elapsed().as_secs_f64());
    }
    println!("{name}: {:.0} puzzles/s", median(rates));
}

/// Both solvers on `lines`, taking turns: one row of the table.
fn side_by_side(name: &str, lines: &[String], which: Which, rounds: usize) {
    let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ours_solved, mut theirs_solved) = (0, 0);
    for round in 0..rounds {
        // The solvers take turns chunk by chunk (each going first
        // in every other chunk), so both see the same machine: a
        // load that comes and goes cannot favour one of them.
        let (mut ours_time, mut theirs_time) = (0.0, 0.0);
        let (mut sa, mut sb) = (0, 0);
        for (n, chunk) in lines.chunks(CHUNK).enumerate() {
            let time = |f: &dyn Fn() -> usize, total: &mut f64| {
                let start = Instant::now();
                let solved = f();
                *total += start.elapsed().as_secs_f64();
                solved
            };
            if (n + round) % 2 == 0 {
                sa += time(&|| sudokud_pass(chunk, which), &mut ours_time);
                sb += time(&|| sudoku_pass(chunk, which), &mut theirs_time);
            } else {
                sb += time(&|| sudoku_pass(chunk, which), &mut theirs_time);
                sa += time(&|| sudokud_pass(chunk, which), &mut ours_time);
            }
        }
        let (a, b) = (
            lines.len() as f64 / ours_time,
            lines.len() as f64 / theirs_time,
        );
        ours.push(a);
        theirs.push(b);
        ratios.push(a / b);
        ours_solved = sa;
        theirs_solved = sb;
    }
    assert_eq!(
        ours_solved, theirs_solved,
        "{name}: solvers disagree on how many were solved"
    );
    println!(
        "| {name} | {} | {} | {:.0} | {:.0} | {:.2} |",
        if which == Which::First {
            "first"
        } else {
            "unique"
        },
        lines.len(),
        median(ours),
        median(theirs),
        median(ratios),
    );
}
