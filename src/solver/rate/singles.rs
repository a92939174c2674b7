//! Singles: a full house, a hidden single (in a box, or in a line) and a
//! naked single, each placing a digit.

use super::state::{Found, HOUSES, Index, State};

pub(super) fn full_house(state: &State, _: &Index, found: &mut Found) {
    for cells in &HOUSES {
        let mut open = cells.iter().filter(|&&c| state.value[usize::from(c)] == 0);
        if let (Some(&cell), None) = (open.next(), open.next()) {
            let cand = state.cand[usize::from(cell)];
            if cand.count_ones() == 1 {
                found.place(usize::from(cell), cand.trailing_zeros() as u8 + 1);
            }
        }
    }
}

pub(super) fn hidden_single(
    _: &State,
    index: &Index,
    found: &mut Found,
    houses: std::ops::Range<usize>,
) {
    for house in houses {
        for (d, &places) in index.places[house].iter().enumerate() {
            if places.count_ones() == 1 {
                let cell = HOUSES[house][places.trailing_zeros() as usize];
                found.place(usize::from(cell), d as u8 + 1);
            }
        }
    }
}

pub(super) fn naked_single(state: &State, _: &Index, found: &mut Found) {
    for (cell, &cand) in state.cand.iter().enumerate() {
        if cand.count_ones() == 1 {
            found.place(cell, cand.trailing_zeros() as u8 + 1);
        }
    }
}
