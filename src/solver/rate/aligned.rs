//! Aligned pair exclusion: two cells, and the bivalue cells that see both
//! (at least two of them). A pair of digits for the two cells is excluded
//! when the cells see each other and the digits are equal, or when it
//! would leave one of those bivalue cells without a candidate. A digit of
//! either cell that is in no remaining pair is removed.

use super::state::{Found, Index, PEERS, State, bits, cells_of};

pub(super) fn aligned_pair_exclusion(state: &State, _: &Index, found: &mut Found) {
    let with = |n: u32| -> u128 {
        (0..81)
            .filter(|&c| state.value[c] == 0 && state.cand[c].count_ones() == n)
            .fold(0, |set, c| set | 1 << c)
    };
    let (singles, bivalue) = (with(1), with(2));
    // Base cells: two candidates or more, no peer left with one, some
    // bivalue peer.
    let bases: u128 = (0..81)
        .filter(|&c| {
            state.cand[c].count_ones() >= 2 && PEERS[c] & singles == 0 && PEERS[c] & bivalue != 0
        })
        .fold(0, |set, c| set | 1 << c);
    for a in cells_of(bases) {
        for b in cells_of(bases & !((2u128 << a) - 1)) {
            let excluders = PEERS[a] & PEERS[b] & bivalue;
            if excluders.count_ones() < 2 {
                continue;
            }
            let see = PEERS[a] & (1u128 << b) != 0;
            let (ca, cb) = (state.cand[a], state.cand[b]);
            let (mut allowed_a, mut allowed_b) = (0u16, 0u16);
            for da in bits(ca) {
                for db in bits(cb) {
                    if see && da == db {
                        continue;
                    }
                    let pair = 1u16 << da | 1 << db;
                    if cells_of(excluders).any(|x| state.cand[x] & !pair == 0) {
                        continue;
                    }
                    allowed_a |= 1 << da;
                    allowed_b |= 1 << db;
                }
            }
            found.eliminate(state, a, ca & !allowed_a);
            found.eliminate(state, b, cb & !allowed_b);
        }
    }
}
