//! Aligned pair exclusion: two cells, and the bivalue cells that see both
//! (at least two of them). A pair of digits for the two cells is excluded
//! when the cells see each other and the digits are equal, or when it
//! would leave one of those bivalue cells without a candidate. A digit of
//! either cell that is in no remaining pair is removed.

use super::state::{CELL_BIT, Found, Index, PEERS, State, bits, cells_of, cells_where, has};

/// The cells that see two or more of `cells` (seeing is symmetric: they
/// are the peers of two of them).
fn seen_twice(cells: u128) -> u128 {
    let (mut once, mut twice) = (0u128, 0u128);
    for x in cells_of(cells) {
        twice |= once & PEERS[x];
        once |= PEERS[x];
    }
    twice
}

/// A pair's removals depend only on the candidates of its two cells and
/// of its excluders (the bivalue cells seeing both), so `stale` works as
/// for [`aligned_triple_exclusion`]: only pairs meeting it are judged,
/// and the first pair in SE's order that removes something is the same.
pub(super) fn aligned_pair_exclusion(
    state: &State,
    _: &Index,
    found: &mut Found,
    stale: &mut u128,
) {
    let with = |n: u32| -> u128 {
        cells_where(|c| state.value[c] == 0 && state.cand[c].count_ones() == n)
    };
    let (singles, bivalue) = (with(1), with(2));
    let focus = if singles == 0 { *stale } else { STALE_ALL };
    *stale = if singles == 0 { 0 } else { STALE_ALL };
    // Base cells: two candidates or more, no peer left with one, some
    // bivalue peer.
    let bases = cells_where(|c| {
        state.cand[c].count_ones() >= 2 && PEERS[c] & singles == 0 && PEERS[c] & bivalue != 0
    });
    // SE's pairs come by the second cell, then the first: the first pair
    // in that order that removes something is the step.
    for b in cells_of(bases) {
        // Only a first cell that sees two of b's bivalue peers or more
        // has two excluders.
        let twice = seen_twice(PEERS[b] & bivalue);
        for a in cells_of(bases & twice & (CELL_BIT[b] - 1)) {
            let excluders = PEERS[a] & PEERS[b] & bivalue;
            debug_assert!(excluders.count_ones() >= 2);
            if (CELL_BIT[a] | CELL_BIT[b] | excluders) & focus == 0 {
                continue;
            }
            // A bivalue excluder {x, y} strikes out exactly the pairs
            // (x, y) and (y, x): per digit of `a`, the digits of `b` it
            // rules out.
            let mut barred = [0u16; 9];
            for x in cells_of(excluders) {
                let m = state.cand[x];
                let (lo, hi) = (m.trailing_zeros() as usize, 15 - m.leading_zeros() as usize);
                barred[lo] |= 1 << hi;
                barred[hi] |= 1 << lo;
            }
            let see = has(PEERS[a], b);
            let (ca, cb) = (state.cand[a], state.cand[b]);
            let (mut allowed_a, mut allowed_b) = (0u16, 0u16);
            for da in bits(ca) {
                let same = if see { 1u16 << da } else { 0 };
                let partners = cb & !barred[da] & !same;
                if partners != 0 {
                    allowed_a |= 1 << da;
                    allowed_b |= partners;
                }
            }
            let (gone_a, gone_b) = (ca & !allowed_a, cb & !allowed_b);
            if gone_a | gone_b != 0 {
                found.eliminate(state, a, gone_a);
                found.eliminate(state, b, gone_b);
                *stale = STALE_ALL;
                return;
            }
        }
    }
}

/// Aligned triple exclusion (SE's `AlignedExclusion(3)`, 7.5): two base
/// cells and a third among the cells of two or three candidates that see
/// either, all three with at least two bivalue-or-trivalue cells seeing
/// each of them. A triple of digits is excluded when two of the cells see
/// each other and share the digit, or when it would leave one of those
/// common cells without a candidate; a digit of any of the three in no
/// remaining triple is removed.
///
/// A triple's removals depend only on the candidates of its three cells
/// and of its excluders, the cells of two or three candidates that see
/// all three (whether it is judged at all follows from those too, while
/// no open cell has a single candidate). Along a path candidates only go,
/// so a triple that removed nothing on an earlier state removes nothing
/// again until one of those cells changes: a cell seeing all three joins
/// the excluders only by losing candidates, and leaves them only by being
/// filled, which strikes out fewer combinations. `stale` holds the cells
/// changed since this last found nothing on the path ([`STALE_ALL`] when
/// that is unknown), and only triples meeting it are judged. It is set to
/// none when this finds nothing, to all when it finds something. The
/// removals are the same as judging every triple.
#[inline(never)]
pub(super) fn aligned_triple_exclusion(
    state: &State,
    _: &Index,
    found: &mut Found,
    stale: &mut u128,
) {
    let with = |lo: u32, hi: u32| -> u128 {
        cells_where(|c| {
            let n = state.cand[c].count_ones();
            state.value[c] == 0 && n >= lo && n <= hi
        })
    };
    let (singles, small) = (with(1, 1), with(2, 3));
    // A cell with one candidate makes its peers no base: the triples'
    // removals then depend on more than their own cells, so every triple
    // is judged, and a result of nothing is not kept.
    let focus = if singles == 0 { *stale } else { STALE_ALL };
    let bases = cells_where(|c| {
        state.cand[c].count_ones() >= 2 && PEERS[c] & singles == 0 && PEERS[c] & small != 0
    });
    // A set of three cells qualifies in up to three ways (each of its
    // cells third, seeing one of the other two), all with the same
    // excluders and so the same removals: it is taken once, in the first
    // way with the third cell the largest, then the middle, then the
    // smallest.
    let thirds = small & bases;
    let third = |x: usize, y: usize, z: usize| has(thirds, z) && has(PEERS[x] | PEERS[y], z);
    for a in cells_of(bases) {
        // A triple needs two excluders or more, each seeing all three
        // cells: so b sees two or more of a's small peers.
        let near = seen_twice(PEERS[a] & small);
        for b in cells_of(bases & near & !((CELL_BIT[a] << 1) - 1)) {
            // The third must see two or more of the cells that see both
            // a and b.
            let common = PEERS[a] & PEERS[b] & small;
            debug_assert!(common.count_ones() >= 2);
            let pair = CELL_BIT[a] | CELL_BIT[b];
            let mut twins = (PEERS[a] | PEERS[b]) & thirds & !pair;
            // A triple's excluders see both a and b, so they are among
            // `common`: with none of those, nor a nor b, changed, only a
            // changed third is judged.
            let pair_stale = (pair | common) & focus != 0;
            if !pair_stale {
                twins &= focus;
                if twins == 0 {
                    continue;
                }
            }
            twins &= seen_twice(common);
            for c in cells_of(twins) {
                let taken_before = if c > b {
                    false
                } else if c > a {
                    third(a, c, b)
                } else {
                    third(c, a, b) || third(c, b, a)
                };
                if taken_before {
                    continue;
                }
                let excluders = PEERS[a] & PEERS[b] & PEERS[c] & small;
                if excluders.count_ones() < 2 {
                    continue;
                }
                if (pair | excluders) & focus == 0 && !has(focus, c) {
                    continue;
                }
                exclude(state, [a, b, c], excluders, found);
            }
        }
    }
    *stale = if found.any || singles != 0 {
        STALE_ALL
    } else {
        0
    };
}

/// Every cell: nothing is known of an earlier state.
pub(super) const STALE_ALL: u128 = (1 << 81) - 1;

/// Removes from `cells` the digits in no combination left once those
/// where two cells that see each other share a digit, or some excluder
/// would keep no candidate, are struck out.
#[inline(never)]
fn exclude(state: &State, mut cells: [usize; 3], excluders: u128, found: &mut Found) {
    // The combinations are symmetric in the three cells: the pairs of
    // the two with fewer candidates are walked, the third's digits taken
    // as a set.
    // Sorted by three compares, stably (equal counts keep their order).
    let count = |x: usize| state.cand[x].count_ones();
    if count(cells[1]) < count(cells[0]) {
        cells.swap(0, 1);
    }
    if count(cells[2]) < count(cells[1]) {
        cells.swap(1, 2);
        if count(cells[1]) < count(cells[0]) {
            cells.swap(0, 1);
        }
    }
    let [a, b, c] = cells;
    let see = |x: usize, y: usize| has(PEERS[x], y);
    // Only an excluder within the three cells' digits can exclude.
    let union = state.cand[a] | state.cand[b] | state.cand[c];
    let mut masks = [0u16; 20];
    let mut n = 0;
    for x in cells_of(excluders) {
        if state.cand[x] & !union == 0 && n < masks.len() {
            masks[n] = state.cand[x];
            n += 1;
        }
    }
    let masks = &masks[..n];
    let (ab, ac, bc) = (see(a, b), see(a, c), see(b, c));
    if masks.is_empty() && !(ab || ac || bc) {
        // Nothing can exclude a triple.
        return;
    }
    let (ca, cb, cc) = (state.cand[a], state.cand[b], state.cand[c]);
    let mut allowed = [0u16; 3];
    for da in bits(ca) {
        for db in bits(cb) {
            if ab && da == db {
                continue;
            }
            // The third cell's digits this pair leaves: not one it sees
            // in the pair, and none that would complete an excluder.
            let pair = 1u16 << da | 1 << db;
            let mut barred = if ac { 1 << da } else { 0 } | if bc { 1 << db } else { 0 };
            for &m in masks {
                let rest = m & !pair;
                if rest == 0 {
                    barred = u16::MAX;
                    break;
                }
                if rest.count_ones() == 1 {
                    barred |= rest;
                }
            }
            let left = cc & !barred;
            if left != 0 {
                allowed[0] |= 1 << da;
                allowed[1] |= 1 << db;
                allowed[2] |= left;
                // With every digit of b and c in a triple left, `da`
                // needs no other.
                if allowed[1] == cb && allowed[2] == cc {
                    break;
                }
            }
        }
        if allowed == [ca, cb, cc] {
            // Every digit is in some triple left: nothing to remove.
            return;
        }
    }
    for (i, &cell) in cells.iter().enumerate() {
        found.eliminate(state, cell, state.cand[cell] & !allowed[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{for_each_state_on_path, hard_puzzles};
    use super::*;

    /// What a triple removes, by trying every combination of its digits
    /// against every rule, with nothing spared.
    fn plain_exclusion(state: &State, cells: [usize; 3], excluders: u128) -> [u16; 3] {
        let see = |x: usize, y: usize| PEERS[x] & (1u128 << y) != 0;
        let [a, b, c] = cells;
        let mut allowed = [0u16; 3];
        for da in bits(state.cand[a]) {
            for db in bits(state.cand[b]) {
                for dc in bits(state.cand[c]) {
                    let shared = (see(a, b) && da == db)
                        || (see(a, c) && da == dc)
                        || (see(b, c) && db == dc);
                    let digits = 1u16 << da | 1 << db | 1 << dc;
                    let emptied = cells_of(excluders).any(|x| state.cand[x] & !digits == 0);
                    if !shared && !emptied {
                        allowed[0] |= 1 << da;
                        allowed[1] |= 1 << db;
                        allowed[2] |= 1 << dc;
                    }
                }
            }
        }
        let [ma, mb, mc] = cells.map(|x| state.cand[x]);
        [ma & !allowed[0], mb & !allowed[1], mc & !allowed[2]]
    }

    /// At every state of the rated paths of hard puzzles, every set of
    /// three open cells with two excluders or more (cells of two or
    /// three candidates seeing all three) loses exactly what trying
    /// every combination says, whatever the order the cells are given in;
    /// and aligned triple exclusion removes what the sets it qualifies
    /// lose, every set of three cells tried: two base cells (two
    /// candidates or more, no peer left with one, a peer of two or three)
    /// and a third of two or three candidates, itself a base, seeing one
    /// of them.
    #[test]
    fn the_exclusion_test_removes_what_every_combination_says() {
        let (mut triples, mut removing) = (0usize, 0usize);
        for grid in hard_puzzles().iter().step_by(3) {
            let form = crate::solver::canonical(grid);
            for_each_state_on_path(&form, |state, index| {
                let open: Vec<usize> = (0..81)
                    .filter(|&c| state.value[c] == 0 && state.cand[c].count_ones() >= 2)
                    .collect();
                let small = open
                    .iter()
                    .filter(|&&c| state.cand[c].count_ones() <= 3)
                    .fold(0u128, |set, &c| set | 1 << c);
                let singles = (0..81)
                    .filter(|&c| state.value[c] == 0 && state.cand[c].count_ones() == 1)
                    .fold(0u128, |set, c| set | 1 << c);
                let base = |c: usize| PEERS[c] & singles == 0 && PEERS[c] & small != 0;
                let third = |x: usize, y: usize, z: usize| {
                    base(x)
                        && base(y)
                        && base(z)
                        && small >> z & 1 == 1
                        && (PEERS[x] | PEERS[y]) >> z & 1 == 1
                };
                let mut all = Found::default();
                for (i, &a) in open.iter().enumerate() {
                    for (j, &b) in open.iter().enumerate().skip(i + 1) {
                        for &c in &open[j + 1..] {
                            let excluders = PEERS[a] & PEERS[b] & PEERS[c] & small;
                            if excluders.count_ones() < 2 {
                                continue;
                            }
                            let expected = plain_exclusion(state, [a, b, c], excluders);
                            for order in [[a, b, c], [c, a, b], [b, c, a], [c, b, a]] {
                                let mut found = Found::default();
                                exclude(state, order, excluders, &mut found);
                                let got = [a, b, c].map(|x| found.elim[x]);
                                assert_eq!(got, expected, "{form} {order:?}");
                            }
                            triples += 1;
                            removing += usize::from(expected.iter().any(|&m| m != 0));
                            if third(a, b, c) || third(a, c, b) || third(b, c, a) {
                                for (&x, &gone) in [a, b, c].iter().zip(&expected) {
                                    all.eliminate(state, x, gone);
                                }
                            }
                        }
                    }
                }
                let mut found = Found::default();
                aligned_triple_exclusion(state, index, &mut found, &mut STALE_ALL.clone());
                assert_eq!(found.elim, all.elim, "{form}");
            });
        }
        assert!(triples > 100_000, "{triples}");
        assert!(removing > 1_000, "{removing}");
    }
}
