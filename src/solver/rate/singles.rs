//! Singles: a full house, a hidden single (in a box, or in a line) and a
//! naked single, each placing a digit. Each step takes SE's first (boxes,
//! then columns, then rows; digits rising; cells in reading order).

use super::state::{Found, HOUSE_CELLS, HOUSES, Index, Pick, State, se_house_rank};

pub(super) fn full_house(state: &State, index: &Index, found: &mut Found) {
    let mut pick = Pick::new();
    for (house, &cells) in HOUSE_CELLS.iter().enumerate() {
        let left = cells & state.open_cells;
        if left.count_ones() == 1 {
            let cell = left.trailing_zeros() as usize;
            let cand = state.cand[cell];
            if cand.count_ones() == 1 {
                let d = cand.trailing_zeros() as usize;
                debug_assert!(index.places[house][d].count_ones() == 1);
                pick.offer(se_house_rank(house) * 9 + d as u64, |f| {
                    f.place(cell, d as u8 + 1)
                });
            }
        }
    }
    pick.finish(found);
}

pub(super) fn hidden_single(
    _: &State,
    index: &Index,
    found: &mut Found,
    houses: std::ops::Range<usize>,
) {
    let mut pick = Pick::new();
    for house in houses {
        for (d, &places) in index.places[house].iter().enumerate() {
            if places.count_ones() == 1 {
                let cell = HOUSES[house][places.trailing_zeros() as usize];
                pick.offer(se_house_rank(house) * 9 + d as u64, |f| {
                    f.place(usize::from(cell), d as u8 + 1)
                });
            }
        }
    }
    pick.finish(found);
}

pub(super) fn naked_single(state: &State, _: &Index, found: &mut Found) {
    if let Some((cell, &cand)) = state
        .cand
        .iter()
        .enumerate()
        .find(|(_, c)| c.count_ones() == 1)
    {
        found.place(cell, cand.trailing_zeros() as u8 + 1);
    }
}
