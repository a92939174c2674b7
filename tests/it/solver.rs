//! Known answers for the solver core, over puzzles the generator makes
//! (one solution each, and minimal, so each given removed leaves several),
//! famous hard puzzles, and hand-made puzzles with no solution.

use std::time::Duration;

use crate::common::{FAMOUS, SEED, hard_puzzles};
use sudokud::solver::{Generated, Generator, Spec};
use sudokud::{Grid, Mode, Status, solve};

fn puzzles(lines: &[String]) -> Vec<Grid> {
    lines
        .iter()
        .map(|line| Grid::parse(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

/// The generator's first `n` puzzles with `spec`.
fn generated(spec: Spec, n: u64) -> Vec<Generated> {
    let generator = Generator::new(spec).expect("valid parameters");
    (0..n)
        .map(|i| generator.puzzle(i, || false).expect("never stopped"))
        .collect()
}

/// Every puzzle solves, in both modes, to a complete grid that keeps its
/// givens, and is reported unique.
fn assert_all_solved_and_unique(set: &str, grids: &[Grid], expected_len: usize) {
    assert_eq!(grids.len(), expected_len, "{set}: puzzle count");
    for (n, grid) in grids.iter().enumerate() {
        for mode in [Mode::First, Mode::Unique] {
            let outcome = solve(grid, mode, None);
            assert_eq!(outcome.status, Status::Solved, "{set} #{}: {grid}", n + 1);
            let solution = outcome.solution.expect("a solved outcome has a solution");
            assert!(solution.is_complete(), "{set} #{}", n + 1);
            assert!(solution.extends(grid), "{set} #{}", n + 1);
            if mode == Mode::Unique {
                assert_eq!(outcome.unique, Some(true), "{set} #{}: {grid}", n + 1);
            }
        }
    }
}

#[test]
fn generated_puzzles_all_solved_and_unique() {
    // Minimal puzzles, and puzzles in a band hard enough to need search.
    for (set, spec, n) in [
        ("minimal", Spec::default(), 1000),
        (
            "hard band",
            Spec {
                difficulty: Some((6.0, 8.5)),
                ..Spec::default()
            },
            100,
        ),
    ] {
        let made = generated(Spec { seed: SEED, ..spec }, n);
        let grids: Vec<Grid> = made.iter().map(|g| g.puzzle).collect();
        assert_all_solved_and_unique(set, &grids, n as usize);
        // The solver's one solution is the generator's.
        for g in &made {
            let outcome = solve(&g.puzzle, Mode::First, None);
            assert_eq!(outcome.solution.as_ref(), Some(&g.solution), "{}", g.puzzle);
        }
    }
}

#[test]
fn famous_hard_puzzles_all_solved_and_unique() {
    // The famous puzzles, then copies of them with their digits renamed.
    assert_all_solved_and_unique("famous", &puzzles(&hard_puzzles(375)), 375);
}

#[test]
fn puzzles_with_a_given_removed_all_reported_not_unique() {
    // Each given of a minimal puzzle, removed in turn: more than one
    // solution every time.
    let mut grids = Vec::new();
    for g in generated(
        Spec {
            seed: SEED,
            ..Spec::default()
        },
        400,
    ) {
        for cell in 0..81 {
            if g.puzzle.cells()[cell] != 0 {
                let mut cells = *g.puzzle.cells();
                cells[cell] = 0;
                grids.push(Grid::from_cells(cells).expect("fewer givens repeat nothing"));
            }
        }
    }
    assert!(grids.len() >= 400 * 17, "{} puzzles", grids.len());
    for (n, grid) in grids.iter().enumerate() {
        let outcome = solve(grid, Mode::Unique, None);
        assert_eq!(outcome.status, Status::Solved, "several #{}", n + 1);
        assert_eq!(outcome.unique, Some(false), "several #{}: {grid}", n + 1);
        let solution = outcome.solution.expect("a solved outcome has a solution");
        assert!(solution.is_complete() && solution.extends(grid));
    }
    // Counting agrees: at least two solutions each (sampled: counting is
    // slower than deciding uniqueness).
    for grid in grids.iter().step_by(97) {
        let outcome = solve(grid, Mode::Count { limit: 1000 }, None);
        assert!(outcome.count.is_some_and(|c| c >= 2), "{grid}");
        assert_eq!(outcome.unique, Some(false));
    }
}

#[test]
fn famous_puzzles_solve() {
    for (name, puzzle) in FAMOUS {
        let grid = Grid::parse(puzzle).expect("a valid puzzle");
        let outcome = solve(&grid, Mode::First, None);
        assert_eq!(outcome.status, Status::Solved, "{name}: {grid}");
        assert!(
            outcome
                .solution
                .is_some_and(|s| s.is_complete() && s.extends(&grid))
        );
        // Hard for the solver: propagation alone does not decide them.
        assert!(outcome.guesses > 0, "{name}");
    }
}

#[test]
fn unsolvable_with_an_immediately_empty_cell() {
    // Row 1 holds 1-8 and column 9 holds a 9 lower down: the top-right cell
    // has no candidate left, though no given repeats.
    let text = format!("12345678.{}9{}", ".".repeat(8), ".".repeat(63));
    let grid = Grid::parse(&text).expect("the givens do not repeat");
    for mode in [Mode::First, Mode::Unique, Mode::Count { limit: 10 }] {
        let outcome = solve(&grid, mode, None);
        assert_eq!(outcome.status, Status::Unsolvable);
        assert_eq!(outcome.solution, None);
        assert_eq!(outcome.unique, None);
        assert_eq!(outcome.guesses, 0, "propagation alone decides it");
    }
    let counted = solve(&grid, Mode::Count { limit: 10 }, None);
    assert_eq!(counted.count, Some(0));
}

#[test]
fn unsolvable_found_only_deep_in_the_search() {
    // Platinum Blonde has exactly one solution; one more given that
    // disagrees with it (a 3 at row 1, column 1), yet repeats nothing,
    // leaves a puzzle with none, and nothing short of search shows it.
    let (name, puzzle) = FAMOUS[3];
    assert_eq!(name, "Platinum Blonde");
    let original = Grid::parse(puzzle).unwrap();
    let reference = solve(&original, Mode::Unique, None);
    assert_eq!(reference.unique, Some(true));
    let solution = reference.solution.unwrap();
    let (cell, digit) = (0, 3);
    assert_eq!(original.cells()[cell], 0);
    assert_ne!(solution.cells()[cell], digit);

    let mut cells = *original.cells();
    cells[cell] = digit;
    let grid = Grid::from_cells(cells).expect("the extra given repeats nothing");
    for mode in [Mode::First, Mode::Unique, Mode::Count { limit: 5 }] {
        let outcome = solve(&grid, mode, None);
        assert_eq!(outcome.status, Status::Unsolvable, "{mode:?}");
        assert!(
            outcome.guesses >= 50,
            "{mode:?}: {} guesses",
            outcome.guesses
        );
    }
}

#[test]
fn an_endless_count_times_out_at_its_deadline() {
    let timeout = Duration::from_millis(50);
    let outcome = solve(&Grid::EMPTY, Mode::Count { limit: u64::MAX }, Some(timeout));
    assert_eq!(outcome.status, Status::Timeout);
    assert!(outcome.elapsed >= timeout);
    assert_eq!(outcome.solution, None);
    // The solutions found before the deadline: a lower bound.
    assert!(outcome.count.is_some_and(|count| count >= 1), "{outcome:?}");
}

#[test]
fn a_generous_deadline_does_not_change_answers() {
    for grid in puzzles(&hard_puzzles(95)) {
        let timed = solve(&grid, Mode::Unique, Some(Duration::from_secs(3600)));
        let untimed = solve(&grid, Mode::Unique, None);
        assert_eq!(timed.status, Status::Solved);
        assert_eq!(timed.solution, untimed.solution);
        assert_eq!(timed.guesses, untimed.guesses);
    }
}
