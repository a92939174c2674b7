//! Locked candidates: pointing (a box confines a digit to one line) and
//! claiming (a line confines a digit to one box). Each step takes SE's
//! first, in SE's scan order.

use super::state::{Found, HOUSES, HOUSES_OF, Index, Pick, State, bits};

/// Per set of a box's places (bit `i` for row `i / 3`, column `i % 3` of
/// the box), two or more of them: `r` when they lie in the box's row `r`,
/// `3 + c` in its column `c`, else [`NO_LINE`].
const BOX_LINE: [u8; 512] = {
    let mut table = [NO_LINE; 512];
    let mut places = 0;
    while places < 512 {
        if (places as u32).count_ones() >= 2 {
            let mut k = 0;
            while k < 3 {
                if places & !(0b111 << (3 * k)) == 0 {
                    table[places] = k as u8;
                }
                if places & !(0b1001001 << k) == 0 {
                    table[places] = 3 + k as u8;
                }
                k += 1;
            }
        }
        places += 1;
    }
    table
};

/// No line holds the places.
const NO_LINE: u8 = u8::MAX;

/// The line of the grid holding all of a digit's `places` (two or more)
/// in box `b`, and the box's positions along that line, if one does.
pub(super) fn box_line(b: usize, places: u16) -> Option<(usize, u16)> {
    let k = usize::from(BOX_LINE[usize::from(places)]);
    match k {
        0..3 => Some((b / 3 * 3 + k, 0b111 << (3 * (b % 3)))),
        3..6 => Some((9 + b % 3 * 3 + (k - 3), 0b111 << (3 * (b / 3)))),
        _ => None,
    }
}

/// A digit's places in a box all in one row (column) of the box: the rest
/// of that row (column) loses it. Only the `digits` are searched (what
/// one digit gives reads its own places alone).
pub(super) fn pointing(state: &State, index: &Index, found: &mut Found, digits: u32) {
    let mut pick = Pick::new();
    for b in 0..9 {
        for d in bits(digits as u16 & 0x1FF) {
            let places = index.places[18 + b][d];
            let Some((line, within)) = box_line(b, places) else {
                continue;
            };
            if index.places[line][d] & !within == 0 {
                // The line has the digit nowhere else: nothing to remove.
                continue;
            }
            // SE scans (box, column) pairs before (box, row) pairs.
            let pair = u64::from(line < 9);
            let key = ((pair * 9 + d as u64) * 9 + b as u64) * 9 + (line % 9) as u64;
            pick.offer(key, |f| {
                for &cell in &HOUSES[line] {
                    if usize::from(HOUSES_OF[usize::from(cell)][2]) != 18 + b {
                        f.eliminate(state, usize::from(cell), 1 << d);
                    }
                }
            });
        }
    }
    pick.finish(found);
}

/// Each digit of `digits` in a row or column whose places there, two or
/// more, lie in one box: `visit(line, digit, box)`, the box numbered
/// `0..9`, lines in index order and digits rising.
pub(super) fn line_locks(index: &Index, digits: u16, mut visit: impl FnMut(usize, usize, usize)) {
    for (line, places) in index.places[..18].iter().enumerate() {
        for d in bits(digits & 0x1FF) {
            let places = places[d];
            // A line's places read as a box's: one third of the line is
            // one row of that table.
            let third = BOX_LINE[usize::from(places)];
            if third >= 3 {
                continue;
            }
            let third = usize::from(third);
            let b = if line < 9 {
                line / 3 * 3 + third
            } else {
                third * 3 + (line - 9) / 3
            };
            visit(line, d, b);
        }
    }
}

/// A digit's places in a row (column) all in one box: the rest of that box
/// loses it. Only the `digits` are searched.
pub(super) fn claiming(state: &State, index: &Index, found: &mut Found, digits: u32) {
    let mut pick = Pick::new();
    line_locks(index, digits as u16, |line, d, b| {
        // The line's positions within the box: its row or column there.
        let within = if line < 9 {
            0b111 << (3 * (line % 3))
        } else {
            0b1001001 << ((line - 9) % 3)
        };
        if index.places[18 + b][d] & !within == 0 {
            // The box has the digit nowhere else: nothing to remove.
            return;
        }
        // SE scans (column, box) pairs before (row, box) pairs.
        let pair = u64::from(line < 9);
        let key = ((pair * 9 + d as u64) * 9 + (line % 9) as u64) * 9 + b as u64;
        pick.offer(key, |f| {
            for &cell in &HOUSES[18 + b] {
                if !HOUSES_OF[usize::from(cell)].contains(&(line as u8)) {
                    f.eliminate(state, usize::from(cell), 1 << d);
                }
            }
        });
    });
    pick.finish(found);
}
