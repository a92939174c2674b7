//! Singles: a full house, a hidden single (in a box, or in a line) and a
//! naked single, each placing a digit. Each step takes SE's first (boxes,
//! then columns, then rows; digits rising; cells in reading order).

use super::state::{Found, HOUSE_CELLS, HOUSES, Index, PEERS, State, has, se_house_rank};

/// The houses in SE's order (boxes, then columns, then rows): the order
/// of [`se_house_rank`], so the first house with a single holds SE's.
const SE_ORDER: [usize; 27] = {
    let mut order = [0; 27];
    let mut house = 0;
    while house < 27 {
        order[se_house_rank(house) as usize] = house;
        house += 1;
    }
    order
};

pub(super) fn full_house(state: &State, index: &Index, found: &mut Found) {
    // One digit per house at most: the first house in SE's order is SE's.
    for house in SE_ORDER {
        let left = HOUSE_CELLS[house] & state.open_cells;
        if left.count_ones() == 1 {
            let cell = left.trailing_zeros() as usize;
            let cand = state.cand[cell];
            if cand.count_ones() == 1 {
                let d = cand.trailing_zeros() as usize;
                debug_assert!(index.places[house][d].count_ones() == 1);
                place_only(found, cell, d);
                return;
            }
        }
    }
}

/// SE's first hidden single in `houses`: houses in SE's order, then
/// digits rising.
pub(super) fn hidden_single(
    _: &State,
    index: &Index,
    found: &mut Found,
    houses: std::ops::Range<usize>,
) {
    for house in SE_ORDER.into_iter().filter(|h| houses.contains(h)) {
        for (d, &places) in index.places[house].iter().enumerate() {
            if places.count_ones() == 1 {
                let cell = HOUSES[house][places.trailing_zeros() as usize];
                place_only(found, usize::from(cell), d);
                return;
            }
        }
    }
}

/// `found` becomes the step that places digit `d` (from 0) in `cell`.
fn place_only(found: &mut Found, cell: usize, d: usize) {
    let mut mine = Found::default();
    mine.place(cell, d as u8 + 1);
    *found = mine;
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

/// Whether naked singles and hidden singles (in rows, columns and boxes)
/// alone solve `cells`, a puzzle with one solution.
///
/// When they do, [`super::rate`] scores it 2.3 or less, on every isomorph:
/// its path takes the easiest step each time, and a single (2.3 at most)
/// is there at every state the path reaches. Those states only lack
/// candidates the solution does not use, and singles solve a state with
/// fewer candidates whenever they solve one with more: each single of the
/// larger state is a single of the smaller one, or already placed there.
pub(crate) fn solved_by_singles(cells: &[u8; 81]) -> bool {
    const ALL_CELLS: u128 = (1 << 81) - 1;
    // Per digit, the open cells it may still go in.
    let mut cand = [ALL_CELLS; 9];
    let mut open = ALL_CELLS;
    let place = |cand: &mut [u128; 9], open: &mut u128, cell: usize, d: usize| {
        let bit = 1u128 << cell;
        *open &= !bit;
        for mask in cand.iter_mut() {
            *mask &= !bit;
        }
        cand[d] &= !PEERS[cell];
    };
    for (cell, &value) in cells.iter().enumerate() {
        if value != 0 {
            place(&mut cand, &mut open, cell, usize::from(value - 1).min(8));
        }
    }
    let mut progress = true;
    while open != 0 && progress {
        progress = false;
        // Naked singles: open cells one digit alone may go in.
        let (mut one, mut two) = (0u128, 0u128);
        for &mask in &cand {
            two |= one & mask;
            one |= mask;
        }
        if open & !one != 0 {
            return false; // a cell with no digit: unreachable for one solution
        }
        let mut singles = one & !two & open;
        while singles != 0 {
            let cell = singles.trailing_zeros() as usize;
            singles &= singles - 1;
            if let Some(d) = (0..9).find(|&d| has(cand[d], cell)) {
                place(&mut cand, &mut open, cell, d);
                progress = true;
            }
        }
        // Hidden singles: a digit with one place left in a house.
        for house in HOUSE_CELLS {
            for d in 0..9 {
                let places = cand[d] & house;
                if places.count_ones() == 1 {
                    place(&mut cand, &mut open, places.trailing_zeros() as usize, d);
                    progress = true;
                }
            }
        }
    }
    open == 0
}
