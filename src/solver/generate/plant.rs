//! Solution grids planted with a trivalue oddagon ("tridagon"), where the
//! search for the hardest bands starts.
//!
//! The pattern: four boxes at the corners of a rectangle of boxes (two
//! bands, two stacks), and in each of them three cells, one in each of the
//! box's rows and columns. Number the three cells of a box by their row in
//! it: the column each goes to is a permutation of three, even or odd.
//! When the four permutations have an odd parity in all, no three digits
//! can fill the twelve cells: a box's three cells hold the three digits,
//! each row of a band meets two of the boxes and each column of a stack
//! two, and those constraints, followed round the rectangle, contradict
//! the odd parity. So in a grid where eleven of the cells hold three digits,
//! the twelfth (the guardian) holds another.
//!
//! A puzzle on such a grid whose givens leave the twelve cells blank and
//! give few of the three digits must prove the guardian, and for the
//! rating that takes chains within chains (Sudoku Explainer's nested
//! forcing chains, 9.5 and up). Random minimal puzzles essentially never
//! need them; the search that climbs from these grids reaches them in
//! seconds (BENCHMARKS.md, "Hard bands").

use rand::seq::SliceRandom;
use rand::{Rng, RngExt};

use super::Symmetry;
use super::minimal::{Moves, first_completion};
use crate::solver::search::Board;
use crate::solver::tables::ORDERS;

/// Whether order `p` of [`ORDERS`] is odd. An arrangement of a box's three
/// cells is an order: the column in the box of the cell in each of its rows.
fn odd(p: usize) -> bool {
    let [a, b, c] = ORDERS[p];
    (usize::from(a > b) + usize::from(a > c) + usize::from(b > c)) % 2 == 1
}

/// Where the pattern goes, for the puzzle's symmetry ([`Planted::random`]).
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Free,
    HalfTurn,
    /// Six cells added by the reflection top to bottom; `transpose`: then
    /// transposed (left to right).
    Mirror {
        transpose: bool,
    },
    /// Its own transpose; `flip`: then rows read bottom up (its own
    /// anti-diagonal reflection).
    Transpose {
        flip: bool,
    },
}

/// A solution grid with a tridagon, its twelve cells and its three digits.
pub(super) struct Planted {
    /// Digits `1..=9`, row by row.
    pub(super) solution: [u8; 81],
    /// The pattern's twelve cells, bit `i` for cell `i`.
    pub(super) pattern: u128,
    /// The three digits eleven of the cells hold: bit `d` for digit `d`.
    pub(super) digits: u16,
}

impl Planted {
    /// A random planted grid: the pattern in boxes 0, 1, 3 and 4 with
    /// random cell arrangements of odd parity in all, a random guardian,
    /// random digits for the other eleven (the first arrangement, in a
    /// random order, that no row or column forbids) and a random box 8
    /// (which shares no row or column with them), completed by the first
    /// solution of a search and moved by a random symmetry of the Sudoku.
    /// A draw that does not complete is drawn again.
    ///
    /// The layout suits the puzzle's `symmetry`, so that its orbits
    /// through the pattern, which stay blank, add few cells to it:
    /// - a symmetry that holds the half turn: the pattern cannot be its
    ///   own half turn (the only rectangle of boxes it keeps is the four
    ///   corners, and there it pairs arrangements of equal parity). So
    ///   the pattern is in boxes 0, 1, 6 and 7, box 7's cells the half
    ///   turn of box 1's: the half turn adds six cells (in boxes 2 and
    ///   8), not twelve. Box 5 is the free box;
    /// - a reflection top to bottom (or left to right): no more its own
    ///   image than under the half turn (a box and its mirror pair
    ///   arrangements of opposite parity, so two such pairs are even). So
    ///   the pattern is in boxes 0, 1, 6 and 7 again, box 6's cells the
    ///   mirror of box 0's: the reflection adds four cells. The parity
    ///   being odd in all, boxes 1 and 7 hold arrangements of the same
    ///   parity, so each meets the other's mirror (of the other parity)
    ///   in exactly one cell. The grid is transposed for left to right;
    /// - the reflection in either diagonal: the pattern is its own image.
    ///   Boxes 0 and 4 each keep their cells under the transpose (an
    ///   arrangement that is its own inverse), and box 3's are box 1's
    ///   transposed (the inverse arrangement, of the same parity);
    /// - otherwise any layout, moved by any symmetry of the Sudoku.
    ///
    /// The moves then keep the puzzle's symmetry ([`Moves`]).
    pub(super) fn random(rng: &mut impl Rng, symmetry: Symmetry) -> Planted {
        let layout = if symmetry.has_half_turn() {
            Layout::HalfTurn
        } else {
            match symmetry {
                Symmetry::Horizontal => Layout::Mirror { transpose: false },
                Symmetry::Vertical => Layout::Mirror { transpose: true },
                Symmetry::Diagonal => Layout::Transpose { flip: false },
                Symmetry::Antidiagonal => Layout::Transpose { flip: true },
                _ => Layout::Free,
            }
        };
        loop {
            if let Some(planted) = Planted::draw(rng, layout) {
                return planted;
            }
        }
    }

    fn draw(rng: &mut impl Rng, layout: Layout) -> Option<Planted> {
        let mut arrangement: [usize; 4] = std::array::from_fn(|_| rng.random_range(0..6));
        let inverse = |p: usize| {
            let order = ORDERS[p];
            let mut back = [0; 3];
            for (i, &k) in order.iter().enumerate() {
                back[k] = i;
            }
            ORDERS.iter().position(|&o| o == back)
        };
        match layout {
            Layout::Free => {}
            Layout::HalfTurn => {
                // Box 7's row `2 - i` holds the half turn of box 1's row `i`.
                let one = ORDERS[arrangement[1]];
                let seven = std::array::from_fn(|i| 2 - one[2 - i]);
                arrangement[3] = ORDERS.iter().position(|&o| o == seven)?;
            }
            Layout::Mirror { .. } => {
                // Box 6's row `2 - i` holds the mirror of box 0's row `i`.
                let zero = ORDERS[arrangement[0]];
                let six = std::array::from_fn(|i| zero[2 - i]);
                arrangement[2] = ORDERS.iter().position(|&o| o == six)?;
            }
            Layout::Transpose { .. } => {
                if inverse(arrangement[0])? != arrangement[0]
                    || inverse(arrangement[3])? != arrangement[3]
                {
                    return None;
                }
                arrangement[2] = inverse(arrangement[1])?;
            }
        }
        if arrangement.iter().filter(|&&p| odd(p)).count() % 2 == 0 {
            return None;
        }
        // Box `b` of the four is in band `b / 2` (bands 0 and 2 for the
        // half turn and the mirrors) and stack `b % 2`; the cell of its
        // row `i`.
        let outer = matches!(layout, Layout::HalfTurn | Layout::Mirror { .. });
        let band = |b: usize| if outer { 2 * (b / 2) } else { b / 2 };
        let cell =
            |b: usize, i: usize| 9 * (3 * band(b) + i) + 3 * (b % 2) + ORDERS[arrangement[b]][i];
        let guardian = rng.random_range(0..12);
        let mut digits: [u8; 9] = std::array::from_fn(|d| d as u8 + 1);
        digits.shuffle(rng);
        let mut fillings: Vec<usize> = (0..6 * 6 * 6 * 6).collect();
        fillings.shuffle(rng);
        let mut cells = fillings.into_iter().find_map(|filling| {
            let mut cells = [0u8; 81];
            let mut filling_of = filling;
            for b in 0..4 {
                let order = ORDERS[filling_of % 6];
                filling_of /= 6;
                for (i, &k) in order.iter().enumerate() {
                    if 3 * b + i != guardian {
                        cells[cell(b, i)] = digits[k];
                    }
                }
            }
            Board::new(&cells).is_ok().then_some(cells)
        })?;
        let mut eighth: [u8; 9] = std::array::from_fn(|d| d as u8 + 1);
        eighth.shuffle(rng);
        // The box that shares no row or column with the four: 8, or 5.
        let free = if outer { 33 } else { 60 };
        for (k, digit) in eighth.into_iter().enumerate() {
            cells[free + 9 * (k / 3) + k % 3] = digit;
        }
        let solved = first_completion(Board::new(&cells).ok()?)?;
        let pattern = (0..12).fold(0u128, |set, k| set | 1 << cell(k / 3, k % 3));
        let moves = match layout {
            Layout::Free => Moves::random(rng),
            Layout::HalfTurn => Moves::random_half_turn(rng),
            Layout::Mirror { transpose } => Moves::random_mirror(rng, transpose),
            Layout::Transpose { flip } => Moves::random_transpose(rng, flip),
        };
        Some(Planted {
            solution: moves.grid(&solved.solution()),
            pattern: moves.cells(pattern),
            digits: digits[..3].iter().fold(0, |set, &d| set | 1 << d),
        })
    }

    /// The cells whose digit is none of the three.
    pub(super) fn other_digits(&self) -> u128 {
        (0..81)
            .filter(|&c| self.digits >> self.solution[c] & 1 == 0)
            .fold(0, |set, c| set | 1 << c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    /// Whether three digits can fill the twelve cells of `pattern` with no
    /// two alike in a row, column or box: a box's cells hold all three, so
    /// each box takes one of the six orders, and the four are tried.
    fn fillable(pattern: u128) -> bool {
        let cells: Vec<usize> = (0..81).filter(|&c| pattern >> c & 1 == 1).collect();
        let boxes: Vec<Vec<usize>> = {
            let mut by_box: Vec<Vec<usize>> = vec![Vec::new(); 9];
            for &c in &cells {
                by_box[c / 27 * 3 + c % 9 / 3].push(c);
            }
            by_box.into_iter().filter(|b| !b.is_empty()).collect()
        };
        assert_eq!(boxes.len(), 4);
        (0..6 * 6 * 6 * 6).any(|filling: usize| {
            let mut digit = [9usize; 81];
            let mut f = filling;
            for b in &boxes {
                for (i, &c) in b.iter().enumerate() {
                    digit[c] = ORDERS[f % 6][i];
                }
                f /= 6;
            }
            cells.iter().all(|&x| {
                cells
                    .iter()
                    .all(|&y| x == y || digit[x] != digit[y] || (x / 9 != y / 9 && x % 9 != y % 9))
            })
        })
    }

    /// Checks that `planted` is a solution grid holding a tridagon with
    /// one guardian, and returns the guardian's cell.
    fn check_planted(planted: &Planted) -> usize {
        let grid = &planted.solution;
        // A solution grid: every house holds each digit once.
        for house in 0..27 {
            let digits = (0..81)
                .filter(|&c| match house / 9 {
                    0 => c / 9 == house,
                    1 => c % 9 == house % 9,
                    _ => c / 27 * 3 + c % 9 / 3 == house % 9,
                })
                .fold(0u16, |set, c| set | 1 << grid[c]);
            assert_eq!(digits, 0x3FE, "{grid:?}");
        }
        // Twelve cells, three in each of four boxes at the corners of a
        // rectangle, one in each row and column of their box.
        let cells: Vec<usize> = (0..81).filter(|&c| planted.pattern >> c & 1 == 1).collect();
        assert_eq!(cells.len(), 12);
        let bands: std::collections::BTreeSet<usize> = cells.iter().map(|c| c / 27).collect();
        let stacks: std::collections::BTreeSet<usize> = cells.iter().map(|c| c % 9 / 3).collect();
        assert_eq!((bands.len(), stacks.len()), (2, 2));
        let rows: std::collections::BTreeSet<usize> = cells.iter().map(|c| c / 9).collect();
        let cols: std::collections::BTreeSet<usize> = cells.iter().map(|c| c % 9).collect();
        assert_eq!((rows.len(), cols.len()), (6, 6));
        for &x in &cells {
            let same_line = cells
                .iter()
                .filter(|&&y| y != x && y / 27 == x / 27 && y % 9 / 3 == x % 9 / 3)
                .filter(|&&y| y / 9 == x / 9 || y % 9 == x % 9)
                .count();
            assert_eq!(same_line, 0, "two cells of a box share a line");
        }
        // No three digits fill them; eleven hold the three digits.
        assert!(!fillable(planted.pattern));
        assert_eq!(planted.digits.count_ones(), 3);
        let guardians: Vec<usize> = cells
            .iter()
            .copied()
            .filter(|&c| planted.digits >> grid[c] & 1 == 0)
            .collect();
        assert_eq!(guardians.len(), 1, "{grid:?}");
        assert_eq!(planted.other_digits() & planted.pattern, 1 << guardians[0]);
        assert_eq!(planted.other_digits().count_ones(), 81 - 27);
        guardians[0]
    }

    /// The box of `cell`, as a bit.
    fn box_bit(cell: usize) -> u16 {
        1 << (cell / 27 * 3 + cell % 9 / 3)
    }

    #[test]
    fn planted_grids_hold_a_tridagon_and_its_guardian() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut guardian_boxes = 0u16;
        for _ in 0..100 {
            guardian_boxes |= box_bit(check_planted(&Planted::random(&mut rng, Symmetry::None)));
        }
        // The symmetry moves the pattern over the whole grid.
        assert_eq!(guardian_boxes, 0x1FF);
    }

    #[test]
    fn symmetric_plants_add_few_cells_to_the_pattern() {
        // The orbits through the pattern stay blank: the half turn adds
        // six cells to the twelve, a reflection top to bottom or left to
        // right four, a diagonal reflection none.
        for (symmetry, blank_cells, boxes) in [
            (Symmetry::Central, 18, 0x1FF & !(1 << 4)),
            // Bands 0 and 2 (top to bottom), stacks 0 and 2 (left to right).
            (Symmetry::Horizontal, 16, 0b111_000_111),
            (Symmetry::Vertical, 16, 0b101_101_101),
            (Symmetry::Diagonal, 12, 0x1FF),
            (Symmetry::Antidiagonal, 12, 0x1FF),
        ] {
            let orbits = symmetry.orbits();
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let mut guardian_boxes = 0u16;
            for _ in 0..100 {
                let planted = Planted::random(&mut rng, symmetry);
                guardian_boxes |= box_bit(check_planted(&planted));
                let blank = orbits
                    .iter()
                    .filter(|&&o| o & planted.pattern != 0)
                    .fold(0u128, |set, &o| set | o);
                assert_eq!(blank.count_ones(), blank_cells, "{symmetry:?}");
            }
            // The moves keep the symmetry and move the pattern over every
            // box it can reach (the half turn never puts one in the
            // centre, which it keeps).
            assert_eq!(guardian_boxes, boxes, "{symmetry:?}");
        }
    }

    #[test]
    fn half_the_arrangements_cannot_be_filled() {
        // The parity rule against the direct test, for every arrangement
        // of the four boxes 0, 1, 3 and 4.
        let mut unfillable = 0;
        for a in 0..6 * 6 * 6 * 6 {
            let arrangement = [a % 6, a / 6 % 6, a / 36 % 6, a / 216];
            let pattern = (0..12).fold(0u128, |set, k| {
                let (b, i) = (k / 3, k % 3);
                set | 1 << (9 * (3 * (b / 2) + i) + 3 * (b % 2) + ORDERS[arrangement[b]][i])
            });
            let odd_in_all = arrangement.iter().filter(|&&p| odd(p)).count() % 2 == 1;
            assert_eq!(fillable(pattern), !odd_in_all, "{arrangement:?}");
            unfillable += usize::from(odd_in_all);
        }
        assert_eq!(unfillable, 648);
    }
}
