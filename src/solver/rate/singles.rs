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

/// The houses of SE's ranks set in `ranks`, first rank first.
fn houses_by_rank(mut ranks: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (ranks != 0).then(|| {
            let rank = ranks.trailing_zeros() as usize;
            ranks &= ranks - 1;
            SE_ORDER[rank]
        })
    })
}

/// The ranks ([`se_house_rank`]) of the boxes, and of the lines.
pub(super) const BOX_RANKS: u32 = 0x1FF;
pub(super) const LINE_RANKS: u32 = 0x7FF_FE00;

/// SE's first full house: the first house in SE's order with one open
/// cell, read from the index's houses with one open cell.
pub(super) fn full_house(state: &State, index: &Index, found: &mut Found) {
    // One digit per house at most: the first house in SE's order is SE's.
    for house in houses_by_rank(index.last_houses) {
        let cell = (HOUSE_CELLS[house] & state.open_cells).trailing_zeros() as usize;
        let cand = state.cand[cell];
        if cand.count_ones() == 1 {
            let d = cand.trailing_zeros() as usize;
            debug_assert!(index.places[house][d].count_ones() == 1);
            place_only(found, cell, d);
            return;
        }
    }
}

/// SE's first hidden single in the houses of SE's ranks `ranks`
/// ([`BOX_RANKS`], [`LINE_RANKS`]): houses in SE's order, then digits
/// rising, read from the index's digits with one place.
pub(super) fn hidden_single(_: &State, index: &Index, found: &mut Found, ranks: u32) {
    if let Some(house) = houses_by_rank(index.lone_houses & ranks).next() {
        let d = index.lone[house].trailing_zeros() as usize;
        let places = index.places[house][d];
        let cell = HOUSES[house][places.trailing_zeros() as usize];
        place_only(found, usize::from(cell), d);
    }
}

/// `found` becomes the step that places digit `d` (from 0) in `cell`.
fn place_only(found: &mut Found, cell: usize, d: usize) {
    found.clear();
    found.place(cell, d as u8 + 1);
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

#[cfg(test)]
mod tests {
    use super::super::state::{Found, HOUSE_CELLS, HOUSES, Index, State};
    use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
    use super::*;

    /// SE's first full house, by a scan of every house in SE's order.
    fn full_house_scanned(state: &State) -> Option<(usize, u8)> {
        SE_ORDER.into_iter().find_map(|house| {
            let left = HOUSE_CELLS[house] & state.open_cells;
            let cell = left.trailing_zeros() as usize;
            (left.count_ones() == 1 && state.cand[cell].count_ones() == 1)
                .then(|| (cell, state.cand[cell].trailing_zeros() as u8 + 1))
        })
    }

    /// SE's first hidden single in the houses `houses`, by a scan of
    /// every house in SE's order and every digit.
    fn hidden_single_scanned(state: &State, houses: std::ops::Range<usize>) -> Option<(usize, u8)> {
        SE_ORDER
            .into_iter()
            .filter(|h| houses.contains(h))
            .find_map(|house| {
                (0..9).find_map(|d| {
                    let cells: Vec<u8> = HOUSES[house]
                        .into_iter()
                        .filter(|&c| state.cand[usize::from(c)] >> d & 1 != 0)
                        .collect();
                    (cells.len() == 1).then(|| (usize::from(cells[0]), d as u8 + 1))
                })
            })
    }

    /// The placement of a step that places one digit.
    fn placed(found: &Found) -> Option<(usize, u8)> {
        found.any.then(|| {
            let cell = found.touched.trailing_zeros() as usize;
            (cell, found.place[cell])
        })
    }

    /// Along rated paths (the index kept from step to step), the index
    /// is the one made afresh from the state, and the singles read from
    /// it are those a scan of the candidates finds first.
    #[test]
    fn singles_read_from_the_kept_index_are_the_first_scanned() {
        let mut states = 0;
        for grid in mid_and_hard_puzzles(21, 12) {
            for_each_state_on_path(&grid, |state, index| {
                states += 1;
                assert_eq!(index, &Index::new(state), "{grid}");
                let mut found = Found::default();
                full_house(state, index, &mut found);
                assert_eq!(placed(&found), full_house_scanned(state), "{grid}");
                for (ranks, houses) in [(BOX_RANKS, 18..27), (LINE_RANKS, 0..18)] {
                    let mut found = Found::default();
                    hidden_single(state, index, &mut found, ranks);
                    assert_eq!(
                        placed(&found),
                        hidden_single_scanned(state, houses),
                        "{grid}"
                    );
                }
            });
        }
        assert!(states > 1000, "{states}");
    }
}
