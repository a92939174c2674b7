//! SE's "direct" techniques: an elimination pattern (pointing, claiming, a
//! hidden pair or triple) counted only when its eliminations leave a digit
//! one place in a house, and rated as the placement it leads to. The step
//! makes the eliminations and fills that place.

use super::state::{Found, HOUSES, HOUSES_OF, Index, State, bits};
use super::subsets::subsets;

/// The box at band `band`, stack `stack`, as a house index.
fn box_house(band: usize, stack: usize) -> usize {
    18 + band * 3 + stack
}

/// A box confining a digit to one line: if, in another box along that
/// line, the digit then has one place left (it had more), that place is
/// filled; the line outside the box loses the digit.
pub(super) fn direct_pointing(state: &State, index: &Index, found: &mut Found) {
    for b in 0..9 {
        for (d, &places) in index.places[18 + b].iter().enumerate() {
            if places.count_ones() < 2 {
                continue;
            }
            let line = if let Some(r) = (0..3).find(|r| places & !(0b111 << (3 * r)) == 0) {
                b / 3 * 3 + r
            } else if let Some(c) = (0..3).find(|c| places & !(0b1001001 << c) == 0) {
                9 + b % 3 * 3 + c
            } else {
                continue;
            };
            let others: [usize; 2] = if line < 9 {
                let s = b % 3;
                [(s + 1) % 3, (s + 2) % 3].map(|t| box_house(b / 3, t))
            } else {
                let band = b / 3;
                [(band + 1) % 3, (band + 2) % 3].map(|t| box_house(t, b % 3))
            };
            let mut hit = false;
            for other in others {
                hit |= single_outside(state, index, found, other, line, d);
            }
            if hit {
                for &cell in &HOUSES[line] {
                    if usize::from(HOUSES_OF[usize::from(cell)][2]) != 18 + b {
                        found.eliminate(state, usize::from(cell), 1 << d);
                    }
                }
            }
        }
    }
}

/// A line confining a digit to one box: if, in another line of the same
/// kind through that box, the digit then has one place left (it had
/// more), that place is filled; the box outside the line loses the digit.
pub(super) fn direct_claiming(state: &State, index: &Index, found: &mut Found) {
    for line in 0..18 {
        for (d, &places) in index.places[line].iter().enumerate() {
            if places.count_ones() < 2 {
                continue;
            }
            let Some(third) = (0..3).find(|k| places & !(0b111 << (3 * k)) == 0) else {
                continue;
            };
            let (kind, i) = (line / 9 * 9, line % 9);
            let b = if kind == 0 {
                box_house(i / 3, third)
            } else {
                box_house(third, i / 3)
            };
            let base = kind + i / 3 * 3;
            let mut hit = false;
            for other in (base..base + 3).filter(|&l| l != line) {
                hit |= single_outside(state, index, found, other, b, d);
            }
            if hit {
                for &cell in &HOUSES[b] {
                    if !HOUSES_OF[usize::from(cell)].contains(&(line as u8)) {
                        found.eliminate(state, usize::from(cell), 1 << d);
                    }
                }
            }
        }
    }
}

/// If digit `d` has more than one place in `house` but only one outside
/// `cover`, places it there; whether it did.
fn single_outside(
    state: &State,
    index: &Index,
    found: &mut Found,
    house: usize,
    cover: usize,
    d: usize,
) -> bool {
    let places = index.places[house][d];
    if places.count_ones() < 2 {
        return false;
    }
    let mut outside = bits(places)
        .map(|i| usize::from(HOUSES[house][i]))
        .filter(|&cell| !HOUSES_OF[cell].contains(&(cover as u8)));
    match (outside.next(), outside.next()) {
        (Some(cell), None) => {
            debug_assert!(state.cand[cell] & (1 << d) != 0);
            found.place(cell, d as u8 + 1);
            true
        }
        _ => false,
    }
}

/// A hidden subset of `n` digits in a house with more than `n` empty
/// cells, whose eliminations leave another digit one place in the house
/// (it had more): that place is filled, and the subset's cells lose their
/// other digits.
pub(super) fn direct_hidden_subset(state: &State, index: &Index, found: &mut Found, n: u32) {
    for (house, cells) in HOUSES.iter().enumerate() {
        let empty = cells
            .iter()
            .filter(|&&c| state.value[usize::from(c)] == 0)
            .count();
        if empty <= n as usize {
            continue;
        }
        let items = &index.places[house];
        subsets(items, n, &mut |digits, places| {
            let mut hit = false;
            for d in bits(!digits & 0x1FF) {
                let theirs = items[d];
                if theirs.count_ones() > 1 && (theirs & !places).count_ones() == 1 {
                    let i = (theirs & !places).trailing_zeros() as usize;
                    found.place(usize::from(cells[i]), d as u8 + 1);
                    hit = true;
                }
            }
            if hit {
                for i in bits(places) {
                    found.eliminate(state, usize::from(cells[i]), !digits & 0x1FF);
                }
            }
        });
    }
}
