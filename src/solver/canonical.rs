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
//! rows and columns need choosing. Each output row keeps only the
//! candidates (grid or transpose, rows so far, column order, digit
//! numbering) whose row reads smallest, and merges candidates with the
//! same future (same rows left, columns and numbering). Blank rows leave
//! the columns free; the first row with a given fixes them up to the
//! orders that show it at its best: with blanks as `0` and digits numbered
//! as they appear, a row reads smaller exactly when its pattern of blanks
//! does, and the best pattern puts the stacks in rising order of givens,
//! blanks first within each, so only those orders are enumerated.

use super::Grid;
use super::tables::ORDERS;

/// The canonical form of `grid`: the smallest, read row by row with `0`
/// for blanks, of every grid it becomes under the Sudoku symmetries (see
/// the module docs). It has as many givens as `grid`, is a symmetric copy
/// of it, and is its own canonical form.
pub fn canonical(grid: &Grid) -> Grid {
    let cells = grid.cells();
    let flipped: [u8; 81] = std::array::from_fn(|i| cells[i % 9 * 9 + i / 9]);
    let grids = [*cells, flipped];

    let mut nodes: Vec<Node> = (0..2).map(Node::start).collect();
    let mut next = Vec::with_capacity(64);
    let mut out = [0u8; 81];
    for level in 0..9 {
        next.clear();
        let mut best = [u8::MAX; 9];
        for node in &nodes {
            let (rows, _) = grids[usize::from(node.flip)].as_chunks::<9>();
            for row in node.next_rows(level) {
                let cells = &rows[row];
                let mut child = Node {
                    used: node.used | 1 << row,
                    last: row as u8,
                    ..*node
                };
                let line = if node.perm[0] == UNSET {
                    // The columns are still free: the row's best pattern.
                    pattern(cells).0
                } else {
                    // Most candidates read larger than the best within a
                    // few cells: they stop there.
                    match child.read_within(cells, &best) {
                        Some(line) => line,
                        None => continue,
                    }
                };
                if line > best {
                    continue;
                }
                if line < best {
                    best = line;
                    next.clear();
                }
                if node.perm[0] != UNSET || line == [0; 9] {
                    next.push(child);
                } else {
                    // The first row with a given fixes the columns up to
                    // the orders that give it its best pattern.
                    column_orders(cells, |perm| {
                        let mut child = Node { perm, ..child };
                        child.read(cells);
                        next.push(child);
                    });
                }
            }
        }
        out[level * 9..level * 9 + 9].copy_from_slice(&best);
        if next.len() > 1 {
            // Merge candidates with the same future; `last` matters only
            // through its band, the band being filled.
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

/// `perm[0]` of a node whose columns are not chosen yet.
const UNSET: u8 = u8::MAX;

/// One way to build the form: which grid (as given or transposed), the
/// rows used so far, the column order, and the digit numbering.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Node {
    flip: u8,
    /// Input rows used so far, one bit each.
    used: u16,
    /// The input row placed last (its band is the band being filled).
    last: u8,
    /// Output column `j` shows input column `perm[j]`; [`UNSET`] while
    /// every row so far is blank.
    perm: [u8; 9],
    /// Input digit to its number in the form (0: not yet seen).
    map: [u8; 10],
    /// Numbers given so far.
    label: u8,
}

impl Node {
    fn start(flip: u8) -> Node {
        Node {
            flip,
            used: 0,
            last: 0,
            perm: [UNSET; 9],
            map: [0; 10],
            label: 0,
        }
    }

    /// The input rows that may come at output row `level`: the unused rows
    /// of the band being filled, or at a band's start, any row of an
    /// unused band.
    fn next_rows(&self, level: usize) -> impl Iterator<Item = usize> + use<> {
        let rows: u16 = if level.is_multiple_of(3) {
            (0..3)
                .map(|b| 0b111 << (3 * b))
                .filter(|band| self.used & band == 0)
                .fold(0, |m, band| m | band)
        } else {
            0b111 << (self.last / 3 * 3) & !self.used
        };
        (0..9).filter(move |r| rows & (1 << r) != 0)
    }

    /// The input row `cells` as the form shows it: columns in the node's
    /// order, digits numbered, new digits numbered as they appear.
    /// [`Node::read`], given up (`None`) as soon as the row reads larger
    /// than `best`.
    fn read_within(&mut self, cells: &[u8; 9], best: &[u8; 9]) -> Option<[u8; 9]> {
        let mut line = [0u8; 9];
        let mut below = false;
        for (i, &col) in self.perm.iter().enumerate() {
            let v = usize::from(cells[usize::from(col)]);
            if v != 0 {
                if self.map[v] == 0 {
                    self.label += 1;
                    self.map[v] = self.label;
                }
                line[i] = self.map[v];
            }
            if !below {
                if line[i] > best[i] {
                    return None;
                }
                below = line[i] < best[i];
            }
        }
        Some(line)
    }

    fn read(&mut self, cells: &[u8; 9]) -> [u8; 9] {
        let mut line = [0u8; 9];
        for (out, &col) in line.iter_mut().zip(&self.perm) {
            let v = usize::from(cells[usize::from(col)]);
            if v != 0 {
                if self.map[v] == 0 {
                    self.label += 1;
                    self.map[v] = self.label;
                }
                *out = self.map[v];
            }
        }
        line
    }
}

/// A row's best look when the columns are free, and its givens per stack.
/// With blanks as `0` and digits numbered as they appear, a row reads
/// smaller exactly when its pattern of blanks does, and the best pattern
/// puts the stacks in rising order of givens, blanks first in each.
fn pattern(cells: &[u8; 9]) -> ([u8; 9], [usize; 3]) {
    let counts: [usize; 3] =
        std::array::from_fn(|s| cells[s * 3..s * 3 + 3].iter().filter(|&&v| v != 0).count());
    let mut sorted = counts;
    sorted.sort_unstable();
    let mut line = [0u8; 9];
    let mut label = 0;
    for (s, &k) in sorted.iter().enumerate() {
        for slot in &mut line[s * 3 + 3 - k..s * 3 + 3] {
            label += 1;
            *slot = label;
        }
    }
    (line, counts)
}

/// Calls `visit` with every column order (output column to input column)
/// that shows `cells` with its best pattern.
fn column_orders(cells: &[u8; 9], mut visit: impl FnMut([u8; 9])) {
    let counts = pattern(cells).1;
    let given = |col: usize| cells[col] != 0;
    // Orders of each stack's columns with blanks first.
    let within: [Vec<[u8; 3]>; 3] = std::array::from_fn(|s| {
        ORDERS
            .iter()
            .filter(|o| (0..2).all(|k| given(s * 3 + o[k]) <= given(s * 3 + o[k + 1])))
            .map(|o| o.map(|k| (s * 3 + k) as u8))
            .collect()
    });
    for stacks in ORDERS
        .iter()
        .filter(|o| counts[o[0]] <= counts[o[1]] && counts[o[1]] <= counts[o[2]])
    {
        for a in &within[stacks[0]] {
            for b in &within[stacks[1]] {
                for c in &within[stacks[2]] {
                    visit([a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2]]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::tests::{puzzle, symmetry};
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
