//! Wings: the XY-wing and the XYZ-wing, three cells of two or three
//! candidates whose common digit the cells seeing all pincers lose.

use super::state::{CELL_BIT, Found, Index, PEERS, Pick, State, cells_of, cells_where};

pub(super) fn xy_wing(state: &State, _: &Index, found: &mut Found) {
    let mut pick = Pick::new();
    let bivalue = cells_where(|c| state.cand[c].count_ones() == 2);
    for pivot in cells_of(bivalue) {
        let pc = state.cand[pivot];
        for x in cells_of(bivalue & PEERS[pivot]) {
            let xc = state.cand[x];
            let shared = xc & pc;
            if shared.count_ones() != 1 {
                continue;
            }
            let c = xc & !pc;
            let want = (pc & !shared) | c;
            for y in cells_of(bivalue & PEERS[pivot] & !CELL_BIT[x]) {
                if state.cand[y] == want {
                    pick.offer(((pivot * 81 + x) * 81 + y) as u64, |f| {
                        for cell in cells_of(PEERS[x] & PEERS[y]) {
                            f.eliminate(state, cell, c);
                        }
                    });
                }
            }
        }
    }
    pick.finish(found);
}

pub(super) fn xyz_wing(state: &State, _: &Index, found: &mut Found) {
    let mut pick = Pick::new();
    let bivalue = cells_where(|c| state.cand[c].count_ones() == 2);
    for pivot in (0..81).filter(|&c| state.cand[c].count_ones() == 3) {
        let pc = state.cand[pivot];
        let pincers = cells_of(bivalue & PEERS[pivot]).filter(|&x| state.cand[x] & !pc == 0);
        for x in pincers.clone() {
            for y in pincers.clone().filter(|&y| y > x) {
                let (xc, yc) = (state.cand[x], state.cand[y]);
                let c = xc & yc;
                if xc | yc == pc && c.count_ones() == 1 {
                    pick.offer(((pivot * 81 + x) * 81 + y) as u64, |f| {
                        for cell in cells_of(PEERS[pivot] & PEERS[x] & PEERS[y]) {
                            f.eliminate(state, cell, c);
                        }
                    });
                }
            }
        }
    }
    pick.finish(found);
}
