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
//! rows and columns need choosing. The first row of the form is the input
//! row (of the grid or its transpose) whose givens can be pushed furthest
//! right: with blanks as `0` and the digits numbered as they appear, a row
//! reads smaller exactly when its pattern of blanks does, so the best first
//! rows and every column order that gives them their best pattern (stacks
//! by rising count of givens, blanks first within a stack) are enumerated.
//! Each later row keeps only the candidates (rows so far, column order,
//! digit numbering) whose next row reads smallest; candidates with the same
//! future (same rows left, columns, numbering) are merged.

use super::Grid;

/// The canonical form of `grid`: the smallest, read row by row with `0`
/// for blanks, of every grid it becomes under the Sudoku symmetries (see
/// the module docs). It has as many givens as `grid`, is a symmetric copy
/// of it, and is its own canonical form.
pub fn canonical(grid: &Grid) -> Grid {
    let cells = grid.cells();
    let flipped: [u8; 81] = std::array::from_fn(|i| cells[i % 9 * 9 + i / 9]);
    let grids = [*cells, flipped];

    let mut nodes = first_rows(&grids);
    let mut next = Vec::with_capacity(nodes.len());
    let mut out = [0u8; 81];
    out[..9].copy_from_slice(&nodes[0].row);
    for level in 1..9 {
        next.clear();
        let mut best = [u8::MAX; 9];
        for node in &nodes {
            let g = &grids[usize::from(node.flip)];
            for row in node.next_rows(level) {
                let mut map = node.map;
                let mut label = node.label;
                let mut line = [0u8; 9];
                for (j, out) in line.iter_mut().enumerate() {
                    let v = usize::from(g[row * 9 + usize::from(node.perm[j])]);
                    if v != 0 {
                        if map[v] == 0 {
                            label += 1;
                            map[v] = label;
                        }
                        *out = map[v];
                    }
                }
                if line > best {
                    continue;
                }
                if line < best {
                    best = line;
                    next.clear();
                }
                next.push(Node {
                    used: node.used | 1 << row,
                    last: row as u8,
                    map,
                    label,
                    ..*node
                });
            }
        }
        out[level * 9..level * 9 + 9].copy_from_slice(&best);
        if next.len() > 1 {
            // Merge candidates with the same future; `last` matters only
            // through the rows it leaves, so normalise it to its band.
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

/// One way to build the form: which grid (as given or transposed), the
/// rows used so far, the column order, and the digit numbering.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Node {
    flip: u8,
    /// Input rows used so far, one bit each.
    used: u16,
    /// The input row placed last (its band is the band being filled).
    last: u8,
    /// Output column `j` shows input column `perm[j]`.
    perm: [u8; 9],
    /// Input digit to its number in the form (0: not yet seen).
    map: [u8; 10],
    /// Numbers given so far.
    label: u8,
    /// The node's first row of the form (only read at level 0).
    row: [u8; 9],
}

impl Node {
    /// The input rows that may come at output row `level`: the unused rows
    /// of the band being filled, or at a band's start, any row of an
    /// unused band.
    fn next_rows(&self, level: usize) -> impl Iterator<Item = usize> + '_ {
        let band = usize::from(self.last) / 3;
        (0..9).filter(move |&r| {
            if self.used & (1 << r) != 0 {
                return false;
            }
            if level % 3 == 0 {
                self.used & (0b111 << (r / 3 * 3)) == 0
            } else {
                r / 3 == band
            }
        })
    }
}

/// The six orders of three things.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];

/// The candidates for the form's first row: every (grid, row) whose best
/// pattern of blanks is the smallest, with every column order that gives
/// it that pattern.
fn first_rows(grids: &[[u8; 81]; 2]) -> Vec<Node> {
    // Best pattern of a row: stacks by rising count of givens, each stack
    // blanks first; as a number, read from the left, smaller is better.
    let pattern = |g: &[u8; 81], r: usize| -> (u16, [u32; 3]) {
        let counts: [u32; 3] =
            std::array::from_fn(|s| (0..3).filter(|&k| g[r * 9 + s * 3 + k] != 0).count() as u32);
        let mut sorted = counts;
        sorted.sort_unstable();
        let bits = sorted
            .iter()
            .fold(0u16, |acc, &k| acc << 3 | ((1u16 << k) - 1));
        (bits, counts)
    };
    let mut best = u16::MAX;
    for g in grids {
        for r in 0..9 {
            best = best.min(pattern(g, r).0);
        }
    }
    let mut nodes = Vec::new();
    for (flip, g) in grids.iter().enumerate() {
        for r in 0..9 {
            let (bits, counts) = pattern(g, r);
            if bits != best {
                continue;
            }
            let given = |col: usize| g[r * 9 + col] != 0;
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
                            let perm = [a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2]];
                            let mut node = Node {
                                flip: flip as u8,
                                used: 1 << r,
                                last: r as u8,
                                perm,
                                map: [0; 10],
                                label: 0,
                                row: [0; 9],
                            };
                            for j in 0..9 {
                                let v = usize::from(g[r * 9 + usize::from(perm[j])]);
                                if v != 0 {
                                    node.label += 1;
                                    node.map[v] = node.label;
                                    node.row[j] = node.label;
                                }
                            }
                            nodes.push(node);
                        }
                    }
                }
            }
        }
    }
    nodes
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
