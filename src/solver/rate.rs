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

use super::search::{Board, Contradiction};
use super::{Grid, Mode, Status, solve};

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
    let rise = |n: u16| SEARCH_STEP_TENTHS * n.saturating_sub(1).min(SEARCH_STEPS_COUNTED - 1);
    let score_tenths = match depth {
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
    };
    Ok(Difficulty {
        technique,
        steps: counts.iter().sum(),
        search_depth: depth,
        score_tenths,
        counts,
    })
}

/// The 27 houses: rows 0-8, columns 9-17, boxes 18-26, each listing its
/// cells in reading order.
static HOUSES: [[u8; 9]; 27] = houses();
/// For each cell: its row, column and box (indices into [`HOUSES`]).
static HOUSES_OF: [[u8; 3]; 81] = houses_of();
/// For each cell: its 20 peers as a bit set of cells.
static PEERS: [u128; 81] = peers();
/// For each cell: its 20 peers as a list.
static PEER_LIST: [[u8; 20]; 81] = peer_list();

const fn houses() -> [[u8; 9]; 27] {
    let mut h = [[0u8; 9]; 27];
    let mut i = 0;
    while i < 9 {
        let mut j = 0;
        while j < 9 {
            h[i][j] = (i * 9 + j) as u8;
            h[9 + i][j] = (j * 9 + i) as u8;
            h[18 + i][j] = ((i / 3 * 3 + j / 3) * 9 + i % 3 * 3 + j % 3) as u8;
            j += 1;
        }
        i += 1;
    }
    h
}

const fn houses_of() -> [[u8; 3]; 81] {
    let mut t = [[0u8; 3]; 81];
    let mut c = 0;
    while c < 81 {
        let (r, col) = (c / 9, c % 9);
        t[c] = [r as u8, (9 + col) as u8, (18 + r / 3 * 3 + col / 3) as u8];
        c += 1;
    }
    t
}

const fn peers() -> [u128; 81] {
    let mut t = [0u128; 81];
    let mut c = 0;
    while c < 81 {
        let mut k = 0;
        while k < 3 {
            let h = HOUSES[HOUSES_OF[c][k] as usize];
            let mut j = 0;
            while j < 9 {
                t[c] |= 1u128 << h[j];
                j += 1;
            }
            k += 1;
        }
        t[c] &= !(1u128 << c);
        c += 1;
    }
    t
}

const fn peer_list() -> [[u8; 20]; 81] {
    let mut t = [[0u8; 20]; 81];
    let mut c = 0;
    while c < 81 {
        let mut n = 0;
        let mut p = 0;
        while p < 81 {
            if PEERS[c] & (1u128 << p) != 0 {
                t[c][n] = p as u8;
                n += 1;
            }
            p += 1;
        }
        c += 1;
    }
    t
}

/// The cells of a bit set, lowest first.
fn cells_of(mut set: u128) -> impl Iterator<Item = usize> + Clone {
    std::iter::from_fn(move || {
        (set != 0).then(|| {
            let cell = set.trailing_zeros() as usize;
            set &= set - 1;
            cell
        })
    })
}

/// The set bits of a 9-bit mask, lowest first.
fn bits(mut mask: u16) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let bit = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            bit
        })
    })
}

/// The rater's view of the grid.
///
/// Invariant: a placed cell has `value` `1..=9` and no candidates, and its
/// digit is a candidate of none of its peers; an open cell has `value` 0.
#[derive(Clone)]
struct State {
    /// Candidates of each open cell, bit `d` for digit `d + 1`.
    cand: [u16; 81],
    value: [u8; 81],
    /// Open cells.
    open: u32,
}

impl State {
    fn new(grid: &Grid) -> State {
        let mut state = State {
            cand: [0x1FF; 81],
            value: [0; 81],
            open: 81,
        };
        for (cell, &digit) in grid.cells().iter().enumerate() {
            if digit != 0 {
                state.place(cell, digit);
            }
        }
        state
    }

    fn place(&mut self, cell: usize, digit: u8) {
        self.value[cell] = digit;
        self.cand[cell] = 0;
        self.open -= 1;
        let bit = !(1u16 << (digit - 1));
        for &peer in &PEER_LIST[cell] {
            self.cand[usize::from(peer)] &= bit;
        }
    }

    /// Applies a step: placements first, then eliminations. A placement
    /// that clashes or a cell left without candidates is a contradiction.
    fn apply(&mut self, found: &Found) -> Result<(), Contradiction> {
        for cell in 0..81 {
            let digit = found.place[cell];
            if digit != 0 && self.value[cell] == 0 {
                if self.cand[cell] & (1 << (digit - 1)) == 0 {
                    return Err(Contradiction);
                }
                self.place(cell, digit);
            }
        }
        for cell in 0..81 {
            self.cand[cell] &= !found.elim[cell];
            if self.value[cell] == 0 && self.cand[cell] == 0 {
                return Err(Contradiction);
            }
        }
        Ok(())
    }

    /// Every cell's possible digits: candidates, or the placed digit.
    fn possible(&self) -> [u16; 81] {
        std::array::from_fn(|cell| match self.value[cell] {
            0 => self.cand[cell],
            digit => 1 << (digit - 1),
        })
    }
}

/// Where each digit may go in each house, for one step.
struct Index {
    /// `places[house][digit]`: bit `i` for the house's `i`-th cell.
    places: [[u16; 9]; 27],
}

impl Index {
    fn new(state: &State) -> Index {
        let mut places = [[0u16; 9]; 27];
        for (house, cells) in HOUSES.iter().enumerate() {
            for (i, &cell) in cells.iter().enumerate() {
                for d in bits(state.cand[usize::from(cell)]) {
                    places[house][d] |= 1 << i;
                }
            }
        }
        Index { places }
    }
}

/// The deductions of one step.
#[derive(Clone)]
pub(crate) struct Found {
    /// A digit to place in each cell (0: none).
    pub(crate) place: [u8; 81],
    /// Digits (bit `d` for `d + 1`) to remove from each cell.
    pub(crate) elim: [u16; 81],
    any: bool,
}

impl Default for Found {
    fn default() -> Self {
        Found {
            place: [0; 81],
            elim: [0; 81],
            any: false,
        }
    }
}

impl Found {
    fn clear(&mut self) {
        *self = Found::default();
    }

    fn place(&mut self, cell: usize, digit: u8) {
        self.place[cell] = digit;
        self.any = true;
    }

    /// Removes `digits` from `cell`, counting only those still candidates.
    fn eliminate(&mut self, state: &State, cell: usize, digits: u16) {
        let gone = state.cand[cell] & digits & !self.elim[cell];
        if gone != 0 {
            self.elim[cell] |= gone;
            self.any = true;
        }
    }

    /// Whether no deduction contradicts `solution`.
    pub(crate) fn is_sound(&self, solution: &[u8; 81]) -> bool {
        (0..81).all(|cell| {
            let digit = solution[cell];
            (self.place[cell] == 0 || self.place[cell] == digit)
                && self.elim[cell] & (1 << (digit - 1)) == 0
        })
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

fn full_house(state: &State, _: &Index, found: &mut Found) {
    for cells in &HOUSES {
        let mut open = cells.iter().filter(|&&c| state.value[usize::from(c)] == 0);
        if let (Some(&cell), None) = (open.next(), open.next()) {
            let cand = state.cand[usize::from(cell)];
            if cand.count_ones() == 1 {
                found.place(usize::from(cell), cand.trailing_zeros() as u8 + 1);
            }
        }
    }
}

fn hidden_single(_: &State, index: &Index, found: &mut Found, houses: std::ops::Range<usize>) {
    for house in houses {
        for (d, &places) in index.places[house].iter().enumerate() {
            if places.count_ones() == 1 {
                let cell = HOUSES[house][places.trailing_zeros() as usize];
                found.place(usize::from(cell), d as u8 + 1);
            }
        }
    }
}

fn naked_single(state: &State, _: &Index, found: &mut Found) {
    for (cell, &cand) in state.cand.iter().enumerate() {
        if cand.count_ones() == 1 {
            found.place(cell, cand.trailing_zeros() as u8 + 1);
        }
    }
}

/// A digit's places in a box all in one row (column) of the box: the rest
/// of that row (column) loses it.
fn pointing(state: &State, index: &Index, found: &mut Found) {
    for b in 0..9 {
        for (d, &places) in index.places[18 + b].iter().enumerate() {
            if places.count_ones() < 2 {
                continue;
            }
            // Box position i is row i / 3, column i % 3 of the box.
            let rows = (0..3).filter(|r| places & (0b111 << (3 * r)) != 0);
            let cols = (0..3).filter(|c| places & (0b1001001 << c) != 0);
            let line = match (rows.clone().count(), cols.clone().count()) {
                (1, _) => rows.clone().next().map(|r| b / 3 * 3 + r),
                (_, 1) => cols.clone().next().map(|c| 9 + b % 3 * 3 + c),
                _ => None,
            };
            if let Some(line) = line {
                for &cell in &HOUSES[line] {
                    if usize::from(HOUSES_OF[usize::from(cell)][2]) != 18 + b {
                        found.eliminate(state, usize::from(cell), 1 << d);
                    }
                }
            }
        }
    }
}

/// A digit's places in a row (column) all in one box: the rest of that box
/// loses it.
fn claiming(state: &State, index: &Index, found: &mut Found) {
    for line in 0..18 {
        for (d, &places) in index.places[line].iter().enumerate() {
            if places.count_ones() < 2 {
                continue;
            }
            let Some(third) = (0..3).find(|k| places & !(0b111 << (3 * k)) == 0) else {
                continue;
            };
            let b = if line < 9 {
                line / 3 * 3 + third
            } else {
                third * 3 + (line - 9) / 3
            };
            for &cell in &HOUSES[18 + b] {
                if !HOUSES_OF[usize::from(cell)].contains(&(line as u8)) {
                    found.eliminate(state, usize::from(cell), 1 << d);
                }
            }
        }
    }
}

/// Calls `hit(chosen, union)` for every choice of `n` of the non-empty
/// `items` (bit `i` of `chosen` for `items[i]`) whose masks together have
/// exactly `n` bits.
fn subsets(items: &[u16; 9], n: u32, hit: &mut impl FnMut(u16, u16)) {
    fn walk(
        items: &[u16; 9],
        n: u32,
        start: usize,
        left: u32,
        chosen: u16,
        union: u16,
        hit: &mut impl FnMut(u16, u16),
    ) {
        if left == 0 {
            if union.count_ones() == n {
                hit(chosen, union);
            }
            return;
        }
        for i in start..9 {
            let mask = items[i];
            let union = union | mask;
            if mask != 0 && union.count_ones() <= n {
                walk(items, n, i + 1, left - 1, chosen | 1 << i, union, hit);
            }
        }
    }
    walk(items, n, 0, n, 0, 0, hit);
}

/// `n` cells of a house whose candidates are `n` digits: the house's other
/// cells lose those digits.
fn naked_subset(state: &State, _: &Index, found: &mut Found, n: u32) {
    for cells in &HOUSES {
        let items = cells.map(|c| state.cand[usize::from(c)]);
        if items.iter().filter(|&&m| m != 0).count() <= n as usize {
            continue;
        }
        subsets(&items, n, &mut |chosen, digits| {
            for (i, &cell) in cells.iter().enumerate() {
                if chosen & (1 << i) == 0 {
                    found.eliminate(state, usize::from(cell), digits);
                }
            }
        });
    }
}

/// `n` digits whose places in a house are `n` cells: those cells lose
/// every other digit.
fn hidden_subset(state: &State, index: &Index, found: &mut Found, n: u32) {
    for (house, cells) in HOUSES.iter().enumerate() {
        let items = &index.places[house];
        if items.iter().filter(|&&m| m != 0).count() <= n as usize {
            continue;
        }
        subsets(items, n, &mut |digits, places| {
            for i in bits(places) {
                found.eliminate(state, usize::from(cells[i]), !digits & 0x1FF);
            }
        });
    }
}

/// A digit's places in `n` rows within `n` columns: the rest of those
/// columns lose it; and the same with rows and columns swapped.
fn fish(state: &State, index: &Index, found: &mut Found, n: u32) {
    for d in 0..9 {
        for base in [0, 9] {
            let items: [u16; 9] = std::array::from_fn(|line| index.places[base + line][d]);
            subsets(&items, n, &mut |lines, covers| {
                for cover in bits(covers) {
                    for line in bits(!lines & 0x1FF) {
                        let cell = if base == 0 {
                            line * 9 + cover
                        } else {
                            cover * 9 + line
                        };
                        found.eliminate(state, cell, 1 << d);
                    }
                }
            });
        }
    }
}

fn xy_wing(state: &State, _: &Index, found: &mut Found) {
    let bivalue: u128 = (0..81)
        .filter(|&c| state.cand[c].count_ones() == 2)
        .fold(0, |set, c| set | 1 << c);
    for pivot in cells_of(bivalue) {
        let pc = state.cand[pivot];
        for x in cells_of(bivalue & PEERS[pivot]) {
            let xc = state.cand[x];
            let shared = xc & pc;
            if shared.count_ones() != 1 {
                continue;
            }
            let c = xc & !pc;
            let want = (pc & !shared) | c;
            for y in cells_of(bivalue & PEERS[pivot] & !(1u128 << x)) {
                if state.cand[y] == want {
                    for cell in cells_of(PEERS[x] & PEERS[y]) {
                        found.eliminate(state, cell, c);
                    }
                }
            }
        }
    }
}

fn xyz_wing(state: &State, _: &Index, found: &mut Found) {
    let bivalue: u128 = (0..81)
        .filter(|&c| state.cand[c].count_ones() == 2)
        .fold(0, |set, c| set | 1 << c);
    for pivot in (0..81).filter(|&c| state.cand[c].count_ones() == 3) {
        let pc = state.cand[pivot];
        let pincers = cells_of(bivalue & PEERS[pivot]).filter(|&x| state.cand[x] & !pc == 0);
        for x in pincers.clone() {
            for y in pincers.clone().filter(|&y| y > x) {
                let (xc, yc) = (state.cand[x], state.cand[y]);
                let c = xc & yc;
                if xc | yc == pc && c.count_ones() == 1 {
                    for cell in cells_of(PEERS[pivot] & PEERS[x] & PEERS[y]) {
                        found.eliminate(state, cell, c);
                    }
                }
            }
        }
    }
}

/// For each digit and each cell `s` that may hold it: the cells that must
/// hold the digit if `s` does not (following strong links, then weak
/// links, to a fixpoint). A cell that sees `s` and one of those cannot hold
/// the digit: if it did, `s` would not, and a cell it sees would.
fn x_chain(state: &State, index: &Index, found: &mut Found) {
    for d in 0..9 {
        let bit = 1u16 << d;
        let holders: u128 = (0..81)
            .filter(|&c| state.cand[c] & bit != 0)
            .fold(0, |set, c| set | 1 << c);
        // Each cell's strong partners: the other place in a house where the
        // digit has two.
        let mut strong = [0u128; 81];
        let mut linked = 0u128;
        for (house, cells) in HOUSES.iter().enumerate() {
            let places = index.places[house][d];
            if places.count_ones() == 2 {
                let a = usize::from(cells[places.trailing_zeros() as usize]);
                let b = usize::from(cells[15 - places.leading_zeros() as usize]);
                strong[a] |= 1 << b;
                strong[b] |= 1 << a;
                linked |= 1 << a | 1 << b;
            }
        }
        if linked == 0 {
            continue;
        }
        for s in cells_of(holders) {
            let mut falses = 1u128 << s;
            let mut frontier = falses;
            let mut trues = 0u128;
            let mut seen_by_trues = 0u128;
            loop {
                let mut new_trues = 0u128;
                for f in cells_of(frontier & linked) {
                    new_trues |= strong[f];
                }
                new_trues &= !trues;
                if new_trues == 0 {
                    break;
                }
                trues |= new_trues;
                let mut seen = 0u128;
                for t in cells_of(new_trues) {
                    seen |= PEERS[t];
                }
                seen_by_trues |= seen;
                frontier = seen & holders & !falses;
                falses |= frontier;
            }
            for cell in cells_of(holders & PEERS[s] & seen_by_trues) {
                found.eliminate(state, cell, bit);
            }
        }
    }
}

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

    /// A copy with digit `d + 1` at `cell`, propagated.
    fn assume(&self, cell: usize, d: usize) -> Result<Twin, Contradiction> {
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
    fn close_by_trials(&mut self) -> Result<(), Contradiction> {
        loop {
            let mut changed = false;
            for cell in 0..81 {
                let cand = self.candidates(cell);
                if cand.count_ones() < 2 {
                    continue;
                }
                for d in bits(cand) {
                    if self.candidates(cell) & (1 << d) != 0 && self.assume(cell, d).is_err() {
                        self.eliminate(cell, d)?;
                        changed = true;
                    }
                }
            }
            if !changed {
                return Ok(());
            }
        }
    }
}

/// What a search step needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Trials that propagate singles and locked candidates.
    One,
    /// Trials within trials; the number is how many candidates the step
    /// removed (the fewer, the scarcer the proofs, the harder the step).
    Two(u16),
}

/// One search step on a stalled state: every candidate whose trial fails
/// (depth 1) is removed; if none fails, every candidate whose trial fails
/// once trials are run inside it (depth 2). Returns the depth, or `None`
/// when neither removes anything.
fn search(state: &State, found: &mut Found) -> Option<Depth> {
    let twin = Twin::new(&state.possible()).ok()?;
    for cell in 0..81 {
        for d in bits(state.cand[cell]) {
            if twin.assume(cell, d).is_err() {
                found.eliminate(state, cell, 1 << d);
            }
        }
    }
    if found.any {
        return Some(Depth::One);
    }
    let mut removed = 0u16;
    for cell in 0..81 {
        for d in bits(state.cand[cell]) {
            // Depth 1 found nothing, so every trial here propagates.
            let Ok(mut inner) = twin.assume(cell, d) else {
                continue;
            };
            if inner.close_by_trials().is_err() {
                removed += 1;
                found.eliminate(state, cell, 1 << d);
            }
        }
    }
    found.any.then_some(Depth::Two(removed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::tests::{symmetry, unique_puzzle};
    use proptest::prelude::*;

    const TOP95: &str = include_str!("../../tests/data/norvig_top95.txt");

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

        /// The same on hard puzzles, which need search.
        #[test]
        fn symmetric_copies_of_hard_puzzles_rate_alike(
            line in proptest::sample::select(TOP95.lines().collect::<Vec<_>>()),
            sym in symmetry(),
        ) {
            let grid = Grid::parse(line).unwrap();
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
