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
//! Past aligned pair exclusion come SE's chaining producers (`ladder.rs`):
//! cycles and forcing chains (`chains.rs`, `cycles.rs`), aligned triple
//! exclusion, Nishio, multiple and dynamic forcing chains (`dynamic.rs`,
//! over the chain engine of `propagate.rs` and `graph.rs`), and SE's
//! nested levels of dynamic forcing chains (`nested.rs`). Only past all
//! of them does the rater fall back on a trial search of its own scale
//! (see [`Technique::Search`]).
//!
//! # Budget
//!
//! Rating work is counted (one unit per chain node explored and per trial
//! the search makes), never timed: past the budget of [`rate_with_budget`] the rating stops and its
//! [`Difficulty`] is a lower bound ([`Difficulty::is_lower_bound`]), the
//! same on every machine and under any load.

mod aligned;
mod bug;
mod chains;
mod cycles;
mod direct;
mod dynamic;
mod graph;
mod ladder;
mod locked;
mod multiple;
mod nested;
mod propagate;
mod reach;
mod singles;
mod state;
mod subsets;
mod technique;
mod trial;
mod unique;
mod wings;

use super::{Grid, Mode, Status, solve};
use ladder::{Since, Stopped, ladder};
pub(crate) use singles::solved_by_singles;
pub(crate) use state::Found;
use state::{Index, State};
pub use technique::Technique;
use trial::{Depth, score_tenths, search};

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

/// [`rate_at_most`] for a puzzle known to have exactly one solution (the
/// generator's, made so): the same rating, without first solving the
/// puzzle to check it. The solution is looked for only if the path needs
/// it (the trial search's deepest steps; every step, in debug builds).
pub(crate) fn rate_one_solution_at_most(
    grid: &Grid,
    max_work: u64,
    ceiling: u16,
) -> Option<Difficulty> {
    let grid = &super::canonical(grid);
    let budget = Budget { left: max_work };
    let mut solution = Solution::Later(grid);
    dynamic::with_space(|space| follow(grid, &mut solution, budget, ceiling, &mut |_, _| {}, space))
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
    let mut solution = Solution::Known(*solution.cells());
    let budget = Budget { left: max_work };
    Ok(dynamic::with_space(|space| {
        follow(grid, &mut solution, budget, ceiling, &mut step, space)
    }))
}

/// The only solution of the grid a path follows: known, or to be solved
/// for when first asked.
enum Solution<'g> {
    Known([u8; 81]),
    Later(&'g Grid),
}

impl Solution<'_> {
    /// The solution's cells; `None` only for a grid without one, which a
    /// caller that vouched for one never gives.
    fn cells(&mut self) -> Option<&[u8; 81]> {
        if let Solution::Later(grid) = *self {
            *self = Solution::Known(*solve(grid, Mode::First, None).solution?.cells());
        }
        match self {
            Solution::Known(cells) => Some(cells),
            Solution::Later(_) => None,
        }
    }
}

/// The path of [`rate_path`] from `grid` (canonical, with `solution` its
/// only one), with this thread's chaining space.
fn follow(
    grid: &Grid,
    solution: &mut Solution,
    mut budget: Budget,
    ceiling: u16,
    step: &mut impl FnMut(Technique, &Found),
    space: &mut dynamic::Scratch,
) -> Option<Difficulty> {
    let mut state = State::new(grid);
    let mut found = Found::default();
    let mut tally = Tally::default();
    let mut index = Index::new(&state);
    let mut since = Since::new();
    while state.open_cells != 0 {
        found.clear();
        let rung = match ladder(
            &state,
            &index,
            &mut found,
            &mut budget,
            space,
            &mut since,
            solution,
            ceiling,
        ) {
            Ok(rung) => rung,
            Err(Stopped::Budget(least)) => {
                tally.stopped(least, least.tenths());
                break;
            }
            // The step would be harder than the ceiling.
            Err(Stopped::Above) => return None,
        };
        let (technique, tenths) = match rung {
            Some(step) => step,
            None => match tally.search(&state, &mut found, &mut budget, solution) {
                Some(step) => step,
                None => break,
            },
        };
        debug_assert!(found.any);
        debug_assert!(
            solution.cells().is_some_and(|s| found.is_sound(s)),
            "{technique:?} is unsound"
        );
        step(technique, &found);
        let places = found.places();
        let before = state.cand;
        let changed = match state.apply(&found) {
            Ok(changed) if found.any => changed,
            _ => {
                // Unreachable with sound techniques on a puzzle with one
                // solution; end with the solution rather than loop.
                debug_assert!(false, "{technique:?} led to a contradiction");
                break;
            }
        };
        index.refresh(&before, &state, changed);
        since.changed(&found, &before, changed);
        debug_assert!(index == Index::new(&state));
        if tally.record(technique, tenths, places) > ceiling {
            return None;
        }
    }
    tally.finish(ceiling)
}

/// What the path has met so far: steps per technique, the hardest step,
/// SE's EP and ED, and the search's progress.
struct Tally {
    counts: [u32; Technique::ALL.len()],
    hardest: (Technique, u16),
    pearl: u16,
    diamond: u16,
    lower_bound: bool,
    /// Search steps taken, the fewest candidates a depth-2 step removed,
    /// and the deepest depth.
    search_steps: u16,
    deep_removed: u16,
    depth: u8,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            counts: [0; Technique::ALL.len()],
            hardest: (Technique::FullHouse, 0),
            pearl: 0,
            diamond: 0,
            lower_bound: false,
            search_steps: 0,
            deep_removed: u16::MAX,
            depth: 0,
        }
    }
}

impl Tally {
    /// Counts a step; the score so far.
    fn record(&mut self, technique: Technique, tenths: u16, places: bool) -> u16 {
        self.counts[technique.index()] += 1;
        if tenths > self.hardest.1 {
            self.hardest = (technique, tenths);
        }
        // SE's EP and ED: ED is the first step's difficulty, EP the
        // hardest up to the first step that fills a cell.
        if self.pearl == 0 {
            if self.diamond == 0 {
                self.diamond = self.hardest.1;
            }
            if places {
                self.pearl = self.hardest.1;
            }
        }
        self.hardest.1
    }

    /// The budget ran out on a step that would have been `technique` at
    /// `least` or harder.
    fn stopped(&mut self, technique: Technique, least: u16) {
        self.lower_bound = true;
        if least > self.hardest.1 {
            self.hardest = (technique, least);
        }
    }

    /// A search step, past every technique: its difficulty, or `None`
    /// when the budget ran out.
    fn search(
        &mut self,
        state: &State,
        found: &mut Found,
        budget: &mut Budget,
        solution: &mut Solution,
    ) -> Option<(Technique, u16)> {
        match search(state, found, budget) {
            Ok(Some(Depth::One)) => self.depth = self.depth.max(1),
            Ok(Some(Depth::Two(removed))) => {
                self.depth = self.depth.max(2);
                self.deep_removed = self.deep_removed.min(removed);
            }
            Ok(None) => {
                // Deeper than the rater goes: finish with the solution.
                let Some(solution) = solution.cells() else {
                    self.stopped(
                        Technique::Search,
                        score_tenths(3, self.search_steps + 1, self.deep_removed),
                    );
                    return None;
                };
                for (cell, &digit) in solution.iter().enumerate() {
                    if state.value[cell] == 0 {
                        found.place(cell, digit);
                    }
                }
                self.depth = 3;
            }
            Err(Exhausted) => {
                // The step would have been a search step at least.
                let steps = self.search_steps + 1;
                let least = score_tenths(self.depth.max(1), steps, self.deep_removed);
                self.stopped(Technique::Search, least);
                return None;
            }
        }
        self.search_steps += 1;
        let tenths = score_tenths(self.depth, self.search_steps, self.deep_removed);
        Some((Technique::Search, tenths))
    }

    /// The ratings, unless the score passed `ceiling`.
    fn finish(self, ceiling: u16) -> Option<Difficulty> {
        let (technique, score) = match self.hardest {
            (technique, 0) => (technique, Technique::FullHouse.tenths()),
            hardest => hardest,
        };
        if score > ceiling {
            return None;
        }
        let or_score = |t: u16| if t == 0 { score } else { t };
        Some(Difficulty {
            technique,
            steps: self.counts.iter().sum(),
            search_depth: self.depth,
            score_tenths: score,
            pearl_tenths: or_score(self.pearl),
            diamond_tenths: or_score(self.diamond),
            lower_bound: self.lower_bound,
            counts: self.counts,
        })
    }
}

/// The budget ran out.
#[derive(Debug)]
pub(super) struct Exhausted;

#[cfg(test)]
pub(super) mod tests {
    use super::aligned::{STALE_ALL, aligned_pair_exclusion, aligned_triple_exclusion};
    use super::ladder::{RUNGS, Rung, Since};
    use super::trial::SEARCH_DEPTH_BASE;
    use super::*;
    use crate::solver::tests::{symmetry, unique_puzzle};
    use proptest::prelude::*;

    /// Hard puzzles (scores 6.0 to 8.5: chains or search): the
    /// generator's, with a fixed seed.
    pub(in crate::solver::rate) fn hard_puzzles() -> Vec<Grid> {
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

    /// A rating's score lies within the scores of its technique
    /// ([`Technique::scores`]), by which the generator refuses a technique
    /// outside the difficulty band asked for: on random puzzles, the
    /// band 4.0..6.6 and the hard puzzles, every technique of one
    /// difficulty met rates exactly that.
    #[test]
    fn every_score_lies_within_its_techniques_scores() {
        let random = crate::solver::Generator::new(crate::solver::Spec {
            seed: 12,
            ..crate::solver::Spec::default()
        })
        .unwrap();
        let mut puzzles: Vec<Grid> = (0..300)
            .map(|i| random.puzzle(i, || false).unwrap().puzzle)
            .collect();
        puzzles.extend(mid_and_hard_puzzles(13, 60));
        let mut fixed_met = std::collections::BTreeSet::new();
        for grid in &puzzles {
            let d = rate(grid).unwrap();
            let (base, top) = d.technique.scores();
            assert!(base <= d.score_tenths, "{grid}: {d:?}");
            assert!(top.is_none_or(|top| d.score_tenths <= top), "{grid}: {d:?}");
            if top == Some(base) {
                fixed_met.insert(d.technique);
            }
        }
        assert!(fixed_met.len() >= 8, "{fixed_met:?}");
    }

    /// `count` puzzles of the band 4.0..6.6 made with `seed`, then the
    /// hard puzzles ([`hard_puzzles`]): paths through every rung up to the
    /// cycles, and some past them.
    pub(in crate::solver::rate) fn mid_and_hard_puzzles(seed: u64, count: u64) -> Vec<Grid> {
        let generator = crate::solver::Generator::new(crate::solver::Spec {
            seed,
            difficulty: Some((4.0, 6.6)),
            ..crate::solver::Spec::default()
        })
        .unwrap();
        let mut puzzles: Vec<Grid> = (0..count)
            .map(|i| generator.puzzle(i, || false).unwrap().puzzle)
            .collect();
        puzzles.extend(hard_puzzles());
        puzzles
    }

    /// Calls `visit` with every order of `items[from..]` after
    /// `items[..from]`.
    pub(in crate::solver::rate) fn for_each_order(
        items: &mut [usize],
        from: usize,
        visit: &mut impl FnMut(&[usize]),
    ) {
        if from == items.len() {
            visit(items);
            return;
        }
        for i in from..items.len() {
            items.swap(from, i);
            for_each_order(items, from + 1, visit);
            items.swap(from, i);
        }
    }

    /// Calls `visit` at every state of the rated path of `grid`, as the
    /// ladder takes it, the index kept up to date from step to step.
    pub(in crate::solver::rate) fn for_each_state_on_path(
        grid: &Grid,
        mut visit: impl FnMut(&State, &Index),
    ) {
        let mut state = State::new(grid);
        let mut index = Index::new(&state);
        let mut space = dynamic::Scratch::new();
        let mut solution = Solution::Later(grid);
        while state.open_cells != 0 {
            visit(&state, &index);
            let mut found = Found::default();
            let mut budget = Budget { left: u64::MAX };
            let next = ladder(
                &state,
                &index,
                &mut found,
                &mut budget,
                &mut space,
                &mut Since::new(),
                &mut solution,
                u16::MAX,
            );
            let Ok(Some(_)) = next else {
                break;
            };
            let before = state.cand;
            let Ok(changed) = state.apply(&found) else {
                panic!("a contradiction on {grid}");
            };
            index.refresh(&before, &state, changed);
        }
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
        let mut space = dynamic::Scratch::new();
        let mut fired = 0;
        while state.open_cells != 0 {
            let index = Index::new(&state);
            for (i, rung) in RUNGS.iter().enumerate() {
                let mut found = Found::default();
                match rung {
                    Rung::Fixed(_, apply) => apply(&state, &index, &mut found),
                    Rung::Split(_, parts, apply) => apply(&state, &index, &mut found, parts.all()),
                    Rung::Graded(_, apply) => {
                        apply(&state, &index, &mut found);
                    }
                    Rung::Loops => {
                        unique::unique_loops(&state, &mut found);
                    }
                }
                assert!(found.is_sound(solution), "rung {i} on {form}");
                fired += usize::from(found.any);
            }
            let mut found = Found::default();
            aligned_pair_exclusion(&state, &index, &mut found, &mut STALE_ALL.clone());
            assert!(found.is_sound(solution), "aligned pair exclusion on {form}");
            fired += usize::from(found.any);
            let mut found = Found::default();
            aligned_triple_exclusion(&state, &index, &mut found, &mut STALE_ALL.clone());
            assert!(
                found.is_sound(solution),
                "aligned triple exclusion on {form}"
            );
            let mut found = Found::default();
            match ladder(
                &state,
                &index,
                &mut found,
                &mut budget,
                &mut space,
                &mut Since::new(),
                &mut Solution::Known(*solution),
                u16::MAX,
            ) {
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
    /// published rating), within the default budget. About 10 s (tests
    /// build the library optimised; see Cargo.toml).
    #[test]
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

    /// What a path keeps between steps (the cells and digits changed
    /// since a rung last found nothing) never changes a step: at every
    /// state of the rated path of hard puzzles and of Golden Nugget, the
    /// ladder with the path's memory and with none gives the same step;
    /// and so do the split rungs (digit by digit, house by house), the
    /// aligned exclusions, the unary chaining and Nishio run at every
    /// state, each with a memory of its own runs (they find far more there
    /// than where the ladder reaches them).
    #[test]
    fn what_a_path_keeps_changes_no_step() {
        let nugget = Grid::parse(
            ".......39.....1..5..3.5.8....8.9...6.7...2...1..4.......9.8..5..2....6..4..7.....",
        )
        .unwrap();
        let (mut spared, mut found_by_triples, mut found_by_chains) = (0, 0, 0);
        let (mut found_by_nishio, mut found_by_pairs, mut skipped_y) = (0, 0, 0);
        let (mut found_by_split, mut split_spared) = (0, 0);
        for grid in hard_puzzles().iter().chain([&nugget]) {
            let form = crate::solver::canonical(grid);
            let mut state = State::new(&form);
            let mut index = Index::new(&state);
            let mut space = dynamic::Scratch::new();
            let mut since = Since::new();
            let (mut triple, mut nishio_digits) = (STALE_ALL, 0x1FF);
            let mut memory = chains::UnaryMemory::new();
            let mut pair = STALE_ALL;
            let mut unary = chains::UnarySpace::new();
            // The split rungs, each with a memory of its own runs.
            let mut split = Since::new();
            while state.open_cells != 0 {
                let mut budget = Budget { left: u64::MAX };
                for (rung, kept) in RUNGS.iter().zip(split.parts_mut()) {
                    let Rung::Split(_, parts, apply) = rung else {
                        continue;
                    };
                    let (mut part, mut whole) = (Found::default(), Found::default());
                    apply(&state, &index, &mut part, *kept);
                    apply(&state, &index, &mut whole, parts.all());
                    assert_eq!((part.place, part.elim), (whole.place, whole.elim), "{form}");
                    found_by_split += usize::from(whole.any);
                    split_spared += usize::from(*kept != parts.all());
                    if !whole.any {
                        *kept = 0;
                    }
                }
                let (mut part, mut whole) = (Found::default(), Found::default());
                aligned_pair_exclusion(&state, &index, &mut part, &mut pair);
                aligned_pair_exclusion(&state, &index, &mut whole, &mut STALE_ALL.clone());
                assert_eq!(part.elim, whole.elim, "{form}");
                found_by_pairs += usize::from(whole.any);
                let (mut part, mut whole) = (Found::default(), Found::default());
                aligned_triple_exclusion(&state, &index, &mut part, &mut triple);
                aligned_triple_exclusion(&state, &index, &mut whole, &mut STALE_ALL.clone());
                assert_eq!(part.elim, whole.elim, "{form}");
                found_by_triples += usize::from(whole.any);
                let (mut part, mut whole) = (Found::default(), Found::default());
                let bivalue = chains::bivalue_cells(&state.cand);
                skipped_y += usize::from(memory.y_bivalue == Some(bivalue));
                let step = chains::unary_chaining(
                    &state,
                    &index,
                    &mut part,
                    &mut budget,
                    &mut unary,
                    u16::MAX,
                    &mut memory,
                );
                let again = chains::unary_chaining(
                    &state,
                    &index,
                    &mut whole,
                    &mut budget,
                    &mut unary,
                    u16::MAX,
                    &mut chains::UnaryMemory::new(),
                );
                assert_eq!(step.ok(), again.ok(), "{form}");
                assert_eq!((part.place, part.elim), (whole.place, whole.elim), "{form}");
                found_by_chains += usize::from(whole.any);
                let (mut part, mut whole) = (Found::default(), Found::default());
                let nishio = dynamic::Producer::Nishio;
                let step = dynamic::chaining(
                    &state,
                    nishio,
                    &mut part,
                    &mut budget,
                    &mut space,
                    nishio_digits,
                    None,
                );
                let again = dynamic::chaining(
                    &state,
                    nishio,
                    &mut whole,
                    &mut budget,
                    &mut space,
                    0x1FF,
                    None,
                );
                assert_eq!(step.ok(), again.ok(), "{form}");
                assert_eq!((part.place, part.elim), (whole.place, whole.elim), "{form}");
                nishio_digits = if whole.any { 0x1FF } else { 0 };
                found_by_nishio += usize::from(whole.any);
                let mut step = |found: &mut Found, since: &mut Since| {
                    ladder(
                        &state,
                        &index,
                        found,
                        &mut budget,
                        &mut space,
                        since,
                        &mut Solution::Later(&form),
                        u16::MAX,
                    )
                };
                let (mut kept, mut fresh) = (Found::default(), Found::default());
                let with_memory = step(&mut kept, &mut since);
                spared += usize::from(since.spares());
                let without = step(&mut fresh, &mut Since::new());
                let (Ok(Some(step)), Ok(Some(again))) = (with_memory, without) else {
                    break;
                };
                assert_eq!(step, again, "{form}");
                assert_eq!(kept.touched, fresh.touched, "{form}");
                assert_eq!(kept.place, fresh.place, "{form}");
                assert_eq!(kept.elim, fresh.elim, "{form}");
                let before = state.cand;
                let Ok(changed) = state.apply(&kept) else {
                    panic!("{step:?} led to a contradiction on {form}");
                };
                index.refresh(&before, &state, changed);
                since.changed(&kept, &before, changed);
                split.changed(&kept, &before, changed);
                triple |= changed;
                pair |= changed;
                for cell in state::cells_of(changed) {
                    memory.x_digits |= before[cell] ^ state.cand[cell];
                    nishio_digits |= before[cell] ^ state.cand[cell];
                }
            }
        }
        assert!(spared > 20, "{spared}");
        assert!(found_by_triples > 20, "{found_by_triples}");
        assert!(found_by_chains > 20, "{found_by_chains}");
        assert!(found_by_nishio > 20, "{found_by_nishio}");
        assert!(found_by_pairs > 20, "{found_by_pairs}");
        assert!(skipped_y > 5, "{skipped_y}");
        assert!(found_by_split > 20, "{found_by_split}");
        assert!(split_spared > 100, "{split_spared}");
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
