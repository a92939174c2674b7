//! The canonical (minlex) form of a puzzle: [`canonical`].
//!
//! Of all the grids a puzzle becomes under the Sudoku symmetries (rows
//! permuted within bands, bands permuted, columns within stacks, stacks,
//! transposition, and digits relabelled), the canonical form is the one
//! whose 81 cells, row by row with `0` for blanks, read smallest. Two
//! puzzles have the same form exactly when one is a symmetric copy of the
//! other.
//!
//! # How
//!
//! The form is built row by row. For a fixed placement of rows and columns,
//! the smallest relabelling numbers digits by first appearance, so only the
//! rows and columns need choosing. A candidate ([`Node`]) is the grid or
//! its transpose, the rows placed so far, the digit numbering, and a set of
//! column orders that all show those rows alike. Each output row keeps only
//! the candidates whose row reads smallest, and merges candidates with the
//! same future (same rows left, columns and numbering).
//!
//! The set of column orders is kept lazily, through the columns that are
//! blank in every row placed so far. Those are interchangeable while they
//! stay blank (no digit's number depends on where they go), and any row
//! reads smaller with them in front, so a candidate's orders are:
//!
//! - the stacks blank so far fill the first output stacks, in any order;
//! - every other output stack shows a fixed input stack, whose columns
//!   blank so far fill its first output columns, in any order, and whose
//!   other columns are fixed.
//!
//! Reading a row refines this ([`Reader`]). The free stacks and columns
//! blank in the row stay free, at the front. Those with givens are placed
//! one output stack, then one output column, at a time, each taking only
//! the choices that read smallest there: a stack with the fewest givens
//! in the row, a column whose digit has the smallest number (a digit seen
//! before, or else any new digit, all new digits tying). Each tie is a
//! branch, and every branch becomes its own candidate, so the orders of a
//! candidate always read its rows alike. A branch is given up as soon as
//! it reads larger than the best reading so far; when one reads smaller,
//! it becomes the best and the candidates kept for the old one are
//! dropped.
//!
//! While every row so far is blank, a row's reading depends only on how
//! many givens each of its stacks has, so only the rows with the smallest
//! such reading ([`SPREAD`]) are read. Candidates made from one candidate
//! differ (in their row, or in a choice made reading it), as do those of
//! the grid and of its transpose, so merging is needed only when several
//! candidates of one grid were read.

use super::Grid;

/// The canonical form of `grid`: the smallest, read row by row with `0`
/// for blanks, of every grid it becomes under the Sudoku symmetries (see
/// the module docs). It has as many givens as `grid`, is a symmetric copy
/// of it, and is its own canonical form.
pub fn canonical(grid: &Grid) -> Grid {
    let cells = grid.cells();
    let flipped: [u8; 81] = TRANSPOSED.map(|i| cells[usize::from(i)]);
    let grids = [*cells, flipped];
    // Each row's givens, bit `c` for column `c`.
    let givens: [[u16; 9]; 2] = grids.map(|g| {
        let (rows, _) = g.as_chunks::<9>();
        std::array::from_fn(|r| given_bits(&rows[r]))
    });
    // How each row reads while the columns are all free.
    let spreads: [[u16; 9]; 2] = givens.map(|g| g.map(|row| SPREAD[usize::from(row)]));

    let mut nodes: Vec<Node> = Vec::with_capacity(32);
    nodes.extend([Node::start(0), Node::start(1)]);
    let mut next = Vec::with_capacity(32);
    let mut out = [0u8; 81];
    for level in 0..9 {
        next.clear();
        let mut reader = Reader {
            cells: [0; 9],
            givens: 0,
            best: [0; 9],
            known: 0,
            next: &mut next,
        };
        // While every row so far is blank (for one candidate, so for all),
        // a row's reading depends only on its pattern of givens: only the
        // rows with the smallest are read.
        let open = nodes.first().is_some_and(|node| node.blank_stacks == 0b111);
        let least = if open {
            nodes
                .iter()
                .flat_map(|node| {
                    let flip = usize::from(node.flip);
                    rows_of(node.next_rows(level)).map(move |row| spreads[flip][row])
                })
                .min()
                .unwrap_or(0)
        } else {
            0
        };
        for node in &nodes {
            let flip = usize::from(node.flip);
            let (rows, _) = grids[flip].as_chunks::<9>();
            for row in rows_of(node.next_rows(level)) {
                if open && spreads[flip][row] != least {
                    continue;
                }
                let child = Node {
                    used: node.used | 1 << row,
                    last: row as u8,
                    ..*node
                };
                reader.cells = rows[row];
                reader.givens = givens[flip][row];
                reader.read(child);
            }
        }
        out[level * 9..level * 9 + 9].copy_from_slice(&reader.best);
        // Merge candidates with the same future; `last` matters only through
        // its band, the band being filled. Those from one candidate differ
        // (in the row or in a choice made reading it), and so do those of
        // the two grids: only candidates from several of one grid can meet.
        let alike = match nodes.as_slice() {
            [_] => false,
            [a, b] => a.flip == b.flip,
            _ => true,
        };
        if alike && next.len() > 1 {
            for node in &mut next {
                node.last = node.last / 3 * 3;
            }
            next.sort_unstable();
            next.dedup();
        }
        std::mem::swap(&mut nodes, &mut next);
    }
    Grid::from_symmetric(out)
}

/// Cell `i` of the transposed grid is cell `TRANSPOSED[i]` of the grid.
const TRANSPOSED: [u8; 81] = {
    let mut table = [0u8; 81];
    let mut i = 0;
    while i < 81 {
        table[i] = (i % 9 * 9 + i / 9) as u8;
        i += 1;
    }
    table
};

/// The givens of a row, bit `c` for column `c`.
fn given_bits(cells: &[u8; 9]) -> u16 {
    cells
        .iter()
        .enumerate()
        .fold(0, |m, (c, &v)| m | u16::from(v != 0) << c)
}

/// The rows of a set of rows, one bit each.
fn rows_of(mut rows: u16) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let row = rows.trailing_zeros() as usize;
        rows &= rows.wrapping_sub(1);
        (row < 16).then_some(row)
    })
}

/// How a row with givens `g` (bit `c` for column `c`) reads while the
/// columns are all free, at `SPREAD[g]`: its pattern of givens at its best,
/// output column `j` at bit `8 - j`. The stacks come in rising order of
/// givens, blanks first in each; all its digits being new, it reads smaller
/// exactly when this number is smaller.
static SPREAD: [u16; 512] = {
    let mut table = [0u16; 512];
    let mut g = 0usize;
    while g < 512 {
        let (mut a, mut b, mut c) = (
            (g & 0b111).count_ones(),
            (g >> 3 & 0b111).count_ones(),
            (g >> 6).count_ones(),
        );
        // Sorted: a <= b <= c.
        if a > b {
            (a, b) = (b, a);
        }
        if b > c {
            (b, c) = (c, b);
        }
        if a > b {
            (a, b) = (b, a);
        }
        table[g] = ((1 << a) - 1) << 6 | ((1 << b) - 1) << 3 | ((1 << c) - 1);
        g += 1;
    }
    table
};

/// An output stack's input stack while it is still free.
const UNSET: u8 = u8::MAX;

/// [`Node::perm`] while every column is free: [`FREE`] nine times.
const ALL_FREE: u64 = 0xF_FFFF_FFFF;

/// An output column's input column in [`Node::perm`] while it is free.
const FREE: u64 = 0xF;

/// One way to build the form: which grid (as given or transposed), the
/// rows used so far, the digit numbering, and the column orders that show
/// the rows so far alike (see the module docs).
///
/// The column order and the numbering come first, packed four bits an
/// entry, so that sorting, which tells nodes apart mostly by them, compares
/// two integers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Node {
    /// Output column `j` shows input column `perm >> 4 * j & 0xF`; [`FREE`]
    /// for the free columns.
    perm: u64,
    /// Input digit `d` has number `map >> 4 * d & 0xF` in the form (0: not
    /// yet seen).
    map: u64,
    flip: u8,
    /// Input rows used so far, one bit each.
    used: u16,
    /// The input row placed last (its band is the band being filled).
    last: u8,
    /// The input stacks blank in every row so far, one bit each: they fill
    /// the first output stacks, in any order.
    blank_stacks: u8,
    /// Output stack `s` shows input stack `stack[s]`; [`UNSET`] for the
    /// first ones, filled by the blank stacks.
    stack: [u8; 3],
    /// For output stack `s`, the columns of its input stack blank in every
    /// row so far (bit `k` for the stack's column `k`): they fill its first
    /// output columns, in any order. All three for a blank stack.
    free: [u8; 3],
    /// Numbers given so far.
    label: u8,
}

impl Node {
    fn start(flip: u8) -> Node {
        Node {
            perm: ALL_FREE,
            map: 0,
            flip,
            used: 0,
            last: 0,
            blank_stacks: 0b111,
            stack: [UNSET; 3],
            free: [0b111; 3],
            label: 0,
        }
    }

    /// The input rows that may come at output row `level`, one bit each:
    /// the unused rows of the band being filled, or at a band's start, any
    /// row of an unused band.
    fn next_rows(&self, level: usize) -> u16 {
        if level.is_multiple_of(3) {
            (0..3)
                .map(|b| 0b111 << (3 * b))
                .filter(|band| self.used & band == 0)
                .fold(0, |m, band| m | band)
        } else {
            0b111 << (self.last / 3 * 3) & !self.used
        }
    }

    /// The number cell value `v` shows as: `0` for a blank, a new number
    /// for a digit not seen yet.
    fn number(&mut self, v: u8) -> u8 {
        if v == 0 {
            return 0;
        }
        let n = (self.map >> (4 * v) & 0xF) as u8;
        if n != 0 {
            return n;
        }
        self.label += 1;
        self.map |= u64::from(self.label) << (4 * v);
        self.label
    }

    /// [`Node::number`] without numbering a new digit.
    fn peek(&self, v: u8) -> u8 {
        match (v, (self.map >> (4 * v) & 0xF) as u8) {
            (0, _) => 0,
            (_, 0) => self.label + 1,
            (_, n) => n,
        }
    }

    /// The input column output column `pos` shows (not a free one).
    fn column(&self, pos: usize) -> usize {
        (self.perm >> (4 * pos) & FREE) as usize
    }

    /// Places input column `col` at output column `pos`, a free one.
    fn place(&mut self, pos: usize, col: usize) {
        self.perm = self.perm & !(FREE << (4 * pos)) | (col as u64) << (4 * pos);
    }
}

/// Reads one input row as the next output row for each candidate in turn,
/// keeping the best reading so far and the candidates that give it.
struct Reader<'a> {
    /// The input row being read.
    cells: [u8; 9],
    /// Its givens, bit `c` for column `c`.
    givens: u16,
    /// The smallest reading so far, its first `known` cells.
    best: [u8; 9],
    /// How many cells of `best` some branch has read; 9 once one has
    /// been kept.
    known: usize,
    /// The candidates that read as `best`.
    next: &'a mut Vec<Node>,
}

/// `rest` for [`Reader::walk`] when the output stack starting at `pos` is
/// still to be set up.
const SETUP: u8 = u8::MAX;

impl Reader<'_> {
    /// Adds to `next` every refinement of `node` that reads the row as the
    /// best so far (or better, then lowering `best`).
    fn read(&mut self, mut node: Node) {
        if node.blank_stacks == 0 && node.free == [0; 3] {
            // Every column placed: the row reads one way.
            for pos in 0..9 {
                let v = node.number(self.cells[node.column(pos)]);
                if !self.put(pos, v) {
                    return;
                }
            }
            self.next.push(node);
            return;
        }
        let given_stacks = (0..3).fold(0u8, |m, t| {
            m | u8::from(self.givens >> (3 * t) & 0b111 != 0) << t
        });
        // Blank stacks blank in the row too stay free, at the front.
        let pool = node.blank_stacks & given_stacks;
        node.blank_stacks &= !pool;
        let front = 3 * node.blank_stacks.count_ones() as usize;
        if self.blanks(0, front) {
            self.walk(node, front, front, pool, SETUP);
        }
    }

    /// Reads on from output column `pos` to the end of the row. `pool`
    /// holds the blank stacks with givens in the row, still to be placed.
    /// `rest` is [`SETUP`] at the start of an output stack; otherwise
    /// `pos` lies in the output stack ending at `end`, and `rest` holds
    /// the free columns with givens in the row still to be placed there,
    /// at `pos` on, before its fixed columns. A tie between choices reads
    /// each on in a branch (a recursive call).
    fn walk(&mut self, mut node: Node, mut pos: usize, mut end: usize, mut pool: u8, mut rest: u8) {
        loop {
            if rest == SETUP {
                if pos == 9 {
                    self.next.push(node);
                    return;
                }
                let s = pos / 3;
                if node.stack[s] == UNSET {
                    // A stack from the pool, with the fewest givens in the
                    // row: its blanks, all in front, read smaller.
                    let count = |t: u8| (self.givens >> (3 * t) & 0b111).count_ones();
                    let fewest = (0..3)
                        .filter(|&t| pool & 1 << t != 0)
                        .map(count)
                        .min()
                        .unwrap_or(0);
                    let mut ties = (0..3)
                        .filter(|&t| pool & 1 << t != 0 && count(t) == fewest)
                        .fold(0u8, |m, t| m | 1 << t);
                    while ties & (ties - 1) != 0 {
                        let t = ties.trailing_zeros() as u8;
                        ties &= ties - 1;
                        let mut child = node;
                        child.stack[s] = t;
                        self.walk(child, pos, end, pool & !(1 << t), SETUP);
                    }
                    let t = ties.trailing_zeros() as u8;
                    node.stack[s] = t;
                    pool &= !ties;
                }
                let t = node.stack[s];
                let free = node.free[s];
                let given = (self.givens >> (3 * t)) as u8 & free;
                let blank = free & !given;
                let start = pos + blank.count_ones() as usize;
                if !self.blanks(pos, start) {
                    return;
                }
                node.free[s] = blank;
                pos = start;
                end = 3 * s + 3;
                rest = given;
            }
            let first = usize::from(node.stack[end / 3 - 1]) * 3;
            while rest != 0 {
                // The free columns that show the smallest number here: one
                // with a digit numbered already, or any with a new digit.
                let shown: [u8; 3] = std::array::from_fn(|k| node.peek(self.cells[first + k]));
                let smallest = (0..3)
                    .filter(|&k| rest & 1 << k != 0)
                    .map(|k| shown[k])
                    .min()
                    .unwrap_or(0);
                if !self.put(pos, smallest) {
                    return;
                }
                let mut ties = (0..3)
                    .filter(|&k| rest & 1 << k != 0 && shown[k] == smallest)
                    .fold(0u8, |m, k| m | 1 << k);
                while ties != 0 {
                    let k = ties.trailing_zeros() as usize;
                    ties &= ties - 1;
                    let mut child = node;
                    child.place(pos, first + k);
                    child.number(self.cells[first + k]);
                    let left = rest & !(1 << k);
                    if ties == 0 {
                        node = child;
                        rest = left;
                    } else {
                        self.walk(child, pos + 1, end, pool, left);
                    }
                }
                pos += 1;
            }
            while pos < end {
                let v = node.number(self.cells[node.column(pos)]);
                if !self.put(pos, v) {
                    return;
                }
                pos += 1;
            }
            rest = SETUP;
        }
    }

    /// [`Reader::put`] of `0` at each of `from..to`.
    fn blanks(&mut self, from: usize, to: usize) -> bool {
        (from..to).all(|pos| self.put(pos, 0))
    }

    /// Shows `value` at output column `pos` of the branch being read, its
    /// cells before `pos` reading as `best`: `false` (give the branch up)
    /// when it reads larger there; when smaller, it becomes the best, and
    /// what was kept for the old best is dropped. (Nothing is kept while
    /// `known` is short of 9.)
    fn put(&mut self, pos: usize, value: u8) -> bool {
        if pos == self.known {
            self.best[pos] = value;
            self.known += 1;
            return true;
        }
        match value.cmp(&self.best[pos]) {
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => true,
            std::cmp::Ordering::Less => {
                self.best[pos] = value;
                self.known = pos + 1;
                self.next.clear();
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::tables::ORDERS;
    use crate::solver::tests::{puzzle, symmetry, unique_puzzle};
    use proptest::prelude::*;

    /// `cells` with digits renumbered by first appearance, row by row.
    fn relabelled(cells: &[u8; 81]) -> [u8; 81] {
        let mut map = [0u8; 10];
        let mut label = 0;
        cells.map(|v| {
            if v != 0 && map[usize::from(v)] == 0 {
                label += 1;
                map[usize::from(v)] = label;
            }
            map[usize::from(v)]
        })
    }

    /// The form the slow way: every copy under every symmetry (both
    /// grids, 6^4 row orders, 6^4 column orders), relabelled by first
    /// appearance, the smallest kept. Each copy is read only until it
    /// reads larger than the smallest so far.
    fn brute_force(grid: &Grid) -> [u8; 81] {
        let order = |n: usize| ORDERS[n % 6];
        // The four orders (bands or stacks, then within each) numbered
        // `n`, as a map from output line to input line.
        let lines = |n: usize| -> [usize; 9] {
            let outer = order(n);
            let inner = [order(n / 6), order(n / 36), order(n / 216)];
            std::array::from_fn(|i| outer[i / 3] * 3 + inner[i / 3][i % 3])
        };
        let cells = grid.cells();
        let mut best = [u8::MAX; 81];
        for flip in [false, true] {
            let source: [u8; 81] = std::array::from_fn(|i| {
                if flip {
                    cells[i % 9 * 9 + i / 9]
                } else {
                    cells[i]
                }
            });
            for r in 0..1296 {
                let rows = lines(r);
                for c in 0..1296 {
                    let cols = lines(c);
                    let mut copy = [0u8; 81];
                    let mut map = [0u8; 10];
                    let mut label = 0;
                    let mut below = false;
                    let mut larger = false;
                    for (i, slot) in copy.iter_mut().enumerate() {
                        let v = usize::from(source[rows[i / 9] * 9 + cols[i % 9]]);
                        if v != 0 && map[v] == 0 {
                            label += 1;
                            map[v] = label;
                        }
                        *slot = map[v];
                        if !below {
                            if *slot > best[i] {
                                larger = true;
                                break;
                            }
                            below = *slot < best[i];
                        }
                    }
                    if below && !larger {
                        best = copy;
                    }
                }
            }
        }
        best
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The form is what trying every symmetry finds, on puzzles with
        /// 17 to 40 givens and on minimal ones.
        #[test]
        fn the_form_is_the_brute_force_one(grid in puzzle(41..=64)) {
            prop_assert_eq!(*canonical(&grid).cells(), brute_force(&grid));
        }

        #[test]
        fn the_form_of_a_minimal_puzzle_is_the_brute_force_one(grid in unique_puzzle()) {
            prop_assert_eq!(*canonical(&grid).cells(), brute_force(&grid));
        }

        /// Near-full grids tie on many column orders; near-empty ones keep
        /// stacks and columns free for long.
        #[test]
        fn the_form_of_a_full_or_sparse_grid_is_the_brute_force_one(
            grid in prop_oneof![puzzle(0..=16), puzzle(65..=81)],
        ) {
            prop_assert_eq!(*canonical(&grid).cells(), brute_force(&grid));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Symmetric copies share the form; the form keeps the givens'
        /// count, is its own form, and no symmetric copy reads smaller.
        #[test]
        fn the_form_is_the_smallest_symmetric_copy(
            grid in puzzle(20..=70),
            a in symmetry(),
            b in symmetry(),
        ) {
            let form = canonical(&grid);
            let copy = Grid::from_cells(a.apply(grid.cells())).unwrap();
            prop_assert_eq!(canonical(&copy), form);
            prop_assert_eq!(form.givens(), grid.givens());
            prop_assert_eq!(canonical(&form), form);
            prop_assert!(form.cells() <= &relabelled(&b.apply(grid.cells())));
            prop_assert!(form.cells() <= &relabelled(&b.apply(form.cells())));
        }
    }

    #[test]
    fn the_empty_grid_is_its_own_form() {
        assert_eq!(canonical(&Grid::EMPTY), Grid::EMPTY);
    }

    #[test]
    fn a_single_given_becomes_a_1_in_the_last_cell() {
        let mut cells = [0u8; 81];
        cells[40] = 7;
        let form = canonical(&Grid::from_cells(cells).unwrap());
        let mut expected = [0u8; 81];
        expected[80] = 1;
        assert_eq!(form.cells(), &expected);
    }

    #[test]
    fn a_full_grid_starts_with_its_smallest_row() {
        let grid = Grid::parse(
            "534678912672195348198342567859761423426853791713924856961537284287419635345286179",
        )
        .unwrap();
        let form = canonical(&grid);
        assert_eq!(&form.cells()[..9], &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert!(form.is_complete());
        assert_eq!(canonical(&form), form);
    }
}
