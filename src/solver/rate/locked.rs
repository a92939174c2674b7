//! Locked candidates: pointing (a box confines a digit to one line) and
//! claiming (a line confines a digit to one box). Each step takes SE's
//! first, in SE's scan order.

use super::state::{Found, HOUSES, HOUSES_OF, Index, Pick, State};

/// A digit's places in a box all in one row (column) of the box: the rest
/// of that row (column) loses it.
pub(super) fn pointing(state: &State, index: &Index, found: &mut Found) {
    let mut pick = Pick::new();
    for b in 0..9 {
        for (d, &places) in index.places[18 + b].iter().enumerate() {
            if places.count_ones() < 2 {
                continue;
            }
            // Box position i is row i / 3, column i % 3 of the box.
            let rows = (0..3).filter(|r| places & (0b111 << (3 * r)) != 0);
            let cols = (0..3).filter(|c| places & (0b1001001 << c) != 0);
            let line = match (rows.clone().count(), cols.clone().count()) {
                (1, _) => rows.clone().next().map(|r| b / 3 * 3 + r),
                (_, 1) => cols.clone().next().map(|c| 9 + b % 3 * 3 + c),
                _ => None,
            };
            if let Some(line) = line {
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
    }
    pick.finish(found);
}

/// Each digit of a row or column whose places there, two or more, lie in
/// one box: `(line, digit, box)`, the box numbered `0..9`, lines in index
/// order and digits rising.
pub(super) fn line_locks(index: &Index) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    (0..18).flat_map(move |line| {
        index.places[line]
            .iter()
            .enumerate()
            .filter(|&(_, &places)| places.count_ones() >= 2)
            .filter_map(move |(d, &places)| {
                let third = (0..3).find(|k| places & !(0b111 << (3 * k)) == 0)?;
                let b = if line < 9 {
                    line / 3 * 3 + third
                } else {
                    third * 3 + (line - 9) / 3
                };
                Some((line, d, b))
            })
    })
}

/// A digit's places in a row (column) all in one box: the rest of that box
/// loses it.
pub(super) fn claiming(state: &State, index: &Index, found: &mut Found) {
    let mut pick = Pick::new();
    for (line, d, b) in line_locks(index) {
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
    }
    pick.finish(found);
}
