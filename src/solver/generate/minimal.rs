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
//!
//! Checks near one another in the pass share most of their givens, so
//! they start from one propagated board ([`Start`]): that of the givens of
//! the first of them less the orbits up to [`REACH`] past its run, with
//! the givens a check keeps and it lacks placed on it.

use rand::seq::SliceRandom;
use rand::{Rng, RngExt};

use crate::solver::search::Board;

/// Every cell of the grid, as a cell set.
pub(super) const ALL_CELLS: u128 = (1 << 81) - 1;

/// How many orbits the pass first tries to remove at once: the opening
/// runs of a full grid almost always keep the solution unique.
const FIRST_RUN: usize = 32;

/// A random solution grid, row by row, digits `1..=9`: the three diagonal
/// boxes filled at random (no two share a house; a filling that does not
/// complete is drawn again), completed by [`first_completion`], then moved
/// by a random symmetry of the Sudoku (rows within bands, bands, columns
/// within stacks, stacks, transposition).
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
        let Ok(board) = Board::new(&cells) else {
            continue; // unreachable: the diagonal boxes share no house
        };
        if let Some(solved) = first_completion(board) {
            return shuffle(&solved.solution(), rng);
        }
    }
}

/// The first solution of `board` in a depth-first search that branches on
/// [`Board::first_fewest`] and tries the lower digit first.
pub(super) fn first_completion(mut board: Board) -> Option<Board> {
    board.propagate().ok()?;
    if board.is_solved() {
        return Some(board);
    }
    let (cell, mut digits) = board.first_fewest();
    while digits != 0 {
        let digit = digits.trailing_zeros() as usize;
        digits &= digits - 1;
        let mut child = board;
        child.place_at(cell, digit);
        if let Some(solved) = first_completion(child) {
            return Some(solved);
        }
        board.eliminate_at(cell, digit);
    }
    None
}

/// `grid` under a random symmetry of the Sudoku.
fn shuffle(grid: &[u8; 81], rng: &mut impl Rng) -> [u8; 81] {
    Moves::random(rng).grid(grid)
}

/// A symmetry of the Sudoku: rows within bands and bands, columns within
/// stacks and stacks, then transposition. It keeps every house a house and
/// every box a box, so it carries a solution grid to a solution grid and a
/// pattern of boxes, rows and columns to one of the same shape.
pub(super) struct Moves {
    rows: [usize; 9],
    cols: [usize; 9],
    transpose: bool,
}

impl Moves {
    /// A random symmetry: the rows' order, the columns', then whether to
    /// transpose, drawn in that order.
    pub(super) fn random(rng: &mut impl Rng) -> Moves {
        Moves::drawn(rng, lines)
    }

    /// A random symmetry that commutes with the half turn, so a set of
    /// cells the half turn keeps stays so: bands 0 and 2 swapped or not,
    /// the rows of the first in a random order and those of the last in
    /// the mirrored order, the middle band's outer rows swapped or not;
    /// the same for columns; then whether to transpose.
    pub(super) fn random_half_turn(rng: &mut impl Rng) -> Moves {
        Moves::drawn(rng, half_turn_lines)
    }

    /// The rows' order, then the columns', each drawn by `order`, then
    /// whether to transpose.
    fn drawn<R: Rng>(rng: &mut R, order: fn(&mut R) -> [usize; 9]) -> Moves {
        let rows = order(rng);
        let cols = order(rng);
        let transpose = rng.random_bool(0.5);
        Moves {
            rows,
            cols,
            transpose,
        }
    }

    /// A random symmetry that carries a set of cells the reflection top to
    /// bottom keeps to one it keeps: the rows as for the half turn
    /// ([`Moves::random_half_turn`]), any order of the columns, no
    /// transpose. With `transpose`, to one the reflection left to right
    /// keeps: transposed, so the grid's columns are read from the
    /// mirrored order and its rows from the other.
    pub(super) fn random_mirror(rng: &mut impl Rng, transpose: bool) -> Moves {
        let (mirrored, other) = (half_turn_lines(rng), lines(rng));
        let (rows, cols) = if transpose {
            (other, mirrored)
        } else {
            (mirrored, other)
        };
        Moves {
            rows,
            cols,
            transpose,
        }
    }

    /// A random symmetry that commutes with the transpose, so a set of
    /// cells the transpose keeps stays so: one random order for the rows
    /// and the columns alike, then whether to transpose. With `flip`, the
    /// rows are then read bottom up, which carries a set the transpose
    /// keeps to one the anti-diagonal reflection keeps.
    pub(super) fn random_transpose(rng: &mut impl Rng, flip: bool) -> Moves {
        let cols = lines(rng);
        let mut rows = cols;
        if flip {
            rows.reverse();
        }
        let transpose = rng.random_bool(0.5);
        Moves {
            rows,
            cols,
            transpose,
        }
    }

    /// The cell that cell `i` of a moved grid comes from.
    fn source(&self, i: usize) -> usize {
        let (r, c) = (self.rows[i / 9], self.cols[i % 9]);
        if self.transpose { 9 * c + r } else { 9 * r + c }
    }

    /// `grid` moved.
    pub(super) fn grid(&self, grid: &[u8; 81]) -> [u8; 81] {
        std::array::from_fn(|i| grid[self.source(i)])
    }

    /// The cell set `cells` moved, where [`Moves::grid`] moves its cells.
    pub(super) fn cells(&self, cells: u128) -> u128 {
        (0..81)
            .filter(|&i| cells >> self.source(i) & 1 == 1)
            .fold(0, |set, i| set | 1 << i)
    }
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

/// An order of the lines for [`Moves::random_half_turn`]: line `8 - i`
/// comes from the mirror of where line `i` comes from.
fn half_turn_lines(rng: &mut impl Rng) -> [usize; 9] {
    let outer = if rng.random_bool(0.5) { 6 } else { 0 };
    let mut inner = [0, 1, 2];
    inner.shuffle(rng);
    let mut lines = [0usize; 9];
    for (k, &i) in inner.iter().enumerate() {
        lines[k] = outer + i;
        lines[8 - k] = 8 - (outer + i);
    }
    let middle = if rng.random_bool(0.5) { 3 } else { 5 };
    lines[3] = middle;
    lines[4] = 4;
    lines[5] = 8 - middle;
    lines
}

/// The puzzle of `solution` with the givens `keep` (bit `i` for cell `i`).
pub(super) fn puzzle_of(solution: &[u8; 81], keep: u128) -> [u8; 81] {
    // A multiply, not a branch: the loop vectorizes.
    std::array::from_fn(|i| solution[i] * (keep >> i & 1) as u8)
}

/// A solution grid, as digits and as a solved board.
struct Known {
    digits: [u8; 81],
    board: Board,
}

impl Known {
    fn new(solution: &[u8; 81]) -> Known {
        // Unreachable fallback: a solution's cells never clash.
        let board = Board::new(solution).unwrap_or_else(|_| Board::from_candidates(&[0; 81]));
        Known {
            digits: *solution,
            board,
        }
    }
}

/// How many orbits past a check's run its start board leaves out, so that
/// the checks of the next few orbits can start from the same board. Of 2
/// to 6 and 8, 4 did the fewest instructions: a shorter reach makes start
/// boards more often, a longer one leaves each check more givens to place
/// and propagate.
const REACH: usize = 4;

/// The propagated board of some givens of the known solution, from which
/// the checks of the next few orbits start ([`Checks::board_without`]).
///
/// Invariant: `board` is what [`Board::propagate`] makes of
/// [`Board::with_givens`] of `givens` (or, should that ever fail, which
/// givens of a solution cannot, that board unpropagated). A check whose
/// givens hold `givens` may start from it, with its other givens placed:
/// every candidate `board` lacks, the check's givens rule out too (they
/// are more), and placing the rest lets propagation draw what they add,
/// so the fixpoint is the one of the check's own fresh board.
struct Start {
    givens: u128,
    board: Board,
}

impl Start {
    fn new(known: &Known, givens: u128) -> Start {
        let fresh = Board::with_givens(&known.board, givens);
        let mut board = fresh;
        if board.propagate().is_err() {
            board = fresh; // unreachable, see the invariant
        }
        Start { givens, board }
    }

    /// Whether the givens `rest` keep the solution unique without
    /// `removed`, as this board alone shows: it may serve them (its givens
    /// are among `rest`) and has every cell of `removed` fixed. Then
    /// propagation from `rest` fixes them too, so `rest` has the solutions
    /// of `rest` and `removed`, that is one.
    fn fixes(&self, rest: u128, removed: u128) -> bool {
        self.givens & !rest == 0 && removed & self.board.unsolved_cells() == 0
    }
}

/// The uniqueness checks of one removal pass: the known solution, and the
/// board the checks start from while they stay near the same orbits.
struct Checks {
    known: Known,
    start: Option<Start>,
}

impl Checks {
    fn new(solution: &[u8; 81]) -> Checks {
        Checks {
            known: Known::new(solution),
            start: None,
        }
    }

    /// Whether the solution stays the only solution of `keep` once
    /// `removed` (one or more orbits) is removed from it: `Ok`, or the
    /// cells where another solution differs. `after` holds the orbits the
    /// pass has not decided yet that follow `removed`, in its order. Any
    /// other solution differs from the known one inside `removed` (it
    /// would otherwise keep every given of `keep`, whose solution is
    /// unique), so for one cell the search starts without its digit.
    fn unique_without(&mut self, keep: u128, removed: u128, after: &[u128]) -> Result<(), u128> {
        let Some(mut board) = self.board_without(keep, removed, after) else {
            return Ok(());
        };
        if removed.count_ones() == 1 {
            let cell = removed.trailing_zeros() as usize;
            board.eliminate_at(cell, usize::from(self.known.digits[cell] - 1));
        }
        match another(&mut board, &self.known) {
            None => Ok(()),
            Some(differs) => Err(differs),
        }
    }

    /// Whether the start board as it is shows that removing `removed`
    /// from `keep` keeps the solution unique ([`Start::fixes`]).
    fn start_fixes(&self, keep: u128, removed: u128) -> bool {
        self.start
            .as_ref()
            .is_some_and(|start| start.fixes(keep & !removed, removed))
    }

    /// The board of the givens `keep` without `removed`, not yet
    /// propagated: the start board with the givens it lacks placed, or
    /// `None` when the start board already fixes every cell of `removed`
    /// (the solution stays unique). A start board that has a given of
    /// `removed` is made again, without the first [`REACH`] orbits of
    /// `after` either, so that the next checks, which the pass makes on
    /// those orbits, start from it too.
    fn board_without(&mut self, keep: u128, removed: u128, after: &[u128]) -> Option<Board> {
        let rest = keep & !removed;
        let start = match &mut self.start {
            Some(start) if start.givens & !rest == 0 => start,
            slot => {
                let reach = union(&after[..REACH.min(after.len())]);
                slot.insert(Start::new(&self.known, rest & !reach))
            }
        };
        if start.fixes(rest, removed) {
            return None;
        }
        let mut board = start.board;
        let mut missing = rest & !start.givens;
        while missing != 0 {
            let cell = missing.trailing_zeros() as usize;
            missing &= missing - 1;
            board.place_at(cell, usize::from(self.known.digits[cell] - 1));
        }
        Some(board)
    }
}

/// The cells of `orbits`, as one cell set.
fn union(orbits: &[u128]) -> u128 {
    orbits.iter().fold(0, |m, &o| m | o)
}

/// The cells where some solution of the givens `keep` of `solution`
/// differs from `solution`, or `None` when `solution` is their only one.
pub(super) fn other_solution(solution: &[u8; 81], keep: u128) -> Option<u128> {
    let known = Known::new(solution);
    another(&mut Board::with_givens(&known.board, keep), &known)
}

/// The cells where a solution of `board` other than the known one differs
/// from it, if `board` has one. A depth-first search like
/// [`first_completion`]'s, but at each choice it tries the digits that
/// differ from the known solution first: another solution, when there is
/// one, lies off the known one, which is met at most once, last.
fn another(board: &mut Board, known: &Known) -> Option<u128> {
    board.propagate().ok()?;
    if board.is_solved() {
        let differs = board.cells_differing(&known.board);
        return (differs != 0).then_some(differs);
    }
    let (cell, digits) = board.first_fewest();
    let digit_known = usize::from(known.digits[cell] - 1);
    let mut others = digits & !(1 << digit_known);
    while others != 0 {
        let digit = others.trailing_zeros() as usize;
        others &= others - 1;
        let mut child = *board;
        child.place_at(cell, digit);
        if let Some(found) = another(&mut child, known) {
            return Some(found);
        }
        board.eliminate_at(cell, digit);
    }
    if digits >> digit_known & 1 == 0 {
        return None;
    }
    board.place_at(cell, digit_known);
    another(board, known)
}

/// Removes orbits of `keep` in the order of `orbits` while `solution`
/// stays unique (see the module docs), never taking the count of givens
/// below `floor`. Returns the givens left; with a `floor` of 0 the result
/// is minimal for the orbits.
///
/// When removing a run of orbits lets another solution in, the orbits of
/// the run it differs in bound where the first orbit that must stay can
/// be: removing a prefix of the run that holds all of them lets the same
/// solution in.
pub(super) fn remove(solution: &[u8; 81], mut keep: u128, orbits: &[u128], floor: u32) -> u128 {
    // Sets of cells some other solution differs in: removing every given
    // of one lets that solution in.
    let mut unavoidable = line_swaps(solution);
    unavoidable.extend(digit_swaps(solution));
    let mut checks = Checks::new(solution);
    // Whether removing the first `len` orbits of `upcoming` keeps the
    // solution unique, or the length of the run's shortest prefix that
    // lets another solution in.
    let mut check = |unavoidable: &mut Vec<u128>, keep: u128, upcoming: &[u128], len: usize| {
        let run = &upcoming[..len];
        let removed = union(run);
        if (keep & !removed).count_ones() < floor {
            return Err(run.len());
        }
        // The shortest prefix of the run that holds every orbit the other
        // solution differs in.
        let bound = |differs: u128| {
            run.iter()
                .rposition(|&o| o & differs != 0)
                .map_or(run.len(), |last| last + 1)
        };
        // The start board's answer first: a bit test, where the list is
        // a scan.
        if checks.start_fixes(keep, removed) {
            return Ok(());
        }
        let rest = keep & !removed;
        if let Some(&known) = unavoidable.iter().find(|&&u| u & rest == 0) {
            return Err(bound(known));
        }
        checks
            .unique_without(keep, removed, &upcoming[len..])
            .map_err(|differs| {
                if run.len() > 1 {
                    unavoidable.push(differs);
                }
                bound(differs)
            })
    };
    let mut at = 0;
    let mut run = FIRST_RUN;
    while at < orbits.len() {
        let len = run.min(orbits.len() - at);
        let mut bad = match check(&mut unavoidable, keep, &orbits[at..], len) {
            Ok(()) => {
                keep &= !union(&orbits[at..at + len]);
                at += len;
                run += 1;
                continue;
            }
            Err(bad) => bad,
        };
        // Removing the first `good` orbits keeps the solution unique and
        // removing the first `bad` does not: halve until they meet, then
        // the orbit after the first `good` stays.
        let mut good = 0;
        while bad - good > 1 {
            let mid = (good + bad) / 2;
            match check(&mut unavoidable, keep, &orbits[at..], mid) {
                Ok(()) => good = mid,
                Err(shorter) => bad = shorter.min(mid),
            }
        }
        keep &= !union(&orbits[at..at + good]);
        // That orbit stays for good: a set holding it is never empty again.
        let stays = orbits[at + good];
        unavoidable.retain(|&u| u & stays == 0);
        at += good + 1;
        run = 1;
    }
    keep
}

/// The cells of the rows (or, spread one column apart, of the cells of
/// column 0) in a 9-bit mask: bit `k` of `m` becomes the 9 cells of row
/// `k` in `ROW_CELLS[m]`, and cell `9 * k` in `COLUMN_CELLS[m]`.
static ROW_CELLS: [u128; 512] = spread(0x1FF);
static COLUMN_CELLS: [u128; 512] = spread(1);

const fn spread(line: u128) -> [u128; 512] {
    let mut out = [0u128; 512];
    let mut m = 0;
    while m < 512 {
        let mut k = 0;
        while k < 9 {
            if m >> k & 1 == 1 {
                out[m] |= line << (9 * k);
            }
            k += 1;
        }
        m += 1;
    }
    out
}

/// Unavoidable sets of `solution` read off pairs of rows in one band (and
/// of columns in one stack): where the two rows hold the same digits on a
/// set of columns, swapping the rows' digits there keeps every row, column
/// and box whole (each box holds both cells of a column it meets). Each
/// cycle of the columns' permutation gives one set; two-cycles are the
/// rectangles `a b / b a`.
fn line_swaps(solution: &[u8; 81]) -> Vec<u128> {
    // For rows: digit[r][k], the digit at column k of row r, and
    // place[r][d], the column of digit d in row r; for columns the same
    // with rows and columns exchanged.
    let mut digit = [[[0u8; 9]; 9]; 2];
    let mut place = [[[0u8; 9]; 9]; 2];
    for (cell, &value) in solution.iter().enumerate() {
        let (r, c, d) = (cell / 9, cell % 9, value.max(1) - 1);
        digit[0][r][c] = d;
        digit[1][c][r] = d;
        place[0][r][usize::from(d)] = c as u8;
        place[1][c][usize::from(d)] = r as u8;
    }
    let mut sets = Vec::with_capacity(128);
    for (transposed, (digit, place)) in digit.iter().zip(&place).enumerate() {
        for first in 0..9 {
            let band_end = (first / 3 + 1) * 3;
            for (second, places) in place.iter().enumerate().take(band_end).skip(first + 1) {
                // The position in `second` of the digit at each position
                // of `first`: a permutation without fixed points (a
                // digit is once in each column, or row).
                let next: [u8; 9] = std::array::from_fn(|k| places[usize::from(digit[first][k])]);
                let mut left: u16 = 0x1FF;
                while left != 0 {
                    let start = left.trailing_zeros() as usize;
                    let (mut k, mut cycle) = (start, 0usize);
                    loop {
                        cycle |= 1 << k;
                        k = usize::from(next[k]);
                        if k == start {
                            break;
                        }
                    }
                    left &= !(cycle as u16);
                    if cycle.count_ones() >= 2 {
                        sets.push(if transposed == 0 {
                            (cycle as u128) << (9 * first) | (cycle as u128) << (9 * second)
                        } else {
                            COLUMN_CELLS[cycle] << first | COLUMN_CELLS[cycle] << second
                        });
                    }
                }
            }
        }
    }
    sets
}

/// Unavoidable sets of `solution` read off pairs of digits: swapping two
/// digits `a` and `b` on a set of the cells holding them keeps every house
/// whole when each house holds both of its `a` and `b` cells in the set or
/// neither. The smallest such sets are the connected parts of the graph
/// that joins the `a` and the `b` cell of each row, column and box.
fn digit_swaps(solution: &[u8; 81]) -> Vec<u128> {
    // For digit d: its cells, its column and box in each row, and its row
    // in each column and box.
    let mut cells = [0u128; 9];
    let mut column_in_row = [[0u8; 9]; 9];
    let mut box_in_row = [[0u8; 9]; 9];
    let mut row_in_column = [[0u8; 9]; 9];
    let mut row_in_box = [[0u8; 9]; 9];
    for (cell, &digit) in solution.iter().enumerate() {
        let (r, c, d) = (cell / 9, cell % 9, usize::from(digit.max(1) - 1));
        let b = 3 * (r / 3) + c / 3;
        cells[d] |= 1 << cell;
        column_in_row[d][r] = c as u8;
        box_in_row[d][r] = b as u8;
        row_in_column[d][c] = r as u8;
        row_in_box[d][b] = r as u8;
    }
    let mut sets = Vec::with_capacity(96);
    for a in 0..9 {
        for b in a + 1..9 {
            // A set holds whole rows (both cells of a row or neither), so
            // its rows are closed under two permutations of the rows: from
            // row r to the row of b in the column, and in the box, of a's
            // cell in r. (Their inverses, from b's cell, need no step of
            // their own: a permutation's orbits are closed under it alone.)
            let next: [u16; 9] = std::array::from_fn(|r| {
                1 << row_in_column[b][usize::from(column_in_row[a][r])]
                    | 1 << row_in_box[b][usize::from(box_in_row[a][r])]
            });
            let pair = cells[a] | cells[b];
            let mut left: u16 = 0x1FF;
            while left != 0 {
                // Breadth first: each row's successors are added once.
                let mut rows: u16 = 1 << left.trailing_zeros();
                let mut frontier = rows;
                while frontier != 0 {
                    let mut grown = 0;
                    while frontier != 0 {
                        grown |= next[frontier.trailing_zeros() as usize];
                        frontier &= frontier - 1;
                    }
                    frontier = grown & !rows;
                    rows |= grown;
                }
                left &= !rows;
                // Both digits' every cell: too large to be emptied early
                // enough to spare a check.
                if rows != 0x1FF {
                    sets.push(pair & ROW_CELLS[usize::from(rows)]);
                }
            }
        }
    }
    sets
}

/// `orbits` in a random order, the order the removal pass visits them.
pub(super) fn random_order(orbits: &[u128], rng: &mut impl Rng) -> Vec<u128> {
    let mut order = orbits.to_vec();
    order.shuffle(rng);
    order
}

#[cfg(test)]
mod tests {
    use super::super::Symmetry;
    use super::*;
    use crate::solver::reference::count_solutions;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    /// Checks that `moves` is a Sudoku symmetry (a random solution grid
    /// stays one) and carries every orbit of `from` to a set `to` keeps.
    fn check_moves(moves: &Moves, rng: &mut impl Rng, from: Symmetry, to: Symmetry) {
        let grid = moves.grid(&random_grid(rng));
        assert_eq!(count_solutions(&grid, 2), 1);
        for orbit in from.orbits() {
            assert!(to.holds(moves.cells(orbit)), "{from:?} to {to:?}");
        }
    }

    #[test]
    fn half_turn_moves_keep_the_half_turn() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut images = 0u128;
        for _ in 0..500 {
            let moves = Moves::random_half_turn(&mut rng);
            check_moves(&moves, &mut rng, Symmetry::Central, Symmetry::Central);
            images |= moves.cells(1);
        }
        // Cell 0 goes to every cell of the four corner boxes.
        let corners = (0..81)
            .filter(|&c| ![3, 4, 5].contains(&(c / 9)) && ![3, 4, 5].contains(&(c % 9)))
            .fold(0u128, |set, c| set | 1 << c);
        assert_eq!(images, corners);
    }

    #[test]
    fn mirror_and_transpose_moves_keep_their_reflection() {
        // A set the reflection top to bottom (the transpose) keeps goes to
        // one the symmetry keeps.
        let mut rng = ChaCha8Rng::seed_from_u64(10);
        for (transpose, to) in [(false, Symmetry::Horizontal), (true, Symmetry::Vertical)] {
            for _ in 0..100 {
                let moves = Moves::random_mirror(&mut rng, transpose);
                check_moves(&moves, &mut rng, Symmetry::Horizontal, to);
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for (flip, to) in [(false, Symmetry::Diagonal), (true, Symmetry::Antidiagonal)] {
            for _ in 0..100 {
                let moves = Moves::random_transpose(&mut rng, flip);
                check_moves(&moves, &mut rng, Symmetry::Diagonal, to);
            }
        }
    }

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
    fn digit_swaps_are_unavoidable_and_pair_two_digits() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        for _ in 0..20 {
            let solution = random_grid(&mut rng);
            let sets = digit_swaps(&solution);
            for set in sets {
                assert!(set.count_ones() % 2 == 0 && set.count_ones() < 18);
                let digits = (0..81)
                    .filter(|&i| set >> i & 1 == 1)
                    .fold(0u16, |m, i| m | 1 << solution[i]);
                assert_eq!(digits.count_ones(), 2);
                let puzzle = puzzle_of(&solution, ALL_CELLS & !set);
                assert_eq!(count_solutions(&puzzle, 2), 2, "{set:x} is unavoidable");
            }
        }
    }

    #[test]
    fn line_swaps_are_unavoidable_and_pair_two_lines() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        for _ in 0..20 {
            let solution = random_grid(&mut rng);
            let sets = line_swaps(&solution);
            for set in sets {
                let cells = (0..81).filter(|&i| set >> i & 1 == 1);
                let rows = cells.clone().fold(0u16, |m, i| m | 1 << (i / 9));
                let columns = cells.fold(0u16, |m, i| m | 1 << (i % 9));
                assert!(rows.count_ones() == 2 || columns.count_ones() == 2);
                let puzzle = puzzle_of(&solution, ALL_CELLS & !set);
                assert_eq!(count_solutions(&puzzle, 2), 2, "{set:x} is unavoidable");
            }
        }
    }

    #[test]
    fn runs_remove_exactly_what_one_at_a_time_removes() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let orbits: Vec<u128> = (0..81).map(|i| 1u128 << i).collect();
        for _ in 0..20 {
            let solution = random_grid(&mut rng);
            let order = random_order(&orbits, &mut rng);
            let fast = remove(&solution, ALL_CELLS, &order, 0);
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
