//! SE's "direct" techniques: an elimination pattern (pointing, claiming, a
//! hidden pair or triple) counted only when its eliminations leave a digit
//! one place in a house, and rated as the placement it leads to. The step
//! fills that place and nothing else: SE's direct hints carry no
//! eliminations (the pattern's candidates stay, and the pattern may serve
//! again). Each step takes SE's first such hint, in SE's scan order.

use super::locked::{box_line, line_locks};
use super::state::{
    ALL_HOUSES, Found, HOUSE_CELLS, HOUSES, HOUSES_OF, Index, Pick, State, bits, bits32,
    se_house_rank,
};
use super::subsets::subsets;

/// The box at band `band`, stack `stack`, as a house index.
fn box_house(band: usize, stack: usize) -> usize {
    18 + band * 3 + stack
}

/// A box confining a digit to one line: if, in another box along that
/// line, the digit then has one place left (it had more), that place is
/// filled; the line outside the box loses the digit. Only the `digits`
/// are searched (what one digit gives reads its own places alone).
pub(super) fn direct_pointing(_: &State, index: &Index, found: &mut Found, digits: u32) {
    let mut pick = Pick::new();
    for b in 0..9 {
        for d in bits(digits as u16 & 0x1FF) {
            let places = index.places[18 + b][d];
            let Some((line, _)) = box_line(b, places) else {
                continue;
            };
            // SE scans (box, column) pairs before (box, row) pairs.
            let pair = u64::from(line < 9);
            let others: [usize; 2] = if line < 9 {
                let s = b % 3;
                [(s + 1) % 3, (s + 2) % 3].map(|t| box_house(b / 3, t))
            } else {
                let band = b / 3;
                [(band + 1) % 3, (band + 2) % 3].map(|t| box_house(t, b % 3))
            };
            for other in others {
                let Some(cell) = single_outside(index, other, line, d) else {
                    continue;
                };
                let key = (((pair * 9 + d as u64) * 9 + b as u64) * 9 + (line % 9) as u64) * 9
                    + (other - 18) as u64;
                pick.offer(key, |f| f.place(cell, d as u8 + 1));
            }
        }
    }
    pick.finish(found);
}

/// A line confining a digit to one box: if, in another line of the same
/// kind through that box, the digit then has one place left (it had
/// more), that place is filled; the box outside the line loses the digit.
/// Only the `digits` are searched.
pub(super) fn direct_claiming(_: &State, index: &Index, found: &mut Found, digits: u32) {
    let mut pick = Pick::new();
    line_locks(index, digits as u16, |line, d, b| {
        let (kind, i) = (line / 9 * 9, line % 9);
        // SE scans (column, box) pairs before (row, box) pairs.
        let pair = u64::from(kind == 0);
        let base = kind + i / 3 * 3;
        for other in (base..base + 3).filter(|&l| l != line) {
            let Some(cell) = single_outside(index, other, 18 + b, d) else {
                continue;
            };
            let key =
                (((pair * 9 + d as u64) * 9 + i as u64) * 9 + b as u64) * 9 + (other % 9) as u64;
            pick.offer(key, |f| f.place(cell, d as u8 + 1));
        }
    });
    pick.finish(found);
}

/// If digit `d` has more than one place in `house` but only one outside
/// `cover`, that place.
fn single_outside(index: &Index, house: usize, cover: usize, d: usize) -> Option<usize> {
    let places = index.places[house][d];
    if places.count_ones() < 2 {
        return None;
    }
    let outside = places & !COVERED[house][cover];
    (outside.count_ones() == 1)
        .then(|| usize::from(HOUSES[house][outside.trailing_zeros() as usize]))
}

/// `COVERED[house][cover]`: bit `i` when the `house`'s `i`-th cell lies
/// in `cover` too.
static COVERED: [[u16; 27]; 27] = {
    let mut table = [[0u16; 27]; 27];
    let mut house = 0;
    while house < 27 {
        let mut i = 0;
        while i < 9 {
            let cell = HOUSES[house][i] as usize;
            let mut k = 0;
            while k < 3 {
                table[house][HOUSES_OF[cell][k] as usize] |= 1 << i;
                k += 1;
            }
            i += 1;
        }
        house += 1;
    }
    table
};

/// A hidden subset of `n` digits in a house with more than `n` empty
/// cells, whose eliminations leave another digit one place in the house
/// (it had more): that place is filled, and the subset's cells lose their
/// other digits. Only the `houses` are searched (what one house gives
/// reads its own places alone).
pub(super) fn direct_hidden_subset(
    state: &State,
    index: &Index,
    found: &mut Found,
    n: u32,
    houses: u32,
) {
    let mut pick = Pick::new();
    for house in bits32(houses & ALL_HOUSES) {
        let cells = &HOUSES[house];
        let empty = (HOUSE_CELLS[house] & state.open_cells).count_ones();
        if empty <= n {
            continue;
        }
        let items = &index.places[house];
        subsets(items, n, &mut |digits, places| {
            // SE places the lowest digit left with one place.
            let Some(d) = bits(!digits & 0x1FF).find(|&d| {
                let theirs = items[d];
                theirs.count_ones() > 1 && (theirs & !places).count_ones() == 1
            }) else {
                return;
            };
            let i = (items[d] & !places).trailing_zeros() as usize;
            pick.offer(se_house_rank(house) * 512 + u64::from(digits), |f| {
                f.place(usize::from(cells[i]), d as u8 + 1)
            });
        });
    }
    pick.finish(found);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table marks exactly the cells of a house that lie in the cover.
    #[test]
    fn covered_marks_the_cells_a_house_shares_with_the_cover() {
        for (cells, covered) in HOUSES.iter().zip(&COVERED) {
            for (cover, &marked) in covered.iter().enumerate() {
                for (i, &cell) in cells.iter().enumerate() {
                    let shared = HOUSES_OF[usize::from(cell)].contains(&(cover as u8));
                    assert_eq!(marked >> i & 1 != 0, shared, "{cells:?} {cover} {i}");
                }
            }
        }
    }
}
