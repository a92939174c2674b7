//! The bivalue universal grave (BUG, types 1 to 4), sound because only a
//! puzzle with one solution is rated. Its difficulty varies with the
//! instance; a step takes the easiest instances found.

use super::Technique;
use super::state::{CELL_BIT, Found, HOUSES, Index, PEERS, State, bits, cells_of};
use super::subsets::subsets_of_size;
use super::unique::{Easiest, houses_of, shared_houses};

/// BUG: the cells with more than two candidates (the BUG cells) and, for
/// each, the digits that have a third place in one of its houses there
/// and nowhere else in that house off a bivalue cell. Without those
/// digits every cell has two candidates and every digit two places in
/// every house (or none): a grave with no single solution, so one of them
/// is true.
/// - type 1 (5.6): one BUG cell, which keeps only its BUG digits;
/// - type 2 (5.7): one BUG digit, which every cell seeing all BUG cells
///   loses;
/// - type 3 (5.7, +0.1 per digit past one): the BUG digits, as one cell,
///   make a naked subset with other cells of a house that holds all BUG
///   cells; the house's other cells seeing all BUG cells lose its digits;
/// - type 4 (5.7): two BUG cells in one house sharing one other digit
///   `d`: each keeps only its BUG digits and `d`.
#[inline(never)]
pub(super) fn bug(state: &State, index: &Index, found: &mut Found) -> Option<(Technique, u16)> {
    let mut bug_digits = [0u16; 81];
    let mut bug_cells = 0u128;
    let mut rest = state.cand;
    for (house, places) in index.places.iter().enumerate() {
        {
            for (d, &places) in places.iter().enumerate() {
                if places.count_ones() == 0 || places.count_ones() == 2 {
                    continue;
                }
                let mut wide = bits(places)
                    .map(|i| usize::from(HOUSES[house][i]))
                    .filter(|&c| state.cand[c].count_ones() >= 3);
                match (wide.next(), wide.next()) {
                    (None, _) => return None,
                    (Some(cell), None) => {
                        bug_cells |= CELL_BIT[cell];
                        bug_digits[cell] |= 1 << d;
                        rest[cell] &= !(1 << d);
                    }
                    _ => {}
                }
            }
        }
    }
    if (0..81).any(|c| state.value[c] == 0 && rest[c].count_ones() != 2) {
        return None;
    }
    for cells in &HOUSES {
        for d in 0..9 {
            let n = cells
                .iter()
                .filter(|&&c| rest[usize::from(c)] & (1 << d) != 0)
                .count();
            if n != 0 && n != 2 {
                return None;
            }
        }
    }
    let all: u16 = cells_of(bug_cells).fold(0, |m, c| m | bug_digits[c]);
    let common = cells_of(bug_cells).fold(!0u128 >> 47, |s, c| s & PEERS[c]) & !bug_cells;
    let mut easiest = Easiest::new();
    let list: Vec<usize> = cells_of(bug_cells).collect();
    if list.len() == 1 {
        let cell = list[0];
        easiest.offer(state, 56, 0, Technique::Bug, |f| {
            f.eliminate(state, cell, !all & 0x1FF)
        });
    } else if all.count_ones() == 1 || common != 0 {
        if all.count_ones() == 1 {
            easiest.offer(state, 57, 0, Technique::Bug, |f| {
                for cell in cells_of(common) {
                    f.eliminate(state, cell, all);
                }
            });
        }
        if let [c1, c2] = list[..] {
            let shared = state.cand[c1] & state.cand[c2] & !all;
            if shared.count_ones() == 1 && shared_houses(c1, c2).next().is_some() {
                easiest.offer(state, 57, 0, Technique::Bug, |f| {
                    f.eliminate(state, c1, !(bug_digits[c1] | shared) & 0x1FF);
                    f.eliminate(state, c2, !(bug_digits[c2] | shared) & 0x1FF);
                });
            }
        }
        if all.count_ones() > 1 && common != 0 {
            bug3(state, &list, all, common, &mut easiest);
        }
    }
    easiest.finish(found)
}

fn bug3(state: &State, list: &[usize], all: u16, common: u128, easiest: &mut Easiest) {
    let houses = houses_of(list[0]);
    for house in houses {
        if !list.iter().all(|&c| houses_of(c).contains(&house)) {
            continue;
        }
        let cells = &HOUSES[house];
        let items: [u16; 9] = std::array::from_fn(|i| {
            let c = usize::from(cells[i]);
            if common & CELL_BIT[c] != 0 {
                state.cand[c]
            } else {
                0
            }
        });
        for degree in 2..=6u32 {
            let mut each = |chosen: u16, union: u16| {
                if union & all != all {
                    return;
                }
                easiest.offer(state, 57 + (degree as u16 - 1), 0, Technique::Bug, |f| {
                    for (i, &c) in cells.iter().enumerate() {
                        let c = usize::from(c);
                        if chosen & (1 << i) == 0 && common & CELL_BIT[c] != 0 {
                            f.eliminate(state, c, union);
                        }
                    }
                });
            };
            if all.count_ones() >= 2 {
                subsets_of_size(&items, degree - 1, degree, &mut each);
            }
        }
    }
}
