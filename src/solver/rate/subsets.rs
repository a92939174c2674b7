//! Subsets: naked and hidden pairs, triples and quads in a house, and the
//! fish (X-wing, swordfish, jellyfish), which are subsets of lines for one
//! digit. Each member of a subset has at least two candidates (places), and
//! the houses searched are those SE searches (see each function).

use super::state::{
    ALL_HOUSES, Found, HOUSE_CELLS, HOUSES, Index, Pick, State, bits, bits32, se_house_rank,
};

/// Calls `hit(chosen, union)` for every choice of `n` of the `items` with
/// at least two bits (bit `i` of `chosen` for `items[i]`) whose masks
/// together have exactly `n` bits.
pub(super) fn subsets(items: &[u16; 9], n: u32, hit: &mut impl FnMut(u16, u16)) {
    if n == 2 {
        // Two items of two bits each with two bits in all: the same two,
        // in the order the general walk meets them.
        let mut twos = of_size(items, 2, 2);
        while twos != 0 {
            let i = twos.trailing_zeros() as usize;
            twos &= twos - 1;
            let mut rest = twos;
            while rest != 0 {
                let j = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                if items[j] == items[i] {
                    hit(1 << i | 1 << j, items[i]);
                }
            }
        }
        return;
    }
    subsets_of_size(items, n, n, hit);
}

/// The same with `k` items whose masks together have exactly `n` bits.
/// Only items of two to `n` bits can be chosen, and a choice is given up
/// once too few of them are left to complete it; the choices are met in
/// the same order as by trying every item at each depth.
pub(super) fn subsets_of_size(items: &[u16; 9], k: u32, n: u32, hit: &mut impl FnMut(u16, u16)) {
    /// `open`: the items not yet passed over that may join.
    fn walk(
        items: &[u16; 9],
        n: u32,
        open: u16,
        left: u32,
        chosen: u16,
        union: u16,
        hit: &mut impl FnMut(u16, u16),
    ) {
        if left == 0 {
            if union.count_ones() == n {
                hit(chosen, union);
            }
            return;
        }
        let mut rest = open;
        while rest.count_ones() >= left {
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let union = union | items[i];
            if union.count_ones() <= n {
                walk(items, n, rest, left - 1, chosen | 1 << i, union, hit);
            }
        }
    }
    walk(items, n, of_size(items, 2, n), k, 0, 0, hit);
}

/// The items (bit `i` for `items[i]`) whose masks have from `least` to
/// `most` bits.
fn of_size(items: &[u16; 9], least: u32, most: u32) -> u16 {
    items.iter().enumerate().fold(0, |set, (i, item)| {
        let n = item.count_ones();
        set | u16::from(n >= least && n <= most) << i
    })
}

/// The number of empty cells of a house.
fn empty_cells(state: &State, house: usize) -> usize {
    (HOUSE_CELLS[house] & state.open_cells).count_ones() as usize
}

/// `n` cells of a house whose candidates are `n` digits: the house's other
/// cells lose those digits. Only in a house with at least `2n` empty cells
/// (with fewer, the rest is a smaller hidden subset). Only the `houses`
/// are searched (what one house gives reads its own cells alone).
pub(super) fn naked_subset(state: &State, _: &Index, found: &mut Found, n: u32, houses: u32) {
    let mut pick = Pick::new();
    for house in bits32(houses & ALL_HOUSES) {
        let cells = &HOUSES[house];
        let items = cells.map(|c| state.cand[usize::from(c)]);
        if empty_cells(state, house) < 2 * n as usize {
            continue;
        }
        subsets(&items, n, &mut |chosen, digits| {
            pick.offer(se_house_rank(house) * 512 + u64::from(chosen), |f| {
                for (i, &cell) in cells.iter().enumerate() {
                    if chosen & (1 << i) == 0 {
                        f.eliminate(state, usize::from(cell), digits);
                    }
                }
            });
        });
    }
    pick.finish(found);
}

/// `n` digits whose places in a house are `n` cells: those cells lose
/// every other digit. Only in a house with more than `2n` empty cells
/// (with fewer, the rest is a naked subset no larger). Only the `houses`
/// are searched.
pub(super) fn hidden_subset(state: &State, index: &Index, found: &mut Found, n: u32, houses: u32) {
    let mut pick = Pick::new();
    for house in bits32(houses & ALL_HOUSES) {
        let cells = &HOUSES[house];
        let items = &index.places[house];
        if empty_cells(state, house) <= 2 * n as usize {
            continue;
        }
        subsets(items, n, &mut |digits, places| {
            pick.offer(se_house_rank(house) * 512 + u64::from(digits), |f| {
                for i in bits(places) {
                    f.eliminate(state, usize::from(cells[i]), !digits & 0x1FF);
                }
            });
        });
    }
    pick.finish(found);
}

/// A digit's places in `n` rows within `n` columns: the rest of those
/// columns lose it; and the same with rows and columns swapped. Only for a
/// digit placed at most `9 - 2n` times. Only the `digits` are searched
/// (what one digit gives reads its own places alone).
pub(super) fn fish(state: &State, index: &Index, found: &mut Found, n: u32, digits: u32) {
    let mut pick = Pick::new();
    for d in bits(digits as u16 & 0x1FF) {
        let placed = state
            .value
            .iter()
            .filter(|&&v| usize::from(v) == d + 1)
            .count();
        if placed + 2 * n as usize > 9 {
            continue;
        }
        for base in [0, 9] {
            let items: [u16; 9] = std::array::from_fn(|line| index.places[base + line][d]);
            subsets(&items, n, &mut |lines, covers| {
                // SE scans column bases first, line sets before digits.
                let key = (u64::from(base == 0) * 512 + u64::from(lines)) * 9 + d as u64;
                pick.offer(key, |f| {
                    for cover in bits(covers) {
                        for line in bits(!lines & 0x1FF) {
                            let cell = if base == 0 {
                                line * 9 + cover
                            } else {
                                cover * 9 + line
                            };
                            f.eliminate(state, cell, 1 << d);
                        }
                    }
                });
            });
        }
    }
    pick.finish(found);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The shortcut for pairs gives what the general walk gives, in
        /// the same order.
        #[test]
        fn pairs_are_found_as_the_walk_finds_them(items in prop::array::uniform9(0u16..0x200)) {
            let (mut quick, mut walked) = (Vec::new(), Vec::new());
            subsets(&items, 2, &mut |c, u| quick.push((c, u)));
            subsets_of_size(&items, 2, 2, &mut |c, u| walked.push((c, u)));
            prop_assert_eq!(quick, walked);
        }

        /// The walk gives every choice of `k` items of two bits or more
        /// whose union has exactly `n` bits, in increasing order of the
        /// chosen set's bits read as a list (lexicographic on positions).
        #[test]
        fn the_walk_finds_every_choice_in_order(
            items in prop::array::uniform9(0u16..0x200),
            n in 2u32..=4,
            fewer in 0u32..=1,
        ) {
            let k = n - fewer;
            let mut walked = Vec::new();
            subsets_of_size(&items, k, n, &mut |c, u| walked.push((c, u)));
            let positions = |c: u16| (0..9).filter(|&i| c >> i & 1 == 1).collect::<Vec<_>>();
            let mut every: Vec<(u16, u16)> = (0u16..0x200)
                .filter(|&c| c.count_ones() == k)
                .filter(|&c| positions(c).iter().all(|&i| items[i].count_ones() >= 2))
                .map(|c| (c, positions(c).iter().fold(0, |u, &i| u | items[i])))
                .filter(|&(_, u)| u.count_ones() == n)
                .collect();
            every.sort_by_key(|&(c, _)| positions(c));
            prop_assert_eq!(walked, every);
        }
    }
}
