//! The neighbourhood of a minimal puzzle, for the search that reaches
//! difficulty bands random puzzles seldom fall in.
//!
//! A neighbour keeps the solution grid and changes a few givens: one or
//! two orbits of givens go, one or two orbits that were blank come back
//! (never one that just went), more come back while the solution is not
//! unique (each from the cells where another solution differs, so it rules
//! that solution out), and the removal pass of [`super::minimal`] makes it
//! minimal again. The orbits that came back are tried last by that pass,
//! so the change mostly survives it. Every step draws from the caller's
//! random stream and nothing else.
//!
//! The orbits that come back may be limited to some cells (a climb from a
//! planted grid, [`super::plant`], brings back none of the pattern's three
//! digits): another solution that only the other orbits rule out is ruled
//! out by one of those.

use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, RngExt};

use super::minimal;

/// Draws of a neighbour that may come back to the puzzle it started from
/// before [`neighbour`] gives up.
const DRAWS: usize = 8;

/// A minimal puzzle near the minimal puzzle `keep` of `solution` (its
/// givens, bit `i` for cell `i`), made of whole `orbits`: unique, minimal
/// for the orbits, and other than `keep` unless [`DRAWS`] draws in a row
/// all came back to it. The orbits that come back lie within `addable`,
/// unless only others rule out another solution.
pub(super) fn neighbour(
    solution: &[u8; 81],
    keep: u128,
    orbits: &[u128],
    addable: u128,
    rng: &mut impl Rng,
) -> u128 {
    let mut next = keep;
    for _ in 0..DRAWS {
        next = draw(solution, keep, orbits, addable, rng);
        if next != keep {
            break;
        }
    }
    next
}

/// One draw of [`neighbour`].
fn draw(
    solution: &[u8; 81],
    keep: u128,
    orbits: &[u128],
    addable: u128,
    rng: &mut impl Rng,
) -> u128 {
    let kept: Vec<u128> = orbits.iter().copied().filter(|&o| o & keep != 0).collect();
    let blank: Vec<u128> = orbits
        .iter()
        .copied()
        .filter(|&o| o & keep == 0 && o & !addable == 0)
        .collect();
    let (out, back) = match rng.random_range(0..4) {
        0 => (1, 1),
        1 => (1, 2),
        2 => (2, 1),
        _ => (2, 2),
    };
    let mut next = keep;
    for &orbit in kept.sample(rng, out) {
        next &= !orbit;
    }
    let mut added: Vec<u128> = blank.sample(rng, back).copied().collect();
    for &orbit in &added {
        next |= orbit;
    }
    // Each orbit added meets the cells another solution differs in, so
    // it rules that solution out: at most every blank orbit is added.
    while let Some(differs) = minimal::other_solution(solution, next) {
        let meets = |&&o: &&u128| o & differs != 0 && o & next == 0;
        let mut choices: Vec<&u128> = blank.iter().filter(meets).collect();
        if choices.is_empty() {
            choices = orbits.iter().filter(meets).collect();
        }
        let Some(&&orbit) = choices.choose(rng) else {
            // Unreachable: another solution differs in a blank cell, and
            // were none blank the puzzle would be the whole grid.
            return keep;
        };
        next |= orbit;
        added.push(orbit);
    }
    let mut order: Vec<u128> = kept.iter().copied().filter(|&o| o & next != 0).collect();
    let still_kept = order.len();
    order.extend(added);
    order[..still_kept].shuffle(rng);
    minimal::remove(solution, next, &order, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::generate::Symmetry;
    use crate::solver::reference::count_solutions;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    #[test]
    fn neighbours_are_unique_minimal_and_symmetric() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for symmetry in [Symmetry::None, Symmetry::Central, Symmetry::Full] {
            let orbits = symmetry.orbits();
            let solution = minimal::random_grid(&mut rng);
            let order = minimal::random_order(&orbits, &mut rng);
            let mut keep = minimal::remove(&solution, minimal::ALL_CELLS, &order, 0);
            for _ in 0..3 {
                let next = neighbour(&solution, keep, &orbits, u128::MAX, &mut rng);
                assert!(symmetry.holds(next));
                assert_eq!(count_solutions(&minimal::puzzle_of(&solution, next), 2), 1);
                for &orbit in orbits.iter().filter(|&&o| o & next != 0) {
                    let fewer = minimal::puzzle_of(&solution, next & !orbit);
                    assert!(count_solutions(&fewer, 2) > 1, "{symmetry:?}: not minimal");
                }
                keep = next;
            }
        }
    }
}
