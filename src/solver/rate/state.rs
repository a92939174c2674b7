//! The rater's view of the grid: each cell's candidates ([`State`]),
//! where each digit may go in each house ([`Index`]), the deductions of one
//! step ([`Found`]), and the house geometry the techniques read.

use crate::solver::Grid;
use crate::solver::search::Contradiction;

/// The 27 houses: rows 0-8, columns 9-17, boxes 18-26, each listing its
/// cells in reading order.
pub(super) static HOUSES: [[u8; 9]; 27] = houses();
/// For each cell: its row, column and box (indices into [`HOUSES`]).
pub(super) static HOUSES_OF: [[u8; 3]; 81] = houses_of();
/// For each cell: its 20 peers as a bit set of cells.
pub(super) static PEERS: [u128; 81] = peers();
/// Each house's cells as a bit set.
pub(super) static HOUSE_CELLS: [u128; 27] = house_cells();
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

const fn house_cells() -> [u128; 27] {
    let mut t = [0u128; 27];
    let mut h = 0;
    while h < 27 {
        let mut j = 0;
        while j < 9 {
            t[h] |= 1u128 << HOUSES[h][j];
            j += 1;
        }
        h += 1;
    }
    t
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
pub(super) fn cells_of(set: u128) -> impl Iterator<Item = usize> + Clone {
    // The two halves in turn: a 128-bit count of trailing zeros and
    // clear of the lowest bit cost twice the work of a 64-bit one.
    let (mut lo, mut hi) = (set as u64, (set >> 64) as u64);
    std::iter::from_fn(move || {
        if lo != 0 {
            let cell = lo.trailing_zeros() as usize;
            lo &= lo - 1;
            Some(cell)
        } else if hi != 0 {
            let cell = 64 + hi.trailing_zeros() as usize;
            hi &= hi - 1;
            Some(cell)
        } else {
            None
        }
    })
}

/// Whether `cell` is in the bit set `set`: read from its 64-bit half (a
/// 128-bit shift by a variable costs several instructions).
#[inline(always)]
pub(super) fn has(set: u128, cell: usize) -> bool {
    let half = if cell < 64 {
        set as u64
    } else {
        (set >> 64) as u64
    };
    half >> (cell % 64) & 1 != 0
}

/// The bit set of each cell alone: read from a table, as a 128-bit shift
/// by a variable costs several instructions.
pub(super) static CELL_BIT: [u128; 81] = {
    let mut t = [0u128; 81];
    let mut c = 0;
    while c < 81 {
        t[c] = 1 << c;
        c += 1;
    }
    t
};

/// The cells `0..81` where `keep` holds, as a bit set: built by 64-bit
/// halves without branches (a 128-bit shift by a variable costs several
/// instructions).
#[inline(always)]
pub(super) fn cells_where(mut keep: impl FnMut(usize) -> bool) -> u128 {
    let (mut lo, mut hi) = (0u64, 0u64);
    for c in 0..64 {
        lo |= u64::from(keep(c)) << c;
    }
    for c in 64..81 {
        hi |= u64::from(keep(c)) << (c - 64);
    }
    u128::from(lo) | u128::from(hi) << 64
}

/// The cells holding each digit (`d` for digit `d + 1`) in `cand`.
pub(super) fn holders(cand: &[u16; 81]) -> [u128; 9] {
    // By 64-bit halves, as in `cells_where`.
    let (mut lo, mut hi) = ([0u64; 9], [0u64; 9]);
    for (cell, &c) in cand.iter().enumerate() {
        let (half, bit) = if cell < 64 {
            (&mut lo, 1u64 << cell)
        } else {
            (&mut hi, 1u64 << (cell - 64))
        };
        for d in bits(c) {
            half[d] |= bit;
        }
    }
    std::array::from_fn(|d| u128::from(lo[d]) | u128::from(hi[d]) << 64)
}

/// The cells with two candidates in `cand`.
pub(super) fn bivalue(cand: &[u16; 81]) -> u128 {
    cells_where(|c| cand[c].count_ones() == 2)
}

/// The set bits of a 9-bit mask, lowest first.
pub(super) fn bits(mut mask: u16) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let bit = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            bit
        })
    })
}

/// Every house, as a set (bit `i` for `HOUSES[i]`).
pub(super) const ALL_HOUSES: u32 = (1 << 27) - 1;

/// The bits of a 32-bit set (houses, say), lowest first.
pub(super) fn bits32(mut set: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (set != 0).then(|| {
            let i = set.trailing_zeros() as usize;
            set &= set - 1;
            i
        })
    })
}

/// The rater's view of the grid.
///
/// Invariant: a placed cell has `value` `1..=9` and no candidates, and its
/// digit is a candidate of none of its peers; an open cell has `value` 0.
#[derive(Clone)]
pub(super) struct State {
    /// Candidates of each open cell, bit `d` for digit `d + 1`.
    pub(super) cand: [u16; 81],
    pub(super) value: [u8; 81],
    /// Open cells.
    pub(super) open_cells: u128,
}

impl State {
    pub(super) fn new(grid: &Grid) -> State {
        let mut state = State {
            cand: [0x1FF; 81],
            value: [0; 81],
            open_cells: (1 << 81) - 1,
        };
        for (cell, &digit) in grid.cells().iter().enumerate() {
            if digit != 0 {
                state.place(cell, digit);
            }
        }
        state
    }

    /// A state with only candidates: a chain's working grid, whose true
    /// nodes are not placed. Cells without candidates count as placed.
    pub(super) fn with_candidates(cand: [u16; 81]) -> State {
        let open_cells = cells_where(|c| cand[c] != 0);
        State {
            cand,
            value: [0; 81],
            open_cells,
        }
    }

    pub(super) fn place(&mut self, cell: usize, digit: u8) {
        self.place_reporting(cell, digit);
    }

    /// [`State::place`], returning the peers that lost the digit.
    fn place_reporting(&mut self, cell: usize, digit: u8) -> u128 {
        self.value[cell] = digit;
        self.cand[cell] = 0;
        self.open_cells &= !CELL_BIT[cell];
        let d = digit - 1;
        let (mut lo, mut hi) = (0u64, 0u64);
        for &peer in &PEER_LIST[cell] {
            let peer = usize::from(peer);
            let had = u64::from(self.cand[peer] >> d & 1);
            if peer < 64 {
                lo |= had << peer;
            } else {
                hi |= had << (peer - 64);
            }
            self.cand[peer] &= !(1 << d);
        }
        u128::from(lo) | u128::from(hi) << 64
    }

    /// Applies a step: placements first, then eliminations. A placement
    /// that clashes or a cell left without candidates is a contradiction.
    /// The cells whose candidates changed: those the step touches and the
    /// peers that lost a digit it placed.
    pub(super) fn apply(&mut self, found: &Found) -> Result<u128, Contradiction> {
        let mut changed = found.touched;
        for cell in cells_of(found.touched) {
            let digit = found.place[cell];
            if digit != 0 && self.value[cell] == 0 {
                if self.cand[cell] & (1 << (digit - 1)) == 0 {
                    return Err(Contradiction);
                }
                changed |= self.place_reporting(cell, digit);
            }
        }
        for cell in cells_of(found.touched) {
            self.cand[cell] &= !found.elim[cell];
        }
        // Only the cells the step changed can have lost their last
        // candidate.
        if cells_of(changed).any(|cell| self.value[cell] == 0 && self.cand[cell] == 0) {
            return Err(Contradiction);
        }
        Ok(changed)
    }

    /// Every cell's possible digits: candidates, or the placed digit.
    pub(super) fn possible(&self) -> [u16; 81] {
        std::array::from_fn(|cell| match self.value[cell] {
            0 => self.cand[cell],
            digit => 1 << (digit - 1),
        })
    }
}

/// Where each digit may go in each house, for one step, and where the
/// singles are.
///
/// Invariant: `lone`, `lone_houses` and `last_houses` are read from
/// `places` and the state's open cells exactly as [`Index::new`] reads
/// them, after every [`Index::refresh`] as at the start.
#[derive(Debug, PartialEq)]
pub(super) struct Index {
    /// `places[house][digit]`: bit `i` for the house's `i`-th cell.
    pub(super) places: [[u16; 9]; 27],
    /// Per house, the digits with exactly one place there.
    pub(super) lone: [u16; 27],
    /// The houses where some digit has exactly one place, bit
    /// [`se_house_rank`] of the house.
    pub(super) lone_houses: u32,
    /// The houses with exactly one open cell, bit [`se_house_rank`] of
    /// the house.
    pub(super) last_houses: u32,
}

/// Bit `d` when `places` (a digit's places in a house) is one place.
#[inline(always)]
fn lone_bit(places: u16, d: usize) -> u16 {
    u16::from(places != 0 && places & (places - 1) == 0) << d
}

impl Index {
    pub(super) fn new(state: &State) -> Index {
        // Each house's 9x9 matrix of cells by digits, transposed without
        // branches.
        let mut places = [[0u16; 9]; 27];
        for (house, cells) in HOUSES.iter().enumerate() {
            let cand = cells.map(|cell| state.cand[usize::from(cell)]);
            for (d, p) in places[house].iter_mut().enumerate() {
                *p = cand
                    .iter()
                    .enumerate()
                    .fold(0, |p, (i, &c)| p | ((c >> d) & 1) << i);
            }
        }
        let mut index = Index {
            places,
            lone: [0; 27],
            lone_houses: 0,
            last_houses: 0,
        };
        for (house, digits) in places.iter().enumerate() {
            index.lone[house] = (0..9).fold(0, |m, d| m | lone_bit(digits[d], d));
            index.mark(house, state, true);
        }
        index
    }

    /// Sets the bit of `house` in `lone_houses` from `lone`, and when
    /// `last`, in `last_houses` from the state's open cells.
    #[inline(always)]
    fn mark(&mut self, house: usize, state: &State, last: bool) {
        let bit = 1u32 << se_house_rank(house);
        if self.lone[house] != 0 {
            self.lone_houses |= bit;
        } else {
            self.lone_houses &= !bit;
        }
        if last {
            if (HOUSE_CELLS[house] & state.open_cells).count_ones() == 1 {
                self.last_houses |= bit;
            } else {
                self.last_houses &= !bit;
            }
        }
    }

    /// Brings the index of a state whose candidates were `before` up to
    /// date with `state`: only the houses of the cells that changed, and
    /// the open cells only of the houses of the cells filled.
    pub(super) fn refresh(&mut self, before: &[u16; 81], state: &State, changed: u128) {
        // The houses whose places changed, and those of the cells filled.
        let (mut houses, mut filled) = (0u32, 0u32);
        for cell in cells_of(changed) {
            let gone = before[cell] & !state.cand[cell];
            if gone == 0 {
                continue;
            }
            let (r, c) = (cell / 9, cell % 9);
            let [row, col, boxed] = HOUSES_OF[cell].map(usize::from);
            for (house, at) in [(row, c), (col, r), (boxed, r % 3 * 3 + c % 3)] {
                let mut lone = self.lone[house] & !gone;
                for d in bits(gone) {
                    let places = self.places[house][d] & !(1 << at);
                    self.places[house][d] = places;
                    lone |= lone_bit(places, d);
                }
                self.lone[house] = lone;
            }
            let three = 1 << row | 1 << col | 1 << boxed;
            houses |= three;
            if !has(state.open_cells, cell) {
                filled |= three;
            }
        }
        while houses != 0 {
            let house = houses.trailing_zeros() as usize;
            houses &= houses - 1;
            self.mark(house, state, filled >> house & 1 != 0);
        }
    }
}

/// The deductions of one step.
#[derive(Clone)]
pub(crate) struct Found {
    /// A digit to place in each cell (0: none).
    pub(crate) place: [u8; 81],
    /// Digits (bit `d` for `d + 1`) to remove from each cell.
    pub(crate) elim: [u16; 81],
    pub(super) any: bool,
    /// The cells with a placement or a removal: every other cell's
    /// entries are zero.
    pub(super) touched: u128,
}

impl Default for Found {
    fn default() -> Self {
        Found {
            place: [0; 81],
            elim: [0; 81],
            any: false,
            touched: 0,
        }
    }
}

impl Found {
    pub(super) fn clear(&mut self) {
        for cell in cells_of(self.touched) {
            self.place[cell] = 0;
            self.elim[cell] = 0;
        }
        self.touched = 0;
        self.any = false;
    }

    pub(super) fn place(&mut self, cell: usize, digit: u8) {
        self.place[cell] = digit;
        self.touched |= CELL_BIT[cell];
        self.any = true;
    }

    /// Whether the step places a digit.
    pub(super) fn places(&self) -> bool {
        cells_of(self.touched).any(|cell| self.place[cell] != 0)
    }

    /// Removes `digits` from `cell`, counting only those still candidates.
    pub(super) fn eliminate(&mut self, state: &State, cell: usize, digits: u16) {
        let gone = state.cand[cell] & digits & !self.elim[cell];
        if gone != 0 {
            self.elim[cell] |= gone;
            self.touched |= CELL_BIT[cell];
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

/// The first hint of a rung in SE's scan order: each hint is offered with
/// its place in that order (`key`, smaller first), and only the first that
/// makes progress is kept. The rater runs on the canonical form, so the
/// order is the same for every isomorph.
pub(super) struct Pick {
    key: u64,
    found: Found,
}

impl Pick {
    pub(super) fn new() -> Pick {
        Pick {
            key: u64::MAX,
            found: Found::default(),
        }
    }

    /// Offers the hint at `key` whose deductions `make` writes.
    pub(super) fn offer(&mut self, key: u64, make: impl FnOnce(&mut Found)) {
        if key >= self.key {
            return;
        }
        let mut mine = Found::default();
        make(&mut mine);
        if mine.any {
            self.key = key;
            self.found = mine;
        }
    }

    /// Writes the kept hint, if any, into `found`.
    pub(super) fn finish(self, found: &mut Found) {
        if self.found.any {
            *found = self.found;
        }
    }
}

/// SE's order of house kinds: boxes, then columns, then rows; the rank of
/// `house` (an index into [`HOUSES`]) in that order.
pub(super) const fn se_house_rank(house: usize) -> u64 {
    match house {
        0..=8 => 18 + house as u64,
        9..=17 => house as u64,
        _ => house as u64 - 18,
    }
}
