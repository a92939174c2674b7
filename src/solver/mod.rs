//! The solver core: [`Grid`] (every puzzle format, validated), [`solve`]
//! (propagation and fewest-candidates backtracking over bitmasks), and two
//! analyses: [`rate`] (difficulty by human techniques) and [`canonical`]
//! (the minlex form under the Sudoku symmetries).
//!
//! Nothing in here does I/O, logs, or knows about the broker: the worker and
//! the command line call [`solve`] and turn the [`Outcome`] into output.

mod canonical;
mod generate;
mod grid;
mod rate;
mod search;
mod tables;

#[cfg(test)]
mod reference;

use std::time::{Duration, Instant};

pub use canonical::canonical;
pub use generate::{
    GenerateError, Generated, Generator, MAX_SEED, MIN_GIVENS, Spec, Stopped, Symmetry,
};
pub use grid::{CELLS, Grid, GridError, Unit};
pub use rate::{
    DEFAULT_MAX_RATE_WORK, Difficulty, RateError, Technique, rate, rate_at_most, rate_with_budget,
};

use search::{Board, Search};

/// What the search looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Any one solution; the search stops at the first.
    First,
    /// A solution and whether it is the only one: the search stops at the
    /// second.
    Unique,
    /// The number of solutions, counting stops at `limit` (at least 1).
    /// The search still looks for a second solution when `limit` is 1, so
    /// [`Outcome::unique`] is always exact.
    Count { limit: u64 },
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// A solution was found (and, in [`Mode::Unique`] and [`Mode::Count`],
    /// the search ran to its end).
    Solved,
    /// The givens are consistent but no completion exists.
    Unsolvable,
    /// The deadline passed before the search could answer.
    Timeout,
}

/// The answer to one puzzle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    /// The first solution found: a complete grid that keeps every given.
    /// `Some` exactly when `status` is [`Status::Solved`].
    pub solution: Option<Grid>,
    /// Whether the solution is the only one. `Some` when solved in
    /// [`Mode::Unique`] or [`Mode::Count`].
    pub unique: Option<bool>,
    /// Solutions found, at most the limit. `Some` in [`Mode::Count`]; on
    /// a timeout, those found before the deadline (a lower bound).
    pub count: Option<u64>,
    /// Branches the search explored (each digit tried at a choice point);
    /// `0` when propagation alone decided the puzzle.
    pub guesses: u64,
    /// Time spent in the solver ([`solve`]); zero from [`solve_untimed`].
    pub elapsed: Duration,
}

/// Solves `grid` in `mode`, giving up once `timeout` has passed.
///
/// The clock is read once every few hundred guesses, so the search overruns
/// the deadline by well under a millisecond. Never assumes the puzzle has a
/// single solution.
pub fn solve(grid: &Grid, mode: Mode, timeout: Option<Duration>) -> Outcome {
    let start = Instant::now();
    let deadline = timeout.map(|t| start + t);
    let expired = || deadline.is_some_and(|d| Instant::now() >= d);
    solve_with(grid, mode, expired, start)
}

/// [`solve`] without a deadline and without the clock: the same answer,
/// with [`Outcome::elapsed`] left at zero. For callers that report no time
/// (the plain output of `sudokud solve`): on puzzles solved in a few
/// microseconds, the two clock reads of [`solve`] are a measurable part of
/// the work.
pub fn solve_untimed(grid: &Grid, mode: Mode) -> Outcome {
    run_search(grid, mode, || false)
}

/// [`solve`] with the clock abstracted: `expired` is asked every few hundred
/// guesses and ends the search with [`Status::Timeout`] when it says `true`.
fn solve_with(grid: &Grid, mode: Mode, expired: impl FnMut() -> bool, start: Instant) -> Outcome {
    let mut outcome = run_search(grid, mode, expired);
    outcome.elapsed = start.elapsed();
    outcome
}

/// Reads a puzzle in the string format ([`Grid::parse`]) and solves it:
/// [`solve`] with a deadline, [`solve_untimed`] without one. The same
/// answers and the same errors as parsing and then solving, for less work:
/// repeated givens are found by the solver's own setup, which meets every
/// one while it places the givens, so the separate check of
/// [`Grid::parse`] runs only to describe a repeat the setup found.
pub fn solve_text(text: &str, mode: Mode, timeout: Option<Duration>) -> Result<Outcome, GridError> {
    let cells = Grid::parse_cells(text)?;
    let Ok(board) = Board::new(&cells) else {
        // The setup met a repeat, which the precise check describes (and
        // if it found none, the puzzle is a contradiction like any other).
        return match Grid::from_cells(cells) {
            Err(e) => Err(e),
            Ok(_) => Ok(outcome(Search::new(1, || false), mode)),
        };
    };
    Ok(match timeout {
        None => run_board(board, &cells, mode, || false),
        Some(timeout) => {
            let start = Instant::now();
            let deadline = start + timeout;
            let mut outcome = run_board(board, &cells, mode, || Instant::now() >= deadline);
            outcome.elapsed = start.elapsed();
            outcome
        }
    })
}

/// The search itself, with `elapsed` left at zero for the caller to fill.
#[inline]
fn run_search(grid: &Grid, mode: Mode, expired: impl FnMut() -> bool) -> Outcome {
    match Board::new(grid.cells()) {
        Ok(board) => run_board(board, grid.cells(), mode, expired),
        // A `Grid` never repeats a given, so the board always builds; treat
        // a failure like any other contradiction all the same.
        Err(_) => outcome(Search::new(1, expired), mode),
    }
}

/// Searches `board`, built from the puzzle `cells`.
#[inline]
fn run_board(
    mut board: Board,
    cells: &[u8; CELLS],
    mode: Mode,
    expired: impl FnMut() -> bool,
) -> Outcome {
    let limit = match mode {
        Mode::First => 1,
        Mode::Unique => 2,
        Mode::Count { limit } => limit.max(2),
    };
    let mut search = Search::new(limit, expired);
    search.run(&mut board);
    let outcome = outcome(search, mode);
    debug_assert!(
        outcome
            .solution
            .is_none_or(|solution| solution.keeps_givens(cells))
    );
    outcome
}

/// The answer a finished (or timed-out) search gives in `mode`.
fn outcome<F: FnMut() -> bool>(search: Search<F>, mode: Mode) -> Outcome {
    let (status, solution) = if search.timed_out {
        (Status::Timeout, None)
    } else {
        match search.first {
            Some(cells) => (Status::Solved, Some(Grid::from_solved(cells))),
            None => (Status::Unsolvable, None),
        }
    };
    Outcome {
        status,
        solution,
        unique: match mode {
            Mode::First => None,
            _ if status == Status::Solved => Some(search.found == 1),
            _ => None,
        },
        // On a timeout, the solutions found so far: a lower bound.
        count: match mode {
            Mode::Count { limit } => Some(search.found.min(limit.max(1))),
            _ => None,
        },
        guesses: search.guesses,
        elapsed: Duration::ZERO,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A random solved grid: a fixed valid pattern put through random
    /// validity-preserving shuffles (digits, rows within bands, bands,
    /// columns within stacks, stacks, transposition).
    pub(crate) fn solved_grid() -> impl Strategy<Value = [u8; 81]> {
        // A valid pattern: row r is 1-9 shifted by 3r + r/3.
        let pattern: [u8; 81] = std::array::from_fn(|i| {
            let (r, c) = (i / 9, i % 9);
            ((r * 3 + r / 3 + c) % 9 + 1) as u8
        });
        symmetry().prop_map(move |symmetry| symmetry.apply(&pattern))
    }

    /// A Sudoku symmetry: digits relabelled, rows permuted within bands,
    /// bands permuted, the same for columns and stacks, and an optional
    /// transposition.
    #[derive(Debug, Clone)]
    pub(crate) struct Symmetry {
        digits: [u8; 9],
        rows: [[usize; 3]; 3],
        bands: [usize; 3],
        cols: [[usize; 3]; 3],
        stacks: [usize; 3],
        transpose: bool,
    }

    impl Symmetry {
        /// The grid moved by the symmetry: cell (r, c) of the result is
        /// the source cell its permutations pick, with the digit renamed.
        pub(crate) fn apply(&self, cells: &[u8; 81]) -> [u8; 81] {
            std::array::from_fn(|i| {
                let (r, c) = (i / 9, i % 9);
                let sr = self.bands[r / 3] * 3 + self.rows[r / 3][r % 3];
                let sc = self.stacks[c / 3] * 3 + self.cols[c / 3][c % 3];
                let (sr, sc) = if self.transpose { (sc, sr) } else { (sr, sc) };
                match cells[sr * 9 + sc] {
                    0 => 0,
                    d => self.digits[usize::from(d - 1)],
                }
            })
        }
    }

    /// A random [`Symmetry`].
    pub(crate) fn symmetry() -> impl Strategy<Value = Symmetry> {
        let perm3 = || Just([0usize, 1, 2]).prop_shuffle();
        (
            Just([1u8, 2, 3, 4, 5, 6, 7, 8, 9]).prop_shuffle(),
            [perm3(), perm3(), perm3()],
            perm3(),
            [perm3(), perm3(), perm3()],
            perm3(),
            any::<bool>(),
        )
            .prop_map(|(digits, rows, bands, cols, stacks, transpose)| Symmetry {
                digits,
                rows,
                bands,
                cols,
                stacks,
                transpose,
            })
    }

    /// A puzzle with exactly one solution, usually a minimal one: the
    /// cells of a random solved grid emptied in random order, each kept
    /// blank only while the solution stays unique.
    pub(crate) fn unique_puzzle() -> impl Strategy<Value = Grid> {
        (
            solved_grid(),
            Just((0..81).collect::<Vec<usize>>()).prop_shuffle(),
        )
            .prop_map(|(mut cells, order)| {
                for cell in order {
                    let digit = std::mem::replace(&mut cells[cell], 0);
                    let grid = Grid::from_cells(cells).expect("cells come from a valid grid");
                    if solve(&grid, Mode::Unique, None).unique != Some(true) {
                        cells[cell] = digit;
                    }
                }
                Grid::from_cells(cells).expect("cells come from a valid grid")
            })
    }

    /// A puzzle cut from a random solved grid: `blanks` cells emptied, and,
    /// when `perturb` is set, one remaining given changed to another digit
    /// that clashes with no other given (so the puzzle is valid but may have
    /// no solution).
    pub(crate) fn puzzle(blanks: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Grid> {
        (
            solved_grid(),
            Just((0..81).collect::<Vec<usize>>()).prop_shuffle(),
            blanks,
            any::<bool>(),
            1u8..9,
        )
            .prop_map(|(mut cells, order, blanks, perturb, shift)| {
                for &cell in &order[..blanks] {
                    cells[cell] = 0;
                }
                if perturb {
                    let cell = order[blanks.min(80)];
                    let original = cells[cell];
                    if original != 0 {
                        for step in 0..8u8 {
                            cells[cell] = (original - 1 + shift + step) % 9 + 1;
                            if cells[cell] != original && Grid::from_cells(cells).is_ok() {
                                break;
                            }
                            cells[cell] = original;
                        }
                    }
                }
                Grid::from_cells(cells).expect("cells come from a valid grid")
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn first_solution_is_valid_and_keeps_givens(grid in puzzle(0..=64)) {
            let outcome = solve(&grid, Mode::First, None);
            // The naive solver is too slow to settle sparse unsolvable grids.
            let expected = (grid.givens() >= 30).then(|| reference::count_solutions(grid.cells(), 1));
            match outcome.status {
                Status::Solved => {
                    let solution = outcome.solution.expect("solved has a solution");
                    prop_assert!(solution.is_complete());
                    prop_assert!(solution.extends(&grid));
                    prop_assert!(expected.is_none_or(|n| n == 1));
                }
                Status::Unsolvable => prop_assert!(expected.is_none_or(|n| n == 0)),
                Status::Timeout => prop_assert!(false, "no deadline was set"),
            }
            prop_assert_eq!(outcome.unique, None);
            prop_assert_eq!(outcome.count, None);
        }

        #[test]
        fn count_agrees_with_the_naive_solver(grid in puzzle(20..=52), limit in 1u64..40) {
            let expected = reference::count_solutions(grid.cells(), limit.max(2));
            let outcome = solve(&grid, Mode::Count { limit }, None);
            prop_assert_eq!(outcome.count, Some(expected.min(limit)));
            if expected == 0 {
                prop_assert_eq!(outcome.status, Status::Unsolvable);
                prop_assert_eq!(outcome.unique, None);
            } else {
                prop_assert_eq!(outcome.status, Status::Solved);
                prop_assert_eq!(outcome.unique, Some(expected == 1));
                let solution = outcome.solution.expect("solved has a solution");
                prop_assert!(solution.is_complete() && solution.extends(&grid));
            }
        }

        #[test]
        fn unique_agrees_with_the_naive_solver(grid in puzzle(30..=56)) {
            let expected = reference::count_solutions(grid.cells(), 2);
            let outcome = solve(&grid, Mode::Unique, None);
            prop_assert_eq!(outcome.count, None);
            match expected {
                0 => prop_assert_eq!(outcome.status, Status::Unsolvable),
                n => {
                    prop_assert_eq!(outcome.status, Status::Solved);
                    prop_assert_eq!(outcome.unique, Some(n == 1));
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Without the clock, the same answer and work, and no time.
        #[test]
        fn untimed_answers_as_solve_does(grid in puzzle(0..=64), limit in 1u64..10) {
            for mode in [Mode::First, Mode::Unique, Mode::Count { limit }] {
                let untimed = solve_untimed(&grid, mode);
                let timed = solve(&grid, mode, None);
                prop_assert_eq!(untimed.elapsed, Duration::ZERO);
                prop_assert_eq!(untimed, Outcome { elapsed: Duration::ZERO, ..timed });
            }
        }
    }

    /// Cells in `0..=9`, a given in about one cell in four: repeated
    /// givens are common, and so are valid puzzles.
    fn any_cells() -> impl Strategy<Value = [u8; 81]> {
        proptest::collection::vec(prop_oneof![3 => Just(0u8), 1 => 1u8..=9], 81)
            .prop_map(|cells| std::array::from_fn(|i| cells[i]))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The board's setup fails exactly on repeated givens: what
        /// `solve_text` relies on to skip the separate check.
        #[test]
        fn the_board_setup_finds_exactly_the_repeats(cells in any_cells()) {
            prop_assert_eq!(Board::new(&cells).is_err(), Grid::from_cells(cells).is_err());
        }

        /// Solving the text answers as parsing and then solving does, with
        /// the same error for a bad puzzle.
        #[test]
        fn solve_text_answers_as_parse_then_solve(
            cells in prop_oneof![any_cells(), puzzle(30..=81).prop_map(|grid| *grid.cells())],
            limit in 1u64..4,
        ) {
            let text: String = cells.iter().map(|&c| char::from(b'0' + c)).collect();
            let pretty = format!("| {} |", text.replace('0', "."));
            for mode in [Mode::First, Mode::Unique, Mode::Count { limit }] {
                let parsed = Grid::parse(&text).map(|grid| solve_untimed(&grid, mode));
                prop_assert_eq!(&solve_text(&text, mode, None), &parsed);
                prop_assert_eq!(&solve_text(&pretty, mode, None), &parsed);
                let timed = solve_text(&text, mode, Some(Duration::from_secs(60)))
                    .map(|outcome| Outcome { elapsed: Duration::ZERO, ..outcome });
                prop_assert_eq!(&timed, &parsed);
            }
        }
    }

    #[test]
    fn solve_text_reports_shape_errors_as_parse_does() {
        for text in ["", "12x", &"1".repeat(82), &format!("{}é", ".".repeat(80))] {
            assert_eq!(
                solve_text(text, Mode::First, None).map(|_| ()),
                Grid::parse(text).map(|_| ()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_full_valid_grid_is_its_own_solution() {
        let cells: [u8; 81] = std::array::from_fn(|i| {
            let (r, c) = (i / 9, i % 9);
            ((r * 3 + r / 3 + c) % 9 + 1) as u8
        });
        let grid = Grid::from_cells(cells).unwrap();
        let outcome = solve(&grid, Mode::Unique, None);
        assert_eq!(outcome.status, Status::Solved);
        assert_eq!(outcome.solution, Some(grid));
        assert_eq!(outcome.unique, Some(true));
        assert_eq!(outcome.guesses, 0);
    }

    #[test]
    fn the_empty_grid_has_many_solutions() {
        let outcome = solve(&Grid::EMPTY, Mode::Count { limit: 500 }, None);
        assert_eq!(outcome.status, Status::Solved);
        assert_eq!(outcome.count, Some(500));
        assert_eq!(outcome.unique, Some(false));
        assert!(outcome.guesses > 0);
    }

    #[test]
    fn count_limit_one_still_knows_uniqueness() {
        let outcome = solve(&Grid::EMPTY, Mode::Count { limit: 1 }, None);
        assert_eq!(outcome.count, Some(1));
        assert_eq!(outcome.unique, Some(false));
    }

    #[test]
    fn an_expired_deadline_times_out() {
        let calls = std::cell::Cell::new(0);
        let expired = || {
            calls.set(calls.get() + 1);
            true
        };
        let outcome = solve_with(
            &Grid::EMPTY,
            Mode::Count { limit: u64::MAX },
            expired,
            Instant::now(),
        );
        assert_eq!(outcome.status, Status::Timeout);
        assert_eq!(outcome.solution, None);
        // The empty grid's first solutions come within the first guesses.
        assert!(outcome.count.is_some_and(|count| count >= 1), "{outcome:?}");
        assert_eq!(outcome.unique, None);
        assert_eq!(calls.get(), 1);
        assert_eq!(outcome.guesses, search::DEADLINE_CHECK_EVERY);
    }

    #[test]
    fn a_real_deadline_stops_an_endless_count() {
        let timeout = Duration::from_millis(30);
        let outcome = solve(&Grid::EMPTY, Mode::Count { limit: u64::MAX }, Some(timeout));
        assert_eq!(outcome.status, Status::Timeout);
        assert!(outcome.elapsed >= timeout);
        assert!(outcome.guesses > 0);
    }
}
