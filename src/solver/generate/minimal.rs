//! Random solution grids, and taking givens away from them while the
//! solution stays unique.
//!
//! # Removal
//!
//! The givens start as the whole grid and the orbits of the symmetry are
//! visited once, in a random order: an orbit goes when the puzzle without
//! it still has one solution. After one pass the puzzle is minimal, since a
//! given kept because its removal allowed a second solution still allows
//! one later, with fewer givens around it.
//!
//! The pass gives exactly what removing one orbit at a time would give,
//! with fewer solver runs: whether removing a run of the next orbits keeps
//! the solution unique is monotone in the run's length (removing more
//! only adds solutions), so the pass tries a run at once, doubles the run
//! after a success and halves it to find the first orbit that must stay
//! after a failure.

use rand::seq::SliceRandom;
use rand::{Rng, RngExt};

use crate::solver::search::{Board, Search};

/// Every cell of the grid, as a cell set.
pub(super) const ALL_CELLS: u128 = (1 << 81) - 1;

/// How many orbits the pass first tries to remove at once: the opening
/// runs of a full grid almost always keep the solution unique.
const FIRST_RUN: usize = 32;

/// A random solution grid, row by row, digits `1..=9`: the three diagonal
/// boxes filled at random (no two share a house; a filling that does not
/// complete is drawn again), completed by the solver, then moved by a random symmetry of
/// the Sudoku (rows within bands, bands, columns within stacks, stacks,
/// transposition).
pub(super) fn random_grid(rng: &mut impl Rng) -> [u8; 81] {
    loop {
        let mut cells = [0u8; 81];
        for corner in [0, 30, 60] {
            let mut digits: [u8; 9] = std::array::from_fn(|d| d as u8 + 1);
            digits.shuffle(rng);
            for (k, digit) in digits.into_iter().enumerate() {
                cells[corner + 9 * (k / 3) + k % 3] = digit;
            }
        }
        let Ok(mut board) = Board::new(&cells) else {
            continue; // unreachable: the diagonal boxes share no house
        };
        let mut search = Search::new(1, || false);
        search.run(&mut board);
        if let Some(solution) = search.first {
            return shuffle(&solution, rng);
        }
    }
}

/// `grid` under a random symmetry of the Sudoku.
fn shuffle(grid: &[u8; 81], rng: &mut impl Rng) -> [u8; 81] {
    let rows = lines(rng);
    let cols = lines(rng);
    let transpose = rng.random_bool(0.5);
    std::array::from_fn(|i| {
        let (r, c) = (rows[i / 9], cols[i % 9]);
        if transpose {
            grid[9 * c + r]
        } else {
            grid[9 * r + c]
        }
    })
}

/// A random order of the nine rows (or columns) that keeps bands (stacks)
/// together: the bands shuffled, then the rows within each.
fn lines(rng: &mut impl Rng) -> [usize; 9] {
    let mut bands = [0, 1, 2];
    bands.shuffle(rng);
    let mut lines = [0usize; 9];
    for (block, &from) in bands.iter().enumerate() {
        let mut inner = [0, 1, 2];
        inner.shuffle(rng);
        for (k, &i) in inner.iter().enumerate() {
            lines[3 * block + k] = 3 * from + i;
        }
    }
    lines
}

/// The puzzle of `solution` with the givens `keep` (bit `i` for cell `i`).
pub(super) fn puzzle_of(solution: &[u8; 81], keep: u128) -> [u8; 81] {
    std::array::from_fn(|i| if keep >> i & 1 == 1 { solution[i] } else { 0 })
}

/// Whether `solution` is the only solution of its givens `keep`.
pub(super) fn is_unique(solution: &[u8; 81], keep: u128) -> bool {
    let Ok(mut board) = Board::new(&puzzle_of(solution, keep)) else {
        return false; // unreachable: the givens come from a solution
    };
    let mut search = Search::new(2, || false);
    search.run(&mut board);
    search.found == 1
}

/// Whether `solution` stays the only solution of `keep` once `orbit` is
/// removed from it. For one cell this asks for a solution with another
/// digit there, which is cheaper than counting to two.
fn unique_without(solution: &[u8; 81], keep: u128, orbit: u128) -> bool {
    let rest = keep & !orbit;
    if orbit.count_ones() != 1 {
        return is_unique(solution, rest);
    }
    let cell = orbit.trailing_zeros() as usize;
    let Ok(mut board) = Board::new(&puzzle_of(solution, rest)) else {
        return false; // unreachable: the givens come from a solution
    };
    board.eliminate_at(cell, usize::from(solution[cell] - 1));
    let mut search = Search::new(1, || false);
    search.run(&mut board);
    search.found == 0
}

/// Solver runs spent by [`remove`], for the benchmarks' accounting.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Work {
    pub(super) checks: u64,
}

/// Removes orbits of `keep` in the order of `orbits` while `solution`
/// stays unique (see the module docs), never taking the count of givens
/// below `floor`. Returns the givens left; with a `floor` of 0 the result
/// is minimal for the orbits.
pub(super) fn remove(
    solution: &[u8; 81],
    mut keep: u128,
    orbits: &[u128],
    floor: u32,
    work: &mut Work,
) -> u128 {
    let mut check = |keep: u128, run: u128| {
        work.checks += 1;
        unique_without(solution, keep, run)
    };
    let mut at = 0;
    let mut run = FIRST_RUN;
    while at < orbits.len() {
        let len = run.min(orbits.len() - at);
        let removed = orbits[at..at + len].iter().fold(0, |m, &o| m | o);
        if (keep & !removed).count_ones() >= floor && check(keep, removed) {
            keep &= !removed;
            at += len;
            run *= 2;
            continue;
        }
        if len == 1 {
            at += 1; // this orbit stays
            continue;
        }
        // The longest prefix that keeps the solution unique is shorter
        // than `len`: find it by halving, then keep the orbit after it.
        let (mut good, mut bad) = (0, len);
        while bad - good > 1 {
            let mid = (good + bad) / 2;
            let removed = orbits[at..at + mid].iter().fold(0, |m, &o| m | o);
            if (keep & !removed).count_ones() >= floor && check(keep, removed) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        keep &= !orbits[at..at + good].iter().fold(0, |m, &o| m | o);
        at += good + 1;
        run = good.max(1);
    }
    keep
}

/// A random minimal-ish puzzle: the orbits visited in a random order.
pub(super) fn random_order(orbits: &[u128], rng: &mut impl Rng) -> Vec<u128> {
    let mut order = orbits.to_vec();
    order.shuffle(rng);
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::reference::count_solutions;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    #[test]
    fn random_grids_are_solutions() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..50 {
            let grid = random_grid(&mut rng);
            assert_eq!(count_solutions(&grid, 2), 1);
            assert!(crate::solver::Grid::from_cells(grid).is_ok());
        }
    }

    #[test]
    fn runs_remove_exactly_what_one_at_a_time_removes() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let orbits: Vec<u128> = (0..81).map(|i| 1u128 << i).collect();
        for _ in 0..20 {
            let solution = random_grid(&mut rng);
            let order = random_order(&orbits, &mut rng);
            let fast = remove(&solution, ALL_CELLS, &order, 0, &mut Work::default());
            let mut slow = ALL_CELLS;
            for &orbit in &order {
                if count_solutions(&puzzle_of(&solution, slow & !orbit), 2) == 1 {
                    slow &= !orbit;
                }
            }
            assert_eq!(fast, slow);
        }
    }
}
