//! Known answers for the solver core, over the public benchmark sets in
//! `tests/data` and hand-made puzzles with no solution.

use std::time::Duration;

use sudokud::{Grid, Mode, Status, solve};

fn puzzles(text: &str) -> Vec<Grid> {
    text.lines()
        .map(|line| Grid::parse(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

/// Every puzzle solves, in both modes, to a complete grid that keeps its
/// givens, and is reported unique.
fn assert_all_solved_and_unique(set: &str, text: &str, expected_len: usize) {
    let grids = puzzles(text);
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
fn magictour_top1465_all_solved_and_unique() {
    assert_all_solved_and_unique(
        "top1465",
        include_str!("data/puzzles3_magictour_top1465.txt"),
        1465,
    );
}

#[test]
fn forum_hardest_1106_all_solved_and_unique() {
    assert_all_solved_and_unique(
        "hardest_1106",
        include_str!("data/puzzles6_forum_hardest_1106.txt"),
        375,
    );
}

#[test]
fn serg_benchmark_all_reported_not_unique() {
    let grids = puzzles(include_str!("data/puzzles7_serg_benchmark.txt"));
    assert_eq!(grids.len(), 10_000);
    for (n, grid) in grids.iter().enumerate() {
        let outcome = solve(grid, Mode::Unique, None);
        assert_eq!(outcome.status, Status::Solved, "serg #{}", n + 1);
        assert_eq!(outcome.unique, Some(false), "serg #{}: {grid}", n + 1);
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
fn norvig_sets_solve() {
    for (set, text) in [
        ("easy50", include_str!("data/norvig_easy50.txt")),
        ("top95", include_str!("data/norvig_top95.txt")),
        ("hardest", include_str!("data/norvig_hardest.txt")),
    ] {
        for grid in puzzles(text) {
            let outcome = solve(&grid, Mode::First, None);
            assert_eq!(outcome.status, Status::Solved, "{set}: {grid}");
            assert!(
                outcome
                    .solution
                    .is_some_and(|s| s.is_complete() && s.extends(&grid))
            );
        }
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
    // Puzzle 5 of top1465 has exactly one solution; one more given that
    // disagrees with it (a 9 at row 2, column 7), yet repeats nothing,
    // leaves a puzzle with none, and nothing short of search shows it.
    let original = Grid::parse(
        "5..7..6....38...........2..62.4............917............35.8.4.....1......9....",
    )
    .unwrap();
    let reference = solve(&original, Mode::Unique, None);
    assert_eq!(reference.unique, Some(true));
    let solution = reference.solution.unwrap();
    let (cell, digit) = (9 + 6, 9);
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
    assert_eq!(outcome.count, None);
}

#[test]
fn a_generous_deadline_does_not_change_answers() {
    for grid in puzzles(include_str!("data/norvig_top95.txt")) {
        let timed = solve(&grid, Mode::Unique, Some(Duration::from_secs(3600)));
        let untimed = solve(&grid, Mode::Unique, None);
        assert_eq!(timed.status, Status::Solved);
        assert_eq!(timed.solution, untimed.solution);
        assert_eq!(timed.guesses, untimed.guesses);
    }
}
