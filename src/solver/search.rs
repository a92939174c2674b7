//! The hot path: candidate bitmasks, constraint propagation, fewest-candidates
//! branching and backtracking. No I/O, no allocation, no logging.
//!
//! # Bit layout
//!
//! The grid is cut into three bands of three rows. Within a band, cell
//! `9 * row + column` (row `0..3`, column `0..9`) is bit `9 * row + column`
//! of a 27-bit mask, so each row of the band is a 9-bit group and each box
//! of the band is three 3-bit groups, one per row (a *segment*: the cells a
//! row and a box share).
//!
//! `cand[9 * band + digit]` is the set of cells of `band` where `digit`
//! (`0..9`, meaning 1 to 9) may still go. Row, column and box constraints all
//! live in these 27 words:
//! - a row holds a digit once: when a row of `cand[i]` has a single cell,
//!   that cell is fixed and no other digit may use it;
//! - a box holds a digit once, and each row meets each box in one segment:
//!   a digit's three cells in a band occupy segments that form a permutation
//!   (one per row, one per box), so every segment that lies on no such
//!   permutation is emptied (pointing and claiming, all at once, by table);
//! - a column holds a digit once: when the cells of `cand[i]` in a box lie in
//!   one column, that column is closed to the digit in the other two bands.
//!
//! Naked singles come from counting, per cell, how many digits remain (three
//! bit-sliced counters over the nine digit masks of a band); hidden singles
//! in rows and boxes come from the single-row rule above, as a box whose
//! digit is down to one segment forces that segment's row.
//!
//! # Invariants
//!
//! - A cell leaves `unsolved` only when it is fixed: its digit's row is a
//!   single there and every other digit's bit for the cell is clear.
//! - `seen[i]` is `cand[i]` as it was when its consequences were last drawn;
//!   `cand[i] != seen[i]` marks work still to do. [`Board::propagate`]
//!   returns only at a fixpoint where `cand == seen`.
//! - Candidates only ever disappear. A branch works on a copy of the board
//!   (a few hundred bytes, one `memcpy`), so backtracking restores the
//!   parent exactly; after a failed branch the parent drops the candidate it
//!   tried and nothing else.

use super::grid::given_bits;
#[cfg(test)]
use super::tables::COLUMN;
use super::tables::{
    ALL, BAND_PEERS, CELL_COLUMN, COLUMN_KEEP, GRID_PEERS, PERMUTATION_CELLS, ROW, SEGMENTS_OF_ROW,
    SINGLE_CELL_ROW,
};

/// Index into `cand` of `digit` (0-based) in `band`.
#[inline(always)]
const fn at(digit: usize, band: usize) -> usize {
    9 * band + digit
}

/// Per-band cell sets as one set of all 81 cells (band `b` at bits
/// `27 * b..`), so that one loop, with one hard-to-predict exit, visits
/// every band.
#[inline(always)]
fn grid(bands: [u32; 3]) -> u128 {
    u128::from(bands[0]) | u128::from(bands[1]) << 27 | u128::from(bands[2]) << 54
}

/// The givens or the choices so far rule out every completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Contradiction;

/// Where the search goes after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep looking: backtrack and try the next alternative.
    Continue,
    /// Stop: enough solutions were found, or the deadline passed.
    Stop,
}

/// Candidate state of a whole grid. See the module docs for the layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Board {
    cand: [u32; 27],
    seen: [u32; 27],
    unsolved: [u32; 3],
    /// Cells with exactly two candidates, per band, as of the last count.
    pairs: [u32; 3],
}

impl Board {
    /// A board holding `cells` (row by row, `0` blank, `1..=9` digit) as
    /// fixed cells, with their direct consequences drawn (peers lose the
    /// digit, the cell loses every other digit). Givens that clash with each
    /// other make a [`Contradiction`], here or at the first
    /// [`Board::propagate`].
    pub(crate) fn new(cells: &[u8; 81]) -> Result<Board, Contradiction> {
        let givens = given_bits(cells);
        let mut cand = [ALL; 27];
        let mut unsolved = [ALL; 3];
        let mut clash = false;
        for (band, (&given, band_cells)) in givens.iter().zip(cells.as_chunks::<27>().0).enumerate()
        {
            // The band's given cells, visited one by one (no branch per
            // cell), and per digit the digit's own givens.
            let mut own = [0u32; 9];
            let mut rest = given;
            while rest != 0 {
                let pos = rest.trailing_zeros() as usize;
                let bit = rest & rest.wrapping_neg();
                rest ^= bit;
                let value = band_cells[pos];
                debug_assert!((1..=9).contains(&value));
                // `min` keeps the index in range without a check.
                let digit = usize::from(value.wrapping_sub(1)).min(8);
                let i = at(digit, band);
                clash |= cand[i] & bit == 0;
                own[digit] |= bit;
                cand[i] &= !BAND_PEERS[pos];
                let column = CELL_COLUMN[pos];
                cand[at(digit, (band + 1) % 3)] &= !column;
                cand[at(digit, (band + 2) % 3)] &= !column;
            }
            // Givens of later bands still clear their digit's column here:
            // never where this band gives that digit, unless the two clash.
            for (mask, own) in cand[9 * band..9 * band + 9].iter_mut().zip(own) {
                *mask = (*mask & !given) | own;
            }
            unsolved[band] = ALL & !given;
        }
        if clash {
            return Err(Contradiction);
        }
        Ok(Board {
            cand,
            seen: [0; 27],
            unsolved,
            pairs: [0; 3],
        })
    }

    /// The board of the givens `keep` (bit `i` for cell `i`, row by row) of
    /// the solved board `solved`: what [`Board::new`] makes of those cells,
    /// taken from `solved`'s digit masks rather than read as digits.
    pub(crate) fn with_givens(solved: &Board, keep: u128) -> Board {
        debug_assert!(solved.unsolved == [0; 3]);
        let given: [u32; 3] = std::array::from_fn(|band| (keep >> (27 * band)) as u32 & ALL);
        let mut cand = [0u32; 27];
        for digit in 0..9 {
            let own: [u32; 3] =
                std::array::from_fn(|band| solved.cand[at(digit, band)] & given[band]);
            // The columns the digit is given in, as cells of a band: closed
            // to it in every band (in its own band they are box peers).
            let columns = own.iter().fold(0, |m, &o| m | o | o >> 9 | o >> 18) & ROW;
            let open = ALL & !(columns | columns << 9 | columns << 18);
            for band in 0..3 {
                let mut peers = 0;
                let mut rest = own[band];
                while rest != 0 {
                    peers |= BAND_PEERS[rest.trailing_zeros() as usize];
                    rest &= rest - 1;
                }
                cand[at(digit, band)] = (open & !peers & !given[band]) | own[band];
            }
        }
        Board {
            cand,
            seen: [0; 27],
            unsolved: given.map(|g| ALL & !g),
            pairs: [0; 3],
        }
    }

    /// The cells not fixed yet, as one cell set (bit `i` for cell `i`, row
    /// by row). A cell fixed is never unsolved again (see the invariants).
    pub(crate) fn unsolved_cells(&self) -> u128 {
        grid(self.unsolved)
    }

    /// Whether every cell is fixed. After [`Board::propagate`] succeeds, a
    /// solved board is a valid grid.
    #[inline]
    pub(crate) fn is_solved(&self) -> bool {
        self.unsolved == [0; 3]
    }

    /// Draws every consequence of the current candidates: locked candidates
    /// and row singles to a fixpoint, then naked singles, again until
    /// nothing changes. Leaves `pairs` up to date when the board is neither
    /// solved nor contradictory.
    pub(crate) fn propagate(&mut self) -> Result<(), Contradiction> {
        loop {
            self.update()?;
            if self.is_solved() {
                debug_assert!(self.at_fixpoint());
                return Ok(());
            }
            if !self.naked_singles()? {
                debug_assert!(self.at_fixpoint());
                return Ok(());
            }
        }
    }

    /// The invariants [`Board::propagate`] promises on success: nothing left
    /// to draw, every cell has a candidate, every fixed cell has exactly one,
    /// and a digit's cells in a band span three rows.
    fn at_fixpoint(&self) -> bool {
        let settled = self.cand == self.seen;
        let cells_ok = (0..3).all(|band| {
            let (mut one, mut two) = (0, 0);
            for &m in &self.cand[9 * band..9 * band + 9] {
                two |= one & m;
                one |= m;
            }
            one == ALL && two & !self.unsolved[band] == 0
        });
        let rows_ok = self
            .cand
            .iter()
            .all(|&m| (0..3).all(|row| (m >> (9 * row)) & ROW != 0));
        settled && cells_ok && rows_ok
    }

    /// Locked candidates and row singles until no digit-band mask changes.
    #[inline]
    fn update(&mut self) -> Result<(), Contradiction> {
        loop {
            let mut changed = false;
            // Always true, but the compiler cannot know: a test it cannot
            // drop, as the `sudoku` crate puts one before its own visits.
            // Measured, not explained: with it the 27 visits compile to code
            // that runs 2-6 % faster on every benchmark set (commit 4582749).
            // The form matters: shifted by the digit, so the three visits
            // of a digit share it (by `i / 3` it gains less, and a test of
            // bit `i` is slower than none).
            let gate = std::hint::black_box(ALL);
            macro_rules! visit {
                ($($i:literal)*) => {$(
                    if (gate >> ($i % 9)) & ROW != 0 && self.cand[$i] != self.seen[$i] {
                        changed = true;
                        self.update_one::<$i>()?;
                    }
                )*};
            }
            // Digit by digit, each digit's three bands in a row: what a
            // visit closes in a column of the other bands is drawn in the
            // same round. Measured against band by band: 2-12 % faster on
            // every benchmark set (commit 7940cc2).
            visit!(0 9 18 1 10 19 2 11 20 3 12 21 4 13 22 5 14 23 6 15 24 7 16 25 8 17 26);
            if !changed {
                return Ok(());
            }
        }
    }

    /// Draws the consequences of `cand[I]` within its band and column.
    #[inline(always)]
    fn update_one<const I: usize>(&mut self) -> Result<(), Contradiction> {
        let (digit, band) = (I % 9, I / 9);
        let old = self.cand[I];
        let segments = SEGMENTS_OF_ROW[(old & ROW) as usize]
            | (SEGMENTS_OF_ROW[((old >> 9) & ROW) as usize] << 3)
            | (SEGMENTS_OF_ROW[((old >> 18) & ROW) as usize] << 6);
        let cells = old & PERMUTATION_CELLS[(segments & 0x1FF) as usize];
        if cells == 0 {
            return Err(Contradiction);
        }

        // Columns: a box whose cells for this digit lie in one column closes
        // that column to the digit in the other bands.
        let columns = (cells | (cells >> 9) | (cells >> 18)) & ROW;
        let keep = COLUMN_KEEP[columns as usize];
        self.cand[at(digit, (band + 1) % 3)] &= keep;
        self.cand[at(digit, (band + 2) % 3)] &= keep;

        // Rows down to one cell fix that cell: no other digit may use it.
        let fixed = SINGLE_CELL_ROW[(cells & ROW) as usize] as u32
            | (SINGLE_CELL_ROW[((cells >> 9) & ROW) as usize] as u32) << 9
            | (SINGLE_CELL_ROW[((cells >> 18) & ROW) as usize] as u32) << 18;
        self.unsolved[band] &= !fixed;
        for (d, mask) in self.cand[9 * band..9 * band + 9].iter_mut().enumerate() {
            // This digit's own mask becomes `cells` (which holds `fixed`).
            *mask = if d == digit { cells } else { *mask & !fixed };
        }
        self.seen[I] = cells;
        Ok(())
    }

    /// Fixes every unsolved cell left with one candidate. Returns whether
    /// any was fixed; records cells with two candidates in `pairs`.
    #[inline]
    fn naked_singles(&mut self) -> Result<bool, Contradiction> {
        let mut fixed_any = false;
        for band in 0..3 {
            let (mut one, mut two, mut three) = (0u32, 0u32, 0u32);
            for &cells in &self.cand[9 * band..9 * band + 9] {
                three |= two & cells;
                two |= one & cells;
                one |= cells;
            }
            if one != ALL {
                return Err(Contradiction);
            }
            self.pairs[band] = two & !three;
            let mut singles = one & !two & self.unsolved[band];
            while singles != 0 {
                let pos = singles.trailing_zeros() as usize;
                let bit = 1u32 << pos;
                singles ^= bit;
                // Exactly one digit has this cell; it leaves the peers.
                let digit = (self.digits_at(band, bit).trailing_zeros() as usize).min(8);
                self.cand[at(digit, band)] &= !BAND_PEERS[pos];
                fixed_any = true;
            }
        }
        Ok(fixed_any)
    }

    /// The cells where two solved boards hold different digits (bit `i`
    /// for cell `i`, row by row).
    pub(crate) fn cells_differing(&self, other: &Board) -> u128 {
        let band = |band: usize| {
            (0..9).fold(0u32, |m, d| {
                m | (self.cand[at(d, band)] & !other.cand[at(d, band)])
            })
        };
        u128::from(band(0)) | u128::from(band(1)) << 27 | u128::from(band(2)) << 54
    }

    /// The unsolved cell to branch on: one with the fewest candidates, and
    /// among those the one with the most unsolved peers (its choice has the
    /// most consequences, which cuts the search tree by about a third on
    /// hard puzzles). Returns the band, the cell's bit within the band, and
    /// its candidate digits as a 9-bit mask. Requires an unsolved,
    /// propagated board.
    #[inline]
    fn choose_cell(&self) -> (usize, u32, u32) {
        let unsolved = grid(self.unsolved);
        let mut cells = self.fewest_cells();
        // Degree above, then the lower cell: the highest key wins, so ties
        // go to the first cell, as a strict comparison in order would.
        let mut best = 0u32;
        while cells != 0 {
            let cell = cells.trailing_zeros();
            cells &= cells - 1;
            let degree = (GRID_PEERS[(cell as usize).min(80)] & unsolved).count_ones();
            best = best.max(degree << 8 | (255 - cell));
        }
        let cell = 255 - (best & 255) as usize;
        debug_assert!(cell < 81);
        let (band, bit) = (cell / 27, 1u32 << (cell % 27));
        (band, bit, self.digits_at(band, bit))
    }

    /// The unsolved cells with the fewest candidates, per band, when no cell
    /// has two (rare: only early in the search of very hard puzzles).
    #[cold]
    fn fewest_candidates(&self) -> [u32; 3] {
        // at_least[band][k]: cells with more than k candidates.
        let mut at_least = [[0u32; 9]; 3];
        for (band, levels) in at_least.iter_mut().enumerate() {
            for &cells in &self.cand[9 * band..9 * band + 9] {
                for k in (1..9).rev() {
                    levels[k] |= levels[k - 1] & cells;
                }
                levels[0] |= cells;
            }
        }
        for k in 2..9 {
            let exactly: [u32; 3] = std::array::from_fn(|band| {
                at_least[band][k - 1] & !at_least[band][k] & self.unsolved[band]
            });
            if exactly != [0; 3] {
                return exactly;
            }
        }
        self.unsolved
    }

    /// The digits (bit `d` for digit `d + 1`) still possible at `bit` in `band`.
    #[inline]
    fn digits_at(&self, band: usize, bit: u32) -> u32 {
        let mut digits = 0;
        for d in 0..9 {
            digits |= u32::from(self.cand[at(d, band)] & bit != 0) << d;
        }
        digits
    }

    /// Puts `digit` at `bit` of `band`: the digit leaves the cell's row and
    /// box peers in the band; [`Board::propagate`] draws the rest.
    #[inline]
    fn place(&mut self, digit: usize, band: usize, bit: u32) {
        let i = at(digit, band);
        debug_assert!(self.cand[i] & bit != 0);
        self.cand[i] &= !BAND_PEERS[bit.trailing_zeros() as usize];
    }

    /// Removes `digit` from `bit` of `band`.
    #[inline]
    fn eliminate(&mut self, digit: usize, band: usize, bit: u32) {
        self.cand[at(digit, band)] &= !bit;
    }

    /// A board whose cells may hold the digits in `cands` (cell by cell,
    /// bit `d` for digit `d + 1`), with nothing drawn yet: every cell counts
    /// as unsolved and every digit-band as changed, so [`Board::propagate`]
    /// draws all consequences, and fixes cells left with one digit.
    pub(crate) fn from_candidates(cands: &[u16; 81]) -> Board {
        let mut cand = [0u32; 27];
        for (cell, &digits) in cands.iter().enumerate() {
            let (band, bit) = (cell / 27, 1u32 << (cell % 27));
            let mut rest = digits & 0x1FF;
            while rest != 0 {
                cand[at(rest.trailing_zeros() as usize, band)] |= bit;
                rest &= rest - 1;
            }
        }
        Board {
            cand,
            seen: [0; 27],
            unsolved: [ALL; 3],
            pairs: [0; 3],
        }
    }

    /// The first unsolved cell (row by row) with the fewest candidates, and
    /// its candidates (bit `d` for digit `d + 1`): [`Board::choose_cell`]
    /// without the count of unsolved peers, for searches whose trees are a
    /// few boards deep, where that count costs more than it saves.
    /// Requires an unsolved, propagated board.
    #[inline]
    pub(crate) fn first_fewest(&self) -> (usize, u16) {
        let cell = (self.fewest_cells().trailing_zeros() as usize).min(80);
        (cell, self.candidates_at(cell))
    }

    /// The unsolved cells with the fewest candidates, as one grid set (see
    /// [`grid`]). Requires an unsolved, propagated board.
    #[inline(always)]
    fn fewest_cells(&self) -> u128 {
        if self.pairs == [0; 3] {
            grid(self.fewest_candidates())
        } else {
            grid(self.pairs)
        }
    }

    /// The digits still possible at `cell` (bit `d` for digit `d + 1`).
    #[inline]
    pub(crate) fn candidates_at(&self, cell: usize) -> u16 {
        self.digits_at(cell / 27, 1 << (cell % 27)) as u16
    }

    /// Puts digit `digit + 1` at `cell`, which must still allow it;
    /// [`Board::propagate`] draws the consequences.
    #[inline]
    pub(crate) fn place_at(&mut self, cell: usize, digit: usize) {
        self.place(digit, cell / 27, 1 << (cell % 27));
    }

    /// Removes digit `digit + 1` from `cell`; [`Board::propagate`] draws the
    /// consequences.
    #[inline]
    pub(crate) fn eliminate_at(&mut self, cell: usize, digit: usize) {
        self.eliminate(digit, cell / 27, 1 << (cell % 27));
    }

    /// The grid of a solved board, row by row, digits `1..=9`.
    pub(crate) fn solution(&self) -> [u8; 81] {
        debug_assert!(self.is_solved());
        let mut cells = [0u8; 81];
        for (band, out) in cells.as_chunks_mut::<27>().0.iter_mut().enumerate() {
            // The binary digits of every cell's value, one bit plane each
            // (a solved cell has exactly one digit).
            let plane = |digits: &[usize]| {
                digits
                    .iter()
                    .fold(0, |plane, &digit| plane | self.cand[at(digit, band)])
            };
            let planes = [
                plane(&[0, 2, 4, 6, 8]),
                plane(&[1, 2, 5, 6]),
                plane(&[3, 4, 5, 6]),
                plane(&[7, 8]),
            ];
            // Eight cells at a time: each plane's byte spread to one bit
            // per cell byte, at the bit's place in the value.
            let value_bytes = |shift: u32| {
                planes
                    .iter()
                    .enumerate()
                    .fold(0u64, |word, (k, &p)| {
                        word | SPREAD[(p >> shift) as usize & 255] << k
                    })
                    .to_le_bytes()
            };
            for (k, chunk) in out.as_chunks_mut::<8>().0.iter_mut().enumerate() {
                *chunk = value_bytes(8 * k as u32);
            }
            out[24..].copy_from_slice(&value_bytes(24)[..3]);
        }
        debug_assert!(cells.iter().all(|&c| (1..=9).contains(&c)));
        cells
    }
}

/// Each byte `x` spread to eight bytes: byte `k` is bit `k` of `x`.
static SPREAD: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut x = 0;
    while x < 256 {
        let mut k = 0;
        while k < 8 {
            table[x] |= ((x as u64 >> k) & 1) << (8 * k);
            k += 1;
        }
        x += 1;
    }
    table
};

/// How many guesses pass between two looks at the clock.
pub(crate) const DEADLINE_CHECK_EVERY: u64 = 128;

/// One run of the search: its limits, what it has found so far, and the
/// work it did.
pub(crate) struct Search<F: FnMut() -> bool> {
    /// Stop after this many solutions.
    pub(crate) limit: u64,
    /// Solutions found so far.
    pub(crate) found: u64,
    /// The first solution found.
    pub(crate) first: Option<[u8; 81]>,
    /// Branches explored: each digit tried at a choice point counts once.
    pub(crate) guesses: u64,
    /// Whether the search stopped at the deadline.
    pub(crate) timed_out: bool,
    /// Asked every [`DEADLINE_CHECK_EVERY`] guesses; `true` ends the search.
    expired: F,
}

impl<F: FnMut() -> bool> Search<F> {
    pub(crate) fn new(limit: u64, expired: F) -> Self {
        debug_assert!(limit >= 1);
        Search {
            limit,
            found: 0,
            first: None,
            guesses: 0,
            timed_out: false,
            expired,
        }
    }

    /// Propagates `board` and searches it: records solutions until the limit.
    pub(crate) fn run(&mut self, board: &mut Board) -> Flow {
        match board.propagate() {
            Err(Contradiction) => Flow::Continue,
            Ok(()) if board.is_solved() => self.record(board),
            Ok(()) => self.branch(board),
        }
    }

    fn record(&mut self, board: &Board) -> Flow {
        if self.first.is_none() {
            self.first = Some(board.solution());
        }
        self.found += 1;
        if self.found >= self.limit {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }

    /// Branches on the cell with the fewest candidates of a propagated,
    /// unsolved board. Each alternative but the last runs on a copy; the
    /// last reuses `board`, which the caller must treat as spent.
    fn branch(&mut self, board: &mut Board) -> Flow {
        let (band, bit, mut digits) = board.choose_cell();
        debug_assert!(digits.count_ones() >= 2);
        loop {
            let digit = digits.trailing_zeros() as usize;
            digits &= digits - 1;
            self.guesses += 1;
            if self.guesses.is_multiple_of(DEADLINE_CHECK_EVERY) && (self.expired)() {
                self.timed_out = true;
                return Flow::Stop;
            }
            if digits == 0 {
                board.place(digit, band, bit);
                return self.run(board);
            }
            let mut child = *board;
            child.place(digit, band, bit);
            if self.run(&mut child) == Flow::Stop {
                return Flow::Stop;
            }
            board.eliminate(digit, band, bit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::reference::count_solutions;
    use crate::solver::tests::puzzle;
    use proptest::prelude::*;

    /// A propagated, unsolved board for `cells`, if there is one.
    fn open_board(cells: &[u8; 81]) -> Option<Board> {
        let mut board = Board::new(cells).ok()?;
        board.propagate().ok()?;
        (!board.is_solved()).then_some(board)
    }

    fn count(board: &Board) -> u64 {
        let mut search = Search::new(u64::MAX, || false);
        search.run(&mut board.clone());
        search.found
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The board of some givens of a solved grid, taken from its
        /// masks, is the board of those cells read as digits.
        #[test]
        fn givens_of_a_solved_board_make_the_same_board(
            grid in crate::solver::tests::solved_grid(),
            keep in any::<u128>(),
        ) {
            let solved = Board::new(&grid).expect("a solution's cells never clash");
            let keep = keep & ((1 << 81) - 1);
            let cells: [u8; 81] = std::array::from_fn(|i| if keep >> i & 1 == 1 { grid[i] } else { 0 });
            let read = Board::new(&cells).expect("nor do some of them");
            prop_assert_eq!(Board::with_givens(&solved, keep), read);
        }

        /// Backtracking restores the state exactly: after a branch is
        /// explored (to its end) the parent equals its state before the
        /// choice, and dropping the tried digit changes exactly that one
        /// candidate bit and nothing else.
        #[test]
        fn backtracking_restores_the_parent_exactly(grid in puzzle(40..=60)) {
            let Some(mut board) = open_board(grid.cells()) else { return Ok(()) };
            let before = board;
            let (band, bit, digits) = board.choose_cell();
            let digit = digits.trailing_zeros() as usize;

            let mut child = board;
            child.place(digit, band, bit);
            let mut search = Search::new(u64::MAX, || false);
            search.run(&mut child);
            prop_assert_eq!(board, before);

            board.eliminate(digit, band, bit);
            let i = at(digit, band);
            prop_assert_eq!(board.cand[i] ^ before.cand[i], bit);
            let mut expected = before;
            expected.cand[i] &= !bit;
            prop_assert_eq!(board, expected);
        }

        /// Branching loses and invents nothing: the solutions under each
        /// alternative of the chosen cell add up to the parent's, and each
        /// alternative's count matches the naive solver's for the grid with
        /// that digit written in.
        #[test]
        fn branches_partition_the_solutions(grid in puzzle(30..=48)) {
            let Some(board) = open_board(grid.cells()) else { return Ok(()) };
            let (band, bit, digits) = board.choose_cell();
            let cell = 27 * band + bit.trailing_zeros() as usize;
            let mut total = 0;
            let mut rest = digits;
            while rest != 0 {
                let digit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let mut child = board;
                child.place(digit, band, bit);
                let found = count(&child);
                let mut cells = *grid.cells();
                cells[cell] = digit as u8 + 1;
                prop_assert_eq!(found, count_solutions(&cells, u64::MAX));
                total += found;
            }
            prop_assert_eq!(total, count(&board));
            prop_assert_eq!(total, count_solutions(grid.cells(), u64::MAX));
        }
    }

    #[test]
    fn tables_match_their_definitions() {
        assert_eq!(SEGMENTS_OF_ROW[0b000_000_001], 0b001);
        assert_eq!(SEGMENTS_OF_ROW[0b100_010_000], 0b110);
        // Only the identity permutation fits the diagonal.
        assert_eq!(PERMUTATION_CELLS[0b100_010_001], 0o700_070_007);
        // Two rows that both need box 0: no permutation.
        assert_eq!(PERMUTATION_CELLS[0b110_001_001], 0);
        // Everything open: everything stays.
        assert_eq!(PERMUTATION_CELLS[0b111_111_111], ALL);
        // Column 4 alone in box 1 closes it elsewhere; box 0 and 2 stay open.
        assert_eq!(
            COLUMN_KEEP[0b011_010_011],
            ALL & !((1 << 4) | (1 << 13) | (1 << 22))
        );
        assert_eq!(BAND_PEERS[0].count_ones(), 8 + 6);
        assert_eq!(COLUMN[8], (1 << 8) | (1 << 17) | (1 << 26));
    }
}
