//! Difficulty on Sudoku Explainer's scale: [`rate`] solves a puzzle one
//! step at a time, the way Sudoku Explainer (SE) 1.2.1 does, and reports
//! SE's three ratings of the path: ER ([`Difficulty::score`], the hardest
//! step), EP ([`Difficulty::pearl`]) and ED ([`Difficulty::diamond`]).
//! `docs/grading.md` lists every technique and formula.
//!
//! # The path
//!
//! The rater keeps every cell's candidates. At each step it tries the
//! techniques in SE's order ([`Technique::ALL`]) and takes the first that
//! makes progress; within a technique whose difficulty varies (unique
//! loops, BUG), the easiest instances. A step applies *every* instance of
//! that technique and difficulty found in the state the step starts from,
//! where SE applies the first one its scan meets: the difficulty of each
//! step is the same, and the steps, like the ratings, depend only on the
//! puzzle, never on the order in which cells, digits or houses are
//! scanned. A puzzle and each of its isomorphs get the same [`Difficulty`].
//!
//! Uniqueness techniques (unique rectangles and loops, BUG) are used, as in
//! SE: only a puzzle with exactly one solution is rated. Every step is
//! sound for that solution; debug builds check each one against it.
//!
//! # Chains
//!
//! Past aligned pair exclusion comes SE's first chaining producer: cycles
//! and forcing chains (`chains.rs`). SE's later ones (aligned triple
//! exclusion, Nishio, multiple and dynamic forcing chains and their
//! nested levels) are not here yet: in their place the rater runs a trial
//! search of its own scale (see [`Technique::Search`]).
//!
//! # Budget
//!
//! Rating work is counted (one unit per chain node explored and per trial
//! the search makes), never
//! timed: past the budget of [`rate_with_budget`] the rating stops and its
//! [`Difficulty`] is a lower bound ([`Difficulty::is_lower_bound`]), the
//! same on every machine and under any load.

mod aligned;
mod chains;
mod direct;
mod dynamic;
mod graph;
mod locked;
mod nested;
mod propagate;
mod singles;
mod state;
mod subsets;
mod trial;
mod unique;
mod wings;

use super::{Grid, Mode, Status, solve};
use aligned::{aligned_pair_exclusion, aligned_triple_exclusion};
use chains::unary_chaining;
use direct::{direct_claiming, direct_hidden_subset, direct_pointing};
use dynamic::{Producer, chaining};
use locked::{claiming, pointing};
use singles::{full_house, hidden_single, naked_single};
pub(crate) use state::Found;
use state::{Index, State};
use subsets::{fish, hidden_subset, naked_subset};
use trial::{Depth, search};
use unique::{bug, unique_loops};
use wings::{xy_wing, xyz_wing};

/// A solving technique, in the order the rated path tries them (SE 1.2.1's
/// order of producers). [`Technique::score`] never falls along it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Technique {
    /// The last empty cell of a row, column or box.
    FullHouse,
    /// A digit with one place left in a box.
    HiddenSingleBox,
    /// A digit with one place left in a row or column.
    HiddenSingleLine,
    /// A pointing (a box confines a digit to one line) whose eliminations
    /// leave the digit one place in another box: that place is filled.
    DirectPointing,
    /// A claiming (a line confines a digit to one box) whose eliminations
    /// leave the digit one place in another line: that place is filled.
    DirectClaiming,
    /// A hidden pair whose eliminations leave another digit one place in
    /// the house: that place is filled.
    DirectHiddenPair,
    /// A cell with one candidate left.
    NakedSingle,
    /// The direct hidden pair with three digits.
    DirectHiddenTriple,
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
    /// Four cells in two rows, two columns and two boxes that would hold
    /// the same two digits twice (a second solution) unless the extra
    /// candidates of some of them are true: types 1 to 4.
    UniqueRectangle,
    /// The unique rectangle on six or more cells.
    UniqueLoop,
    NakedQuad,
    /// The X-wing with four rows and four columns.
    Jellyfish,
    HiddenQuad,
    /// Bivalue universal grave: without the extra candidates of a few
    /// cells, every cell would have two candidates and every digit two
    /// places in each house, which has no single solution; types 1 to 4.
    Bug,
    /// Two cells whose every pair of digits that leaves some bivalue cell
    /// seeing both without a candidate is excluded.
    AlignedPairExclusion,
    /// A cycle of one digit through strong and weak links (see
    /// `chains.rs`); "generalized x-wing" in SE when it has four cells.
    BidirectionalXCycle,
    /// A cycle through bivalue cells.
    BidirectionalYCycle,
    /// A chain of one digit from a candidate assumed true to its
    /// falsehood, or from it assumed false to its truth (see
    /// `chains.rs`).
    ForcingXChain,
    /// The cycle through several digits and houses.
    BidirectionalCycle,
    /// The forcing chain through several digits (links within cells too).
    ForcingChain,
    /// Aligned pair exclusion with three cells (see `aligned.rs`).
    AlignedTripleExclusion,
    /// A candidate whose truth or falsehood contradicts itself within one
    /// digit, the chain seeing its own removals (see `dynamic.rs`).
    NishioForcingChain,
    /// The common conclusions of the chains from every digit of a cell,
    /// or every place of a digit in a house.
    MultipleForcingChain,
    /// Forcing chains that see their own removals: contradictions, double,
    /// cell and region forcing chains.
    DynamicForcingChain,
    /// Dynamic forcing chains whose chains, when they stall, apply
    /// pointing, claiming, hidden and naked pairs and X-wings to their
    /// working grid (SE's "(+)", see `nested.rs`).
    DynamicForcingChainPlus,
    /// The same, with forcing chains nested in the chains.
    NestedForcingChain,
    /// The same, with multiple forcing chains nested too.
    NestedMultipleForcingChain,
    /// The same, with dynamic forcing chains nested.
    NestedDynamicForcingChain,
    /// The same, with nested dynamic forcing chains that are themselves
    /// nested ("+" or deeper).
    NestedDynamicForcingChainPlus,
    /// Trial and error, on the rater's own scale above the ladder: scored
    /// by depth and steps. (Not yet SE's forcing chains.)
    Search,
}

impl Technique {
    /// Every technique, in the order the path tries them.
    pub const ALL: [Technique; 40] = [
        Technique::FullHouse,
        Technique::HiddenSingleBox,
        Technique::HiddenSingleLine,
        Technique::DirectPointing,
        Technique::DirectClaiming,
        Technique::DirectHiddenPair,
        Technique::NakedSingle,
        Technique::DirectHiddenTriple,
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
        Technique::UniqueRectangle,
        Technique::UniqueLoop,
        Technique::NakedQuad,
        Technique::Jellyfish,
        Technique::HiddenQuad,
        Technique::Bug,
        Technique::AlignedPairExclusion,
        Technique::BidirectionalXCycle,
        Technique::BidirectionalYCycle,
        Technique::ForcingXChain,
        Technique::BidirectionalCycle,
        Technique::ForcingChain,
        Technique::AlignedTripleExclusion,
        Technique::NishioForcingChain,
        Technique::MultipleForcingChain,
        Technique::DynamicForcingChain,
        Technique::DynamicForcingChainPlus,
        Technique::NestedForcingChain,
        Technique::NestedMultipleForcingChain,
        Technique::NestedDynamicForcingChain,
        Technique::NestedDynamicForcingChainPlus,
        Technique::Search,
    ];

    /// The technique's name as the protocol writes it.
    pub fn name(self) -> &'static str {
        match self {
            Technique::FullHouse => "full house",
            Technique::HiddenSingleBox => "hidden single (box)",
            Technique::HiddenSingleLine => "hidden single (line)",
            Technique::DirectPointing => "direct pointing",
            Technique::DirectClaiming => "direct claiming",
            Technique::DirectHiddenPair => "direct hidden pair",
            Technique::NakedSingle => "naked single",
            Technique::DirectHiddenTriple => "direct hidden triple",
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
            Technique::UniqueRectangle => "unique rectangle",
            Technique::UniqueLoop => "unique loop",
            Technique::NakedQuad => "naked quad",
            Technique::Jellyfish => "jellyfish",
            Technique::HiddenQuad => "hidden quad",
            Technique::Bug => "bivalue universal grave",
            Technique::AlignedPairExclusion => "aligned pair exclusion",
            Technique::BidirectionalXCycle => "bidirectional x-cycle",
            Technique::BidirectionalYCycle => "bidirectional y-cycle",
            Technique::ForcingXChain => "forcing x-chain",
            Technique::BidirectionalCycle => "bidirectional cycle",
            Technique::ForcingChain => "forcing chain",
            Technique::AlignedTripleExclusion => "aligned triple exclusion",
            Technique::NishioForcingChain => "nishio forcing chain",
            Technique::MultipleForcingChain => "multiple forcing chain",
            Technique::DynamicForcingChain => "dynamic forcing chain",
            Technique::DynamicForcingChainPlus => "dynamic forcing chain (+)",
            Technique::NestedForcingChain => "dynamic forcing chain (+ forcing chains)",
            Technique::NestedMultipleForcingChain => {
                "dynamic forcing chain (+ multiple forcing chains)"
            }
            Technique::NestedDynamicForcingChain => {
                "dynamic forcing chain (+ dynamic forcing chains)"
            }
            Technique::NestedDynamicForcingChainPlus => {
                "dynamic forcing chain (+ dynamic forcing chains +)"
            }
            Technique::Search => "search",
        }
    }

    /// The technique's lowest difficulty in tenths (SE's base values).
    fn tenths(self) -> u16 {
        match self {
            Technique::FullHouse => 10,
            Technique::HiddenSingleBox => 12,
            Technique::HiddenSingleLine => 15,
            Technique::DirectPointing => 17,
            Technique::DirectClaiming => 19,
            Technique::DirectHiddenPair => 20,
            Technique::NakedSingle => 23,
            Technique::DirectHiddenTriple => 25,
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
            Technique::UniqueRectangle => 45,
            Technique::UniqueLoop => 46,
            Technique::NakedQuad => 50,
            Technique::Jellyfish => 52,
            Technique::HiddenQuad => 54,
            Technique::Bug => 56,
            Technique::AlignedPairExclusion => 62,
            Technique::BidirectionalXCycle => 65,
            Technique::BidirectionalYCycle => 65,
            Technique::ForcingXChain => 66,
            Technique::BidirectionalCycle => 70,
            Technique::ForcingChain => 70,
            Technique::AlignedTripleExclusion => 75,
            Technique::NishioForcingChain => 75,
            Technique::MultipleForcingChain => 80,
            Technique::DynamicForcingChain => 85,
            Technique::DynamicForcingChainPlus => 90,
            Technique::NestedForcingChain => 95,
            Technique::NestedMultipleForcingChain => 100,
            Technique::NestedDynamicForcingChain => 105,
            Technique::NestedDynamicForcingChainPlus => 105,
            Technique::Search => SEARCH_BASE,
        }
    }

    /// The technique's lowest difficulty, with one decimal. Never falls
    /// along [`Technique::ALL`].
    pub fn score(self) -> f64 {
        f64::from(self.tenths()) / 10.0
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Lowest search score, in tenths: above every technique of the ladder.
const SEARCH_BASE: u16 = 110;
/// Search scores, in tenths: the base of each depth, and the rise per
/// further search step, up to [`SEARCH_STEPS_COUNTED`] steps.
const SEARCH_DEPTH_BASE: [u16; 3] = [SEARCH_BASE, 115, 120];
const SEARCH_STEP_TENTHS: u16 = 1;
const SEARCH_STEPS_COUNTED: u16 = 5;

/// The rating budget of [`rate`], in units of work (see
/// [`rate_with_budget`]); `solver.max_rate_work` in the configuration.
pub const DEFAULT_MAX_RATE_WORK: u64 = 1_000_000_000;

/// A puzzle's ratings on SE's scale, from [`rate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difficulty {
    /// The technique of the hardest step (the first step of that
    /// difficulty).
    pub technique: Technique,
    /// Steps taken.
    pub steps: u32,
    /// For [`Technique::Search`]: how deep the trials had to go (1: a
    /// trial propagates singles and locked candidates; 2: trials within
    /// trials; 3: deeper still, where the rater stops and fills in the
    /// solution). 0 when the ladder sufficed.
    pub search_depth: u8,
    score_tenths: u16,
    pearl_tenths: u16,
    diamond_tenths: u16,
    lower_bound: bool,
    counts: [u32; Technique::ALL.len()],
}

impl Difficulty {
    /// ER, with one decimal: the difficulty of the hardest step.
    pub fn score(&self) -> f64 {
        f64::from(self.score_tenths) / 10.0
    }

    /// EP ("pearl"), with one decimal: the hardest step up to and
    /// including the first that fills a cell.
    pub fn pearl(&self) -> f64 {
        f64::from(self.pearl_tenths) / 10.0
    }

    /// ED ("diamond"), with one decimal: the difficulty of the first step.
    pub fn diamond(&self) -> f64 {
        f64::from(self.diamond_tenths) / 10.0
    }

    /// Whether the rating ran out of budget: the three figures are then
    /// lower bounds, from the path so far.
    pub fn is_lower_bound(&self) -> bool {
        self.lower_bound
    }

    /// How many steps used `technique`.
    pub fn count(&self, technique: Technique) -> u32 {
        self.counts[technique.index()]
    }

    /// The techniques used, in [`Technique::ALL`] order, with their step
    /// counts.
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

/// Work left to a rating: one unit per chain node explored, per cycle
/// path followed and per trial of the search.
pub(super) struct Budget {
    left: u64,
}

impl Budget {
    /// Spends `n` units; `false` (and none left) if fewer were left.
    pub(super) fn spend_many(&mut self, n: u64) -> bool {
        match self.left.checked_sub(n) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.left = 0;
                false
            }
        }
    }

    /// Spends one unit; `false` once none is left.
    pub(super) fn spend(&mut self) -> bool {
        match self.left.checked_sub(1) {
            Some(left) => {
                self.left = left;
                true
            }
            None => false,
        }
    }
}

/// Rates `grid` on SE's scale (see the module docs) within the default
/// budget, [`DEFAULT_MAX_RATE_WORK`]. Needs a puzzle with exactly one
/// solution. The same puzzle under any symmetry (rows, columns, bands,
/// stacks, transposition, digits) gets the same [`Difficulty`].
pub fn rate(grid: &Grid) -> Result<Difficulty, RateError> {
    rate_with_budget(grid, DEFAULT_MAX_RATE_WORK)
}

/// [`rate`] within `max_work` units of work; past it, the rating stops
/// and is a lower bound ([`Difficulty::is_lower_bound`]).
pub fn rate_with_budget(grid: &Grid, max_work: u64) -> Result<Difficulty, RateError> {
    rate_traced(grid, max_work, |_, _| {})
}

/// [`rate_with_budget`] that gives up as soon as the score passes
/// `ceiling` (in tenths): `Ok(None)` then. The score only rises along the
/// path, so a rating it returns is the one [`rate_with_budget`] gives; a
/// caller that wants a score inside a band spares the rest of the path of
/// every puzzle above it.
pub fn rate_at_most(
    grid: &Grid,
    max_work: u64,
    ceiling: u16,
) -> Result<Option<Difficulty>, RateError> {
    rate_path(grid, max_work, ceiling, |_, _| {})
}

/// [`rate_with_budget`], calling `step` with each step's technique and
/// deductions (on the puzzle's canonical form) before they are applied.
pub(crate) fn rate_traced(
    grid: &Grid,
    max_work: u64,
    step: impl FnMut(Technique, &Found),
) -> Result<Difficulty, RateError> {
    // No score passes the largest ceiling, so the path always ends with
    // a rating.
    rate_path(grid, max_work, u16::MAX, step).map(|d| d.expect("no score is above u16::MAX tenths"))
}

/// The rated path (see [`rate_traced`]), given up once the score passes
/// `ceiling` tenths.
fn rate_path(
    grid: &Grid,
    max_work: u64,
    ceiling: u16,
    mut step: impl FnMut(Technique, &Found),
) -> Result<Option<Difficulty>, RateError> {
    // The path follows SE's scan order on the canonical form, the same
    // for every isomorph.
    let grid = &super::canonical(grid);
    let outcome = solve(grid, Mode::Unique, None);
    let solution = match (outcome.status, outcome.unique, outcome.solution) {
        (Status::Solved, Some(true), Some(solution)) => solution,
        (Status::Solved, ..) => return Err(RateError::MultipleSolutions),
        _ => return Err(RateError::NoSolution),
    };
    let solution = solution.cells();
    let mut budget = Budget { left: max_work };
    let mut state = State::new(grid);
    let mut found = Found::default();
    let mut counts = [0u32; Technique::ALL.len()];
    let mut hardest = (Technique::FullHouse, 0u16);
    let (mut pearl, mut diamond) = (0u16, 0u16);
    let mut lower_bound = false;
    // Search steps taken, and the fewest candidates a depth-2 step removed.
    let mut search_steps = 0u16;
    let mut deep_removed = u16::MAX;
    let mut depth = 0u8;
    while state.open > 0 {
        found.clear();
        let index = Index::new(&state);
        let rung = match ladder(&state, &index, &mut found, &mut budget) {
            Ok(rung) => rung,
            Err(Exhausted) => {
                lower_bound = true;
                let least = Technique::BidirectionalXCycle.tenths();
                if least > hardest.1 {
                    hardest = (Technique::BidirectionalXCycle, least);
                }
                break;
            }
        };
        let (technique, tenths) = match rung {
            Some(step) => step,
            None => {
                match search(&state, &mut found, &mut budget) {
                    Ok(Some(Depth::One)) => depth = depth.max(1),
                    Ok(Some(Depth::Two(removed))) => {
                        depth = depth.max(2);
                        deep_removed = deep_removed.min(removed);
                    }
                    Ok(None) => {
                        // Deeper than the rater goes: finish with the
                        // solution.
                        for (cell, &digit) in solution.iter().enumerate() {
                            if state.value[cell] == 0 {
                                found.place(cell, digit);
                            }
                        }
                        depth = 3;
                    }
                    Err(Exhausted) => {
                        // The step would have been a search step at least.
                        lower_bound = true;
                        let least = score_tenths(depth.max(1), search_steps + 1, deep_removed);
                        if least > hardest.1 {
                            hardest = (Technique::Search, least);
                        }
                        break;
                    }
                }
                search_steps += 1;
                (
                    Technique::Search,
                    score_tenths(depth, search_steps, deep_removed),
                )
            }
        };
        debug_assert!(found.any);
        debug_assert!(found.is_sound(solution), "{technique:?} is unsound");
        step(technique, &found);
        let places = found.place.iter().any(|&d| d != 0);
        if state.apply(&found).is_err() || !found.any {
            // Unreachable with sound techniques on a puzzle with one
            // solution; end with the solution rather than loop.
            debug_assert!(false, "{technique:?} led to a contradiction");
            break;
        }
        counts[technique.index()] += 1;
        if tenths > hardest.1 {
            hardest = (technique, tenths);
            if tenths > ceiling {
                return Ok(None);
            }
        }
        // SE's EP and ED: ED is the first step's difficulty, EP the
        // hardest up to the first step that fills a cell.
        if pearl == 0 {
            if diamond == 0 {
                diamond = hardest.1;
            }
            if places {
                pearl = hardest.1;
            }
        }
    }
    let (technique, score) = match hardest {
        (technique, 0) => (technique, Technique::FullHouse.tenths()),
        hardest => hardest,
    };
    if score > ceiling {
        return Ok(None);
    }
    let or_score = |t: u16| if t == 0 { score } else { t };
    Ok(Some(Difficulty {
        technique,
        steps: counts.iter().sum(),
        search_depth: depth,
        score_tenths: score,
        pearl_tenths: or_score(pearl),
        diamond_tenths: or_score(diamond),
        lower_bound,
        counts,
    }))
}

/// The budget ran out.
#[derive(Debug)]
pub(super) struct Exhausted;

/// The score of a search step in tenths: by the depth reached, the search
/// steps taken and the fewest candidates a depth-2 step removed. At depth
/// 1, `7.5 + 0.2 * (search steps - 1)`, at most 8.7; at depth 2, from 9.0
/// to 10.8 by how few candidates the scarcest deep step could remove
/// (`9.0 + 0.1 * (18 - floor(2 * log2(removed)))`); beyond, 11.0.
fn score_tenths(depth: u8, search_steps: u16, deep_removed: u16) -> u16 {
    let rise = |n: u16| SEARCH_STEP_TENTHS * n.saturating_sub(1).min(SEARCH_STEPS_COUNTED - 1);
    match depth {
        0 | 1 => SEARCH_DEPTH_BASE[0] + rise(search_steps),
        2 => {
            let removed = u32::from(deep_removed.max(1));
            let halves = (removed * removed).ilog2().min(18) as u16;
            SEARCH_DEPTH_BASE[1] + 18 - halves
        }
        _ => SEARCH_DEPTH_BASE[2],
    }
}

/// A rung of the ladder: a technique of one difficulty, or one whose
/// instances differ in difficulty (it keeps only its easiest instances and
/// says which technique and difficulty they are).
enum Rung {
    Fixed(Technique, fn(&State, &Index, &mut Found)),
    Graded(fn(&State, &Index, &mut Found) -> Option<(Technique, u16)>),
}

/// The ladder, in SE 1.2.1's order of producers.
const RUNGS: [Rung; 24] = [
    Rung::Fixed(Technique::FullHouse, full_house),
    Rung::Fixed(Technique::HiddenSingleBox, |s, i, f| {
        hidden_single(s, i, f, 18..27)
    }),
    Rung::Fixed(Technique::HiddenSingleLine, |s, i, f| {
        hidden_single(s, i, f, 0..18)
    }),
    Rung::Fixed(Technique::DirectPointing, direct_pointing),
    Rung::Fixed(Technique::DirectClaiming, direct_claiming),
    Rung::Fixed(Technique::DirectHiddenPair, |s, i, f| {
        direct_hidden_subset(s, i, f, 2)
    }),
    Rung::Fixed(Technique::NakedSingle, naked_single),
    Rung::Fixed(Technique::DirectHiddenTriple, |s, i, f| {
        direct_hidden_subset(s, i, f, 3)
    }),
    Rung::Fixed(Technique::Pointing, pointing),
    Rung::Fixed(Technique::Claiming, claiming),
    Rung::Fixed(Technique::NakedPair, |s, i, f| naked_subset(s, i, f, 2)),
    Rung::Fixed(Technique::XWing, |s, i, f| fish(s, i, f, 2)),
    Rung::Fixed(Technique::HiddenPair, |s, i, f| hidden_subset(s, i, f, 2)),
    Rung::Fixed(Technique::NakedTriple, |s, i, f| naked_subset(s, i, f, 3)),
    Rung::Fixed(Technique::Swordfish, |s, i, f| fish(s, i, f, 3)),
    Rung::Fixed(Technique::HiddenTriple, |s, i, f| hidden_subset(s, i, f, 3)),
    Rung::Fixed(Technique::XyWing, xy_wing),
    Rung::Fixed(Technique::XyzWing, xyz_wing),
    Rung::Graded(unique_loops),
    Rung::Fixed(Technique::NakedQuad, |s, i, f| naked_subset(s, i, f, 4)),
    Rung::Fixed(Technique::Jellyfish, |s, i, f| fish(s, i, f, 4)),
    Rung::Fixed(Technique::HiddenQuad, |s, i, f| hidden_subset(s, i, f, 4)),
    Rung::Graded(bug),
    Rung::Fixed(Technique::AlignedPairExclusion, aligned_pair_exclusion),
];

/// SE 1.2.1's chaining producers after aligned triple exclusion, in its
/// order: Nishio, multiple and dynamic forcing chains, then the nested
/// levels (SukakuExplainer's SE 1.2.1 set: levels 1 to 3, then level 4
/// with nested chains of level 0, 1 and 2).
const PRODUCERS: [Producer; 9] = [
    Producer::Nishio,
    Producer::Multiple,
    Producer::Dynamic,
    Producer::Nested {
        level: 1,
        nesting: 0,
    },
    Producer::Nested {
        level: 2,
        nesting: 0,
    },
    Producer::Nested {
        level: 3,
        nesting: 0,
    },
    Producer::Nested {
        level: 4,
        nesting: 0,
    },
    Producer::Nested {
        level: 4,
        nesting: 1,
    },
    Producer::Nested {
        level: 4,
        nesting: 2,
    },
];

/// Applies the first rung of the ladder that makes progress; the
/// technique and difficulty (tenths) of the step. After the table come
/// SE's chaining producers, which spend the budget.
fn ladder(
    state: &State,
    index: &Index,
    found: &mut Found,
    budget: &mut Budget,
) -> Result<Option<(Technique, u16)>, Exhausted> {
    for rung in &RUNGS {
        match rung {
            Rung::Fixed(technique, apply) => {
                apply(state, index, found);
                if found.any {
                    return Ok(Some((*technique, technique.tenths())));
                }
            }
            Rung::Graded(apply) => {
                if let Some(step) = apply(state, index, found) {
                    return Ok(Some(step));
                }
            }
        }
    }
    if let Some(step) = unary_chaining(state, index, found, budget)? {
        return Ok(Some(step));
    }
    aligned_triple_exclusion(state, index, found);
    if found.any {
        let t = Technique::AlignedTripleExclusion;
        return Ok(Some((t, t.tenths())));
    }
    for producer in PRODUCERS {
        if let Some(step) = chaining(state, producer, found, budget)? {
            return Ok(Some(step));
        }
    }
    Ok(None)
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
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// A ceiling cuts exactly the ratings above it, and leaves the
        /// others whole.
        #[test]
        fn a_ceiling_cuts_only_the_ratings_above_it(grid in unique_puzzle(), ceiling in 10u16..80) {
            let full = rate(&grid).unwrap();
            let capped = rate_at_most(&grid, DEFAULT_MAX_RATE_WORK, ceiling).unwrap();
            if full.score_tenths <= ceiling {
                prop_assert_eq!(capped, Some(full));
            } else {
                prop_assert_eq!(capped, None);
            }
        }
    }

    /// Walks the rated path of `grid` (on its canonical form) and, at
    /// every state of it, runs every rung of the table, sound or not for
    /// the step chosen, and checks each one's deductions against the
    /// solution; returns how many rungs found something.
    fn every_rung_along_the_path(grid: &Grid) -> usize {
        let form = crate::solver::canonical(grid);
        let solution = solve(&form, Mode::Unique, None).solution.unwrap();
        let solution = solution.cells();
        let mut state = State::new(&form);
        let mut budget = Budget { left: u64::MAX };
        let mut fired = 0;
        while state.open > 0 {
            let index = Index::new(&state);
            for (i, rung) in RUNGS.iter().enumerate() {
                let mut found = Found::default();
                match rung {
                    Rung::Fixed(_, apply) => apply(&state, &index, &mut found),
                    Rung::Graded(apply) => {
                        apply(&state, &index, &mut found);
                    }
                }
                assert!(found.is_sound(solution), "rung {i} on {form}");
                fired += usize::from(found.any);
            }
            let mut found = Found::default();
            aligned_triple_exclusion(&state, &index, &mut found);
            assert!(
                found.is_sound(solution),
                "aligned triple exclusion on {form}"
            );
            let mut found = Found::default();
            match ladder(&state, &index, &mut found, &mut budget) {
                Ok(Some(_)) => {}
                _ => break,
            }
            assert!(found.is_sound(solution), "{form}");
            if state.apply(&found).is_err() {
                break;
            }
        }
        fired
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Every technique is sound wherever it fires along the path, not
        /// only where the path takes it.
        #[test]
        fn every_technique_is_sound_along_the_path(grid in unique_puzzle()) {
            every_rung_along_the_path(&grid);
        }

        /// No step places a wrong digit or removes the right one.
        #[test]
        fn every_deduction_is_sound(grid in unique_puzzle()) {
            // The steps are made on the canonical form.
            let form = crate::solver::canonical(&grid);
            let solution = solve(&form, Mode::Unique, None).solution.unwrap();
            let mut steps = 0;
            let d = rate_traced(&grid, DEFAULT_MAX_RATE_WORK, |technique: Technique, found: &Found| {
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

    /// SE's producer order is an order of difficulty: a base never falls
    /// along it, and the names are distinct (the generator finds a
    /// technique by its name).
    #[test]
    fn scores_never_fall_along_the_ladder() {
        for pair in Technique::ALL.windows(2) {
            assert!(pair[0].score() <= pair[1].score(), "{pair:?}");
        }
        let mut names: Vec<&str> = Technique::ALL.iter().map(|t| t.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Technique::ALL.len());
        assert!(Technique::ForcingChain.score() < f64::from(SEARCH_DEPTH_BASE[0]) / 10.0);
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
    fn a_hard_puzzle_needs_nested_chains() {
        // Arto Inkala's "world's hardest sudoku": past every technique up
        // to dynamic forcing chains, and within SE's nested levels.
        let d = rated(
            "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..",
        );
        assert!(d.technique >= Technique::DynamicForcingChainPlus, "{d:?}");
        assert!(d.technique < Technique::Search, "{d:?}");
        assert!(d.score() >= 9.0, "{d:?}");
        assert_eq!(d.search_depth, 0);
        assert!(!d.is_lower_bound());
    }

    /// Golden Nugget, as SE 1.2.1 rates it: 11.9/11.9/11.3 (its
    /// published rating). Slow unoptimised: `cargo test --release --lib
    /// golden -- --ignored`.
    #[test]
    #[ignore = "minutes in a debug build"]
    fn golden_nugget_rates_as_se_does() {
        let d = rated(
            ".......39.....1..5..3.5.8....8.9...6.7...2...1..4.......9.8..5..2....6..4..7.....",
        );
        assert_eq!(
            (d.score(), d.pearl(), d.diamond()),
            (11.9, 11.9, 11.3),
            "{d:?}"
        );
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

    /// The same on hard puzzles, where the uniqueness techniques, the
    /// exclusions and the chains come into play.
    #[test]
    fn every_technique_is_sound_on_hard_puzzles() {
        let mut fired = 0;
        for grid in hard_puzzles().iter().step_by(2) {
            fired += every_rung_along_the_path(grid);
        }
        assert!(fired > 100, "{fired}");
    }

    /// Past its budget a rating stops: a lower bound, the same every time,
    /// no higher than the full rating; with room to spare it is the full
    /// rating.
    #[test]
    fn the_budget_bounds_the_rating() {
        // Arto Inkala's "world's hardest sudoku".
        let grid = Grid::parse(
            "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..",
        )
        .unwrap();
        let full = rate(&grid).unwrap();
        assert!(!full.is_lower_bound());
        assert!(full.score() >= 8.5, "{full:?}");
        for budget in [1, 1_000, 10_000] {
            let cut = rate_with_budget(&grid, budget).unwrap();
            assert!(cut.is_lower_bound(), "{budget}");
            assert_eq!(rate_with_budget(&grid, budget).unwrap(), cut);
            assert!(cut.score() <= full.score(), "{budget}: {cut:?}");
            assert!(cut.pearl() <= full.pearl() && cut.diamond() <= full.diamond());
        }
        assert_eq!(
            rate_with_budget(&grid, DEFAULT_MAX_RATE_WORK * 4).unwrap(),
            full
        );
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
