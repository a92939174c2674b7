//! Chains: the X-chain, following one digit along strong and weak links.

use super::state::{Found, HOUSES, Index, PEERS, State, cells_of};

/// For each digit and each cell `s` that may hold it: the cells that must
/// hold the digit if `s` does not (following strong links, then weak
/// links, to a fixpoint). A cell that sees `s` and one of those cannot hold
/// the digit: if it did, `s` would not, and a cell it sees would.
pub(super) fn x_chain(state: &State, index: &Index, found: &mut Found) {
    for d in 0..9 {
        let bit = 1u16 << d;
        let holders: u128 = (0..81)
            .filter(|&c| state.cand[c] & bit != 0)
            .fold(0, |set, c| set | 1 << c);
        // Each cell's strong partners: the other place in a house where the
        // digit has two.
        let mut strong = [0u128; 81];
        let mut linked = 0u128;
        for (house, cells) in HOUSES.iter().enumerate() {
            let places = index.places[house][d];
            if places.count_ones() == 2 {
                let a = usize::from(cells[places.trailing_zeros() as usize]);
                let b = usize::from(cells[15 - places.leading_zeros() as usize]);
                strong[a] |= 1 << b;
                strong[b] |= 1 << a;
                linked |= 1 << a | 1 << b;
            }
        }
        if linked == 0 {
            continue;
        }
        for s in cells_of(holders) {
            let mut falses = 1u128 << s;
            let mut frontier = falses;
            let mut trues = 0u128;
            let mut seen_by_trues = 0u128;
            loop {
                let mut new_trues = 0u128;
                for f in cells_of(frontier & linked) {
                    new_trues |= strong[f];
                }
                new_trues &= !trues;
                if new_trues == 0 {
                    break;
                }
                trues |= new_trues;
                let mut seen = 0u128;
                for t in cells_of(new_trues) {
                    seen |= PEERS[t];
                }
                seen_by_trues |= seen;
                frontier = seen & holders & !falses;
                falses |= frontier;
            }
            for cell in cells_of(holders & PEERS[s] & seen_by_trues) {
                found.eliminate(state, cell, bit);
            }
        }
    }
}
