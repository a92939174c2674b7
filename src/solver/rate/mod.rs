//! Difficulty by human techniques: [`rate`] solves a puzzle the way a person
//! would, one technique at a time, and reports the hardest it needed.
//!
//! # The ladder
//!
//! The rater keeps every cell's candidates and, at each step, applies the
//! easiest [`Technique`] that makes progress, then starts again from the
//! bottom of the ladder. A step applies its technique everywhere it applies
//! in the state the step starts from (all hidden singles at once, every
//! X-wing at once, ...), so the steps, like the rating, depend only on the
//! puzzle and not on the order in which cells happen to be scanned: a puzzle
//! and any of its symmetric copies get the same [`Difficulty`].
//!
//! Every technique is a sound deduction for *every* solution of the puzzle
//! (no uniqueness arguments), so a step never removes the true digit of a
//! cell; debug builds check each step against the solution.
//!
//! # Search
//!
//! When no technique of the ladder applies, the rater tries candidates: a
//! *trial* puts a digit in a cell and propagates singles and locked
//! candidates (the solver's own propagation, run on the grid and on its
//! transpose so that rows and columns count alike); a trial that ends in a
//! contradiction removes that candidate. One search step tries every
//! candidate of the stalled state. If that removes nothing, a deeper step
//! runs trials inside each trial, to a fixpoint, before calling it a
//! contradiction. The search depth and the number of search steps order the
//! puzzles above the ladder (see [`Technique::Search`]).

mod chains;
mod locked;
mod singles;
mod state;
mod subsets;
mod trial;
mod wings;

use super::{Grid, Mode, Status, solve};
use chains::x_chain;
use locked::{claiming, pointing};
use singles::{full_house, hidden_single, naked_single};
pub(crate) use state::Found;
use state::{Index, State};
use subsets::{fish, hidden_subset, naked_subset};
use trial::{Depth, search};
use wings::{xy_wing, xyz_wing};

/// A solving technique, from the easiest to the hardest. The order is the
/// order of the ladder, and [`Technique::score`] rises along it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Technique {
    /// The last empty cell of a row, column or box.
    FullHouse,
    /// A digit with one place left in a box.
    HiddenSingleBox,
    /// A digit with one place left in a row or column.
    HiddenSingleLine,
    /// A cell with one candidate left.
    NakedSingle,
    /// A digit confined to one row or column within a box leaves the rest
    /// of that row or column.
    Pointing,
    /// A digit confined to one box within a row or column leaves the rest
    /// of that box.
    Claiming,
    /// Two cells of a house with the same two candidates.
    NakedPair,
    /// A digit in two rows confined to two columns, or the transpose.
    XWing,
    /// Two digits with the same two places in a house.
    HiddenPair,
    NakedTriple,
    /// The X-wing with three rows and three columns.
    Swordfish,
    HiddenTriple,
    /// A pivot `{a,b}` seeing pincers `{a,c}` and `{b,c}`: `c` leaves every
    /// cell that sees both pincers.
    XyWing,
    /// A pivot `{a,b,c}` seeing pincers `{a,c}` and `{b,c}`: `c` leaves
    /// every cell that sees all three.
    XyzWing,
    NakedQuad,
    /// The X-wing with four rows and four columns.
    Jellyfish,
    HiddenQuad,
    /// A single-digit chain of alternating strong links (a house with two
    /// places for the digit) and weak links (cells that see each other):
    /// a cell that sees both ends loses the digit. Covers simple colouring
    /// (colour wrap and colour trap), skyscrapers, kites and turbot fish.
    XChain,
    /// Trial and error (see the module docs): scored by depth and steps.
    Search,
}

impl Technique {
    /// Every technique, in ladder order.
    pub const ALL: [Technique; 19] = [
        Technique::FullHouse,
        Technique::HiddenSingleBox,
        Technique::HiddenSingleLine,
        Technique::NakedSingle,
        Technique::Pointing,
        Technique::Claiming,
        Technique::NakedPair,
        Technique::XWing,
        Technique::HiddenPair,
        Technique::NakedTriple,
        Technique::Swordfish,
        Technique::HiddenTriple,
        Technique::XyWing,
        Technique::XyzWing,
        Technique::NakedQuad,
        Technique::Jellyfish,
        Technique::HiddenQuad,
        Technique::XChain,
        Technique::Search,
    ];

    /// The technique's name as the protocol writes it.
    pub fn name(self) -> &'static str {
        match self {
            Technique::FullHouse => "full house",
            Technique::HiddenSingleBox => "hidden single (box)",
            Technique::HiddenSingleLine => "hidden single (line)",
            Technique::NakedSingle => "naked single",
            Technique::Pointing => "pointing",
            Technique::Claiming => "claiming",
            Technique::NakedPair => "naked pair",
            Technique::XWing => "x-wing",
            Technique::HiddenPair => "hidden pair",
            Technique::NakedTriple => "naked triple",
            Technique::Swordfish => "swordfish",
            Technique::HiddenTriple => "hidden triple",
            Technique::XyWing => "xy-wing",
            Technique::XyzWing => "xyz-wing",
            Technique::NakedQuad => "naked quad",
            Technique::Jellyfish => "jellyfish",
            Technique::HiddenQuad => "hidden quad",
            Technique::XChain => "x-chain",
            Technique::Search => "search",
        }
    }

    /// The technique's score in tenths (Sudoku Explainer's values for the
    /// same techniques); for [`Technique::Search`], its lowest score.
    fn tenths(self) -> u16 {
        match self {
            Technique::FullHouse => 10,
            Technique::HiddenSingleBox => 12,
            Technique::HiddenSingleLine => 15,
            Technique::NakedSingle => 23,
            Technique::Pointing => 26,
            Technique::Claiming => 28,
            Technique::NakedPair => 30,
            Technique::XWing => 32,
            Technique::HiddenPair => 34,
            Technique::NakedTriple => 36,
            Technique::Swordfish => 38,
            Technique::HiddenTriple => 40,
            Technique::XyWing => 42,
            Technique::XyzWing => 44,
            Technique::NakedQuad => 50,
            Technique::Jellyfish => 52,
            Technique::HiddenQuad => 54,
            Technique::XChain => 66,
            Technique::Search => SEARCH_BASE,
        }
    }

    /// The score a puzzle gets when this is the hardest technique it needs;
    /// for [`Technique::Search`] the lowest search score (see
    /// [`Difficulty::score`]). Strictly rising along [`Technique::ALL`].
    pub fn score(self) -> f64 {
        f64::from(self.tenths()) / 10.0
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Lowest search score, in tenths: above every technique of the ladder.
const SEARCH_BASE: u16 = 70;
/// Search scores, in tenths: the base of each depth, and the rise per
/// further search step, up to [`SEARCH_STEPS_COUNTED`] steps.
const SEARCH_DEPTH_BASE: [u16; 3] = [SEARCH_BASE, 90, 110];
const SEARCH_STEP_TENTHS: u16 = 2;
const SEARCH_STEPS_COUNTED: u16 = 10;

/// How hard a puzzle is for a person, from [`rate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difficulty {
    /// The hardest technique the puzzle needed.
    pub technique: Technique,
    /// Steps taken: each applies one technique everywhere it applies.
    pub steps: u32,
    /// For [`Technique::Search`]: how deep the trials had to go (1: a
    /// trial propagates singles and locked candidates; 2: trials within
    /// trials; 3: deeper still, where the rater stops and fills in the
    /// solution). 0 when the ladder sufficed.
    pub search_depth: u8,
    score_tenths: u16,
    counts: [u32; Technique::ALL.len()],
}

impl Difficulty {
    /// The score, with one decimal: [`Technique::score`] of the hardest
    /// technique. For search, by the deepest trials needed: at depth 1,
    /// `7.0 + 0.2 * (search steps - 1)`, at most 8.8; at depth 2, from
    /// 9.0 to 10.8 by how few candidates the scarcest deep step could
    /// remove (`9.0 + 0.1 * (18 - floor(2 * log2(removed)))`, so one
    /// removal rates 10.8 and 512 or more rate 9.0); beyond depth 2,
    /// `11.0`. The score
    /// never falls as the technique rises.
    pub fn score(&self) -> f64 {
        f64::from(self.score_tenths) / 10.0
    }

    /// How many steps used `technique`.
    pub fn count(&self, technique: Technique) -> u32 {
        self.counts[technique.index()]
    }

    /// The techniques used, in ladder order, with their step counts.
    pub fn counts(&self) -> impl Iterator<Item = (Technique, u32)> + '_ {
        Technique::ALL
            .iter()
            .map(|&t| (t, self.counts[t.index()]))
            .filter(|&(_, n)| n > 0)
    }
}

/// Why a puzzle cannot be rated: a rating describes the one way to its one
/// solution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    #[error("puzzle has no solution")]
    NoSolution,
    #[error("puzzle has more than one solution")]
    MultipleSolutions,
}

/// Rates `grid` by the hardest human technique it needs (see the module
/// docs). Needs a puzzle with exactly one solution. The same puzzle under
/// any symmetry (rows, columns, bands, stacks, transposition, digits) gets
/// the same [`Difficulty`].
pub fn rate(grid: &Grid) -> Result<Difficulty, RateError> {
    rate_traced(grid, |_, _| {})
}

/// [`rate`], calling `step` with each step's technique and deductions
/// before they are applied.
pub(crate) fn rate_traced(
    grid: &Grid,
    mut step: impl FnMut(Technique, &Found),
) -> Result<Difficulty, RateError> {
    let outcome = solve(grid, Mode::Unique, None);
    let solution = match (outcome.status, outcome.unique, outcome.solution) {
        (Status::Solved, Some(true), Some(solution)) => solution,
        (Status::Solved, ..) => return Err(RateError::MultipleSolutions),
        _ => return Err(RateError::NoSolution),
    };
    let solution = solution.cells();
    let mut state = State::new(grid);
    let mut found = Found::default();
    let mut counts = [0u32; Technique::ALL.len()];
    let mut hardest = None;
    // Search steps taken, and the fewest candidates a depth-2 step removed.
    let mut search_steps = 0u16;
    let mut deep_removed = u16::MAX;
    let mut depth = 0u8;
    while state.open > 0 {
        found.clear();
        let index = Index::new(&state);
        let technique = match ladder(&state, &index, &mut found) {
            Some(technique) => technique,
            None => {
                match search(&state, &mut found) {
                    Some(Depth::One) => depth = depth.max(1),
                    Some(Depth::Two(removed)) => {
                        depth = depth.max(2);
                        deep_removed = deep_removed.min(removed);
                    }
                    None => {
                        // Deeper than the rater goes: finish with the
                        // solution.
                        for (cell, &digit) in solution.iter().enumerate() {
                            if state.value[cell] == 0 {
                                found.place(cell, digit);
                            }
                        }
                        depth = 3;
                    }
                }
                search_steps += 1;
                Technique::Search
            }
        };
        debug_assert!(found.any);
        debug_assert!(found.is_sound(solution), "{technique:?} is unsound");
        step(technique, &found);
        if state.apply(&found).is_err() || !found.any {
            // Unreachable with sound techniques on a puzzle with one
            // solution; end with the solution rather than loop.
            debug_assert!(false, "{technique:?} led to a contradiction");
            break;
        }
        counts[technique.index()] += 1;
        hardest = hardest.max(Some(technique));
    }
    let technique = hardest.unwrap_or(Technique::FullHouse);
    Ok(Difficulty {
        technique,
        steps: counts.iter().sum(),
        search_depth: depth,
        score_tenths: score_tenths(technique, depth, search_steps, deep_removed),
        counts,
    })
}

/// The score in tenths (see [`Difficulty::score`]): the hardest
/// technique's, or for search, by the depth reached, the search steps
/// taken and the fewest candidates a depth-2 step removed.
fn score_tenths(technique: Technique, depth: u8, search_steps: u16, deep_removed: u16) -> u16 {
    let rise = |n: u16| SEARCH_STEP_TENTHS * n.saturating_sub(1).min(SEARCH_STEPS_COUNTED - 1);
    match depth {
        0 => technique.tenths(),
        1 => SEARCH_DEPTH_BASE[0] + rise(search_steps),
        // 0.1 less per half power of two removed: 1 removal rates 10.8,
        // 2 rate 10.6, 128 rate 9.4, 512 or more rate 9.0.
        2 => {
            let removed = u32::from(deep_removed.max(1));
            let halves = (removed * removed).ilog2().min(18) as u16;
            SEARCH_DEPTH_BASE[1] + 18 - halves
        }
        _ => SEARCH_DEPTH_BASE[2],
    }
}

/// Applies the easiest technique of the ladder that makes progress.
fn ladder(state: &State, index: &Index, found: &mut Found) -> Option<Technique> {
    type Rung = fn(&State, &Index, &mut Found);
    const RUNGS: [(Technique, Rung); 18] = [
        (Technique::FullHouse, full_house),
        (Technique::HiddenSingleBox, |s, i, f| {
            hidden_single(s, i, f, 18..27)
        }),
        (Technique::HiddenSingleLine, |s, i, f| {
            hidden_single(s, i, f, 0..18)
        }),
        (Technique::NakedSingle, naked_single),
        (Technique::Pointing, pointing),
        (Technique::Claiming, claiming),
        (Technique::NakedPair, |s, i, f| naked_subset(s, i, f, 2)),
        (Technique::XWing, |s, i, f| fish(s, i, f, 2)),
        (Technique::HiddenPair, |s, i, f| hidden_subset(s, i, f, 2)),
        (Technique::NakedTriple, |s, i, f| naked_subset(s, i, f, 3)),
        (Technique::Swordfish, |s, i, f| fish(s, i, f, 3)),
        (Technique::HiddenTriple, |s, i, f| hidden_subset(s, i, f, 3)),
        (Technique::XyWing, xy_wing),
        (Technique::XyzWing, xyz_wing),
        (Technique::NakedQuad, |s, i, f| naked_subset(s, i, f, 4)),
        (Technique::Jellyfish, |s, i, f| fish(s, i, f, 4)),
        (Technique::HiddenQuad, |s, i, f| hidden_subset(s, i, f, 4)),
        (Technique::XChain, x_chain),
    ];
    for (technique, rung) in RUNGS {
        rung(state, index, found);
        if found.any {
            return Some(technique);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::tests::{symmetry, unique_puzzle};
    use proptest::prelude::*;

    /// Hard puzzles (scores 6.0 to 8.5: chains or search): the
    /// generator's, with a fixed seed.
    fn hard_puzzles() -> Vec<Grid> {
        let generator = crate::solver::Generator::new(crate::solver::Spec {
            seed: 95,
            difficulty: Some((6.0, 8.5)),
            ..crate::solver::Spec::default()
        })
        .unwrap();
        (0..24)
            .map(|i| generator.puzzle(i, || false).unwrap().puzzle)
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// No step places a wrong digit or removes the right one.
        #[test]
        fn every_deduction_is_sound(grid in unique_puzzle()) {
            let solution = solve(&grid, Mode::Unique, None).solution.unwrap();
            let mut steps = 0;
            let d = rate_traced(&grid, |technique, found| {
                steps += 1;
                assert!(found.is_sound(solution.cells()), "{technique:?} on {grid}");
            })
            .unwrap();
            prop_assert_eq!(d.steps, steps);
            prop_assert_eq!(d.counts().map(|(_, n)| n).sum::<u32>(), steps);
        }

        /// A symmetric copy rates exactly alike: technique, score, steps
        /// and the count of every technique.
        #[test]
        fn symmetric_copies_rate_alike(grid in unique_puzzle(), sym in symmetry()) {
            let copy = Grid::from_cells(sym.apply(grid.cells())).unwrap();
            prop_assert_eq!(rate(&grid).unwrap(), rate(&copy).unwrap());
        }

        /// The same on hard puzzles, which need chains or search.
        #[test]
        fn symmetric_copies_of_hard_puzzles_rate_alike(
            grid in proptest::sample::select(hard_puzzles()),
            sym in symmetry(),
        ) {
            let copy = Grid::from_cells(sym.apply(grid.cells())).unwrap();
            prop_assert_eq!(rate(&grid).unwrap(), rate(&copy).unwrap());
        }
    }

    fn rated(text: &str) -> Difficulty {
        rate(&Grid::parse(text).unwrap()).unwrap()
    }

    #[test]
    fn scores_rise_along_the_ladder() {
        for pair in Technique::ALL.windows(2) {
            assert!(pair[0].score() < pair[1].score(), "{pair:?}");
        }
        assert!(Technique::XChain.score() < f64::from(SEARCH_DEPTH_BASE[0]) / 10.0 + 1e-9);
    }

    #[test]
    fn a_full_grid_needs_nothing() {
        let d = rated(
            "534678912672195348198342567859761423426853791713924856961537284287419635345286179",
        );
        assert_eq!(d.steps, 0);
        assert_eq!(d.technique, Technique::FullHouse);
    }

    #[test]
    fn an_easy_puzzle_needs_only_singles() {
        let d = rated(
            "003020600900305001001806400008102900700000008006708200002609500800203009005010300",
        );
        assert!(d.technique <= Technique::NakedSingle, "{d:?}");
        assert!(d.score() <= 2.3);
        assert_eq!(d.search_depth, 0);
    }

    #[test]
    fn a_hard_puzzle_needs_search() {
        // Arto Inkala's "world's hardest sudoku".
        let d = rated(
            "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..",
        );
        assert_eq!(d.technique, Technique::Search);
        assert!(d.score() >= 7.0);
        assert!(d.search_depth >= 1);
    }

    #[test]
    fn x_wing_puzzle_is_rated_by_its_x_wing() {
        // A classic X-wing example (sudokuwiki).
        let d = rated(
            "1.....569492.561.8.561.924...964.8.1.64.1....218.356.4.4.5...169.5.614.2621.....5",
        );
        assert_eq!(d.technique, Technique::XWing, "{d:?}");
        assert!(d.count(Technique::XWing) >= 1);
    }

    #[test]
    fn unsolvable_and_ambiguous_puzzles_are_refused() {
        assert_eq!(rate(&Grid::EMPTY), Err(RateError::MultipleSolutions));
        let mut cells = [0u8; 81];
        cells[..8].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        cells[9 + 8] = 9;
        assert_eq!(
            rate(&Grid::from_cells(cells).unwrap()),
            Err(RateError::NoSolution)
        );
    }
}
