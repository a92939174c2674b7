//! Search by trials: when the ladder stalls, a candidate whose trial ends
//! in a contradiction is removed (see the module docs of the rater).

use super::state::{Found, State, bits};
use super::{Budget, Exhausted};
use crate::solver::search::{Board, Contradiction};

/// A board and its transpose, propagated side by side, so that a trial
/// treats rows and columns alike: a contradiction on either is one.
#[derive(Clone, Copy)]
struct Twin {
    rows: Board,
    cols: Board,
}

/// The cell at row `c`, column `r` for the cell at row `r`, column `c`.
fn transposed(cell: usize) -> usize {
    cell % 9 * 9 + cell / 9
}

impl Twin {
    fn new(possible: &[u16; 81]) -> Result<Twin, Contradiction> {
        let flipped = std::array::from_fn(|cell| possible[transposed(cell)]);
        let mut twin = Twin {
            rows: Board::from_candidates(possible),
            cols: Board::from_candidates(&flipped),
        };
        twin.rows.propagate()?;
        twin.cols.propagate()?;
        Ok(twin)
    }

    /// The digits both boards still allow at `cell`.
    fn candidates(&self, cell: usize) -> u16 {
        self.rows.candidates_at(cell) & self.cols.candidates_at(transposed(cell))
    }

    /// A copy with digit `d + 1` at `cell`, propagated: one unit of work.
    fn assume(
        &self,
        cell: usize,
        d: usize,
        budget: &mut Budget,
    ) -> Result<Result<Twin, Contradiction>, Exhausted> {
        if !budget.spend() {
            return Err(Exhausted);
        }
        Ok(self.assume_free(cell, d))
    }

    fn assume_free(&self, cell: usize, d: usize) -> Result<Twin, Contradiction> {
        if self.candidates(cell) & (1 << d) == 0 {
            return Err(Contradiction);
        }
        let mut twin = *self;
        twin.rows.place_at(cell, d);
        twin.rows.propagate()?;
        twin.cols.place_at(transposed(cell), d);
        twin.cols.propagate()?;
        Ok(twin)
    }

    fn eliminate(&mut self, cell: usize, d: usize) -> Result<(), Contradiction> {
        self.rows.eliminate_at(cell, d);
        self.cols.eliminate_at(transposed(cell), d);
        self.rows.propagate()?;
        self.cols.propagate()
    }

    /// Removes every candidate whose trial fails, to a fixpoint. Whether
    /// this ends in a contradiction does not depend on the order of the
    /// trials: removing a candidate never lets a failing trial succeed.
    fn close_by_trials(
        &mut self,
        budget: &mut Budget,
    ) -> Result<Result<(), Contradiction>, Exhausted> {
        loop {
            let mut changed = false;
            for cell in 0..81 {
                let cand = self.candidates(cell);
                if cand.count_ones() < 2 {
                    continue;
                }
                for d in bits(cand) {
                    if self.candidates(cell) & (1 << d) != 0
                        && self.assume(cell, d, budget)?.is_err()
                    {
                        if self.eliminate(cell, d).is_err() {
                            return Ok(Err(Contradiction));
                        }
                        changed = true;
                    }
                }
            }
            if !changed {
                return Ok(Ok(()));
            }
        }
    }
}

/// What a search step needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Depth {
    /// Trials that propagate singles and locked candidates.
    One,
    /// Trials within trials; the number is how many candidates the step
    /// removed (the fewer, the scarcer the proofs, the harder the step).
    Two(u16),
}

/// One search step on a stalled state: every candidate whose trial fails
/// (depth 1) is removed; if none fails, every candidate whose trial fails
/// once trials are run inside it (depth 2). Returns the depth, or `None`
/// when neither removes anything, and `Exhausted` when the budget runs
/// out first (one unit per trial).
pub(super) fn search(
    state: &State,
    found: &mut Found,
    budget: &mut Budget,
) -> Result<Option<Depth>, Exhausted> {
    let Ok(twin) = Twin::new(&state.possible()) else {
        return Ok(None);
    };
    for cell in 0..81 {
        for d in bits(state.cand[cell]) {
            if twin.assume(cell, d, budget)?.is_err() {
                found.eliminate(state, cell, 1 << d);
            }
        }
    }
    if found.any {
        return Ok(Some(Depth::One));
    }
    let mut removed = 0u16;
    for cell in 0..81 {
        for d in bits(state.cand[cell]) {
            // Depth 1 found nothing, so every trial here propagates.
            let Ok(mut inner) = twin.assume(cell, d, budget)? else {
                continue;
            };
            if inner.close_by_trials(budget)?.is_err() {
                removed += 1;
                found.eliminate(state, cell, 1 << d);
            }
        }
    }
    Ok(found.any.then_some(Depth::Two(removed)))
}

/// Lowest search score, in tenths: above every technique of the ladder
/// and SE's nested chains.
pub(super) const SEARCH_BASE: u16 = 110;
/// Search scores, in tenths: the base of each depth, and the rise per
/// further search step, up to [`SEARCH_STEPS_COUNTED`] steps.
pub(super) const SEARCH_DEPTH_BASE: [u16; 3] = [SEARCH_BASE, 115, 120];
/// The hardest search step ([`score_tenths`]): depth 2, with a step that
/// removed one candidate.
pub(super) const SEARCH_TOP: u16 = SEARCH_DEPTH_BASE[1] + 18;
const SEARCH_STEP_TENTHS: u16 = 1;
const SEARCH_STEPS_COUNTED: u16 = 5;

/// The score of a search step in tenths: by the depth reached, the search
/// steps taken and the fewest candidates a depth-2 step removed. At depth
/// 1, `11.0 + 0.1 * (search steps - 1)`, at most 11.4; at depth 2, from
/// 11.5 to 13.3 by how few candidates the scarcest deep step could remove
/// (`11.5 + 0.1 * (18 - floor(2 * log2(removed)))`); beyond, 12.0.
pub(super) fn score_tenths(depth: u8, search_steps: u16, deep_removed: u16) -> u16 {
    let rise = |n: u16| SEARCH_STEP_TENTHS * n.saturating_sub(1).min(SEARCH_STEPS_COUNTED - 1);
    match depth {
        0 | 1 => SEARCH_DEPTH_BASE[0] + rise(search_steps),
        2 => {
            let removed = u32::from(deep_removed.max(1));
            let halves = (removed * removed).ilog2().min(18) as u16;
            SEARCH_TOP - halves
        }
        _ => SEARCH_DEPTH_BASE[2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every search step rates from [`SEARCH_BASE`] to [`SEARCH_TOP`],
    /// both reached: the search's scores ([`super::super::Technique::scores`]).
    #[test]
    fn search_steps_rate_from_the_base_to_the_top() {
        let mut scores = Vec::new();
        for depth in 0..=4 {
            for steps in 0..=12 {
                for removed in [0, 1, 2, 3, 5, 8, 40, 200, 700, u16::MAX] {
                    scores.push(score_tenths(depth, steps, removed));
                }
            }
        }
        assert_eq!(scores.iter().min(), Some(&SEARCH_BASE));
        assert_eq!(scores.iter().max(), Some(&SEARCH_TOP));
    }
}
