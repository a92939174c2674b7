//! Uniqueness techniques, sound because only a puzzle with one solution is
//! rated: unique rectangles and loops (types 1 to 4) here, the bivalue
//! universal grave in `bug.rs`. Their difficulty varies with the
//! instance; a step takes the easiest instances found ([`Easiest`]).

use super::Technique;
use super::state::{
    CELL_BIT, Found, HOUSE_CELLS, HOUSES, HOUSES_OF, PEERS, State, bits, cells_of, holders,
};

/// The easiest instances offered so far: merged (the BUG's types), or
/// only the first of the easiest (unique loops, as SE applies one).
pub(super) struct Easiest {
    tenths: u16,
    /// The tie-break after the difficulty (a loop's type).
    rank: u8,
    /// Whether only the first instance of the least `(tenths, rank)` is
    /// kept, rather than every instance of the least `tenths`.
    first: bool,
    technique: Technique,
    found: Found,
}

impl Easiest {
    /// Every easiest instance, merged.
    pub(super) fn new() -> Easiest {
        Easiest {
            tenths: u16::MAX,
            rank: u8::MAX,
            first: false,
            technique: Technique::FullHouse,
            found: Found::default(),
        }
    }

    /// Only the first instance of the least difficulty and rank, in the
    /// order offered: SE sorts the unique loops' hints by difficulty,
    /// then type (a stable sort of the scan order), and applies the first.
    pub(super) fn first() -> Easiest {
        Easiest {
            first: true,
            ..Easiest::new()
        }
    }

    /// Whether an instance of difficulty `tenths` and tie-break `rank`
    /// would be kept, were it to remove something.
    fn would_keep(&self, tenths: u16, rank: u8) -> bool {
        if self.first {
            (tenths, rank) < (self.tenths, self.rank)
        } else {
            tenths <= self.tenths
        }
    }

    /// Offers an instance of difficulty `tenths` and tie-break `rank`
    /// whose deductions `make` writes; kept if it removes something and
    /// is no harder than the easiest so far (strictly easier, by
    /// difficulty then rank, for [`Easiest::first`]).
    pub(super) fn offer(
        &mut self,
        state: &State,
        tenths: u16,
        rank: u8,
        technique: Technique,
        make: impl FnOnce(&mut Found),
    ) {
        if !self.would_keep(tenths, rank) {
            return;
        }
        let mut mine = Found::default();
        make(&mut mine);
        if !mine.any {
            return;
        }
        if self.first || tenths < self.tenths {
            self.tenths = tenths;
            self.rank = rank;
            self.technique = technique;
            self.found.clear();
        }
        self.technique = self.technique.min(technique);
        for cell in 0..81 {
            self.found.eliminate(state, cell, mine.elim[cell]);
        }
    }

    pub(super) fn finish(self, found: &mut Found) -> Option<(Technique, u16)> {
        if self.found.any {
            *found = self.found;
            Some((self.technique, self.tenths))
        } else {
            None
        }
    }
}

/// The houses of `cell` a loop may step along: box, row, column.
pub(super) fn houses_of(cell: usize) -> [usize; 3] {
    let [r, c, b] = HOUSES_OF[cell];
    [usize::from(b), usize::from(r), usize::from(c)]
}

/// Whether the cells are a closed loop whose every house holds exactly two
/// of them, taken alternately: walking the loop, the houses of the cells
/// at even and at odd positions are the same set, none twice.
fn is_valid_loop(lp: &[usize]) -> bool {
    let (mut even, mut odd) = (0u32, 0u32);
    for (i, &cell) in lp.iter().enumerate() {
        let side = if i % 2 == 0 { &mut even } else { &mut odd };
        for house in houses_of(cell) {
            if *side & (1 << house) != 0 {
                return false;
            }
            *side |= 1 << house;
        }
    }
    even == odd
}

/// SE's difficulty of a unique loop of `len` cells, in tenths: 4.5 for a
/// rectangle, 4.6 for 6 cells, 4.7 for 8, 5.0 for 10 or more.
fn loop_tenths(len: usize) -> u16 {
    match len {
        0..=4 => 45,
        5..=6 => 46,
        7..=8 => 47,
        _ => 50,
    }
}

/// Loops of cells holding both `v1` and `v2`, from `start`; see
/// [`unique_loops`].
struct LoopSearch<'a> {
    state: &'a State,
    pair: u16,
    /// The cells holding both digits of the pair.
    all_holders: u128,
    /// Those of them that can lie on a loop ([`loop_cells`]).
    holders: u128,
    /// The starts searched before this one: the cells before it holding
    /// the pair and nothing else.
    earlier: u128,
    path: Vec<usize>,
    /// How many cells of the path hold more than the pair.
    with_extras: u32,
    /// Whether no loop of the pair can have three cells with extras: the
    /// third joins only when the extra digits met are one digit, so the
    /// first three each hold the pair and that digit alone, and no digit
    /// makes three such cells.
    few_extras: bool,
    /// The path's cells as a set.
    on_path: u128,
    /// The houses of the path's cells at even and at odd positions, as
    /// bit sets: a valid loop has no house twice on one side.
    used: [u32; 2],
    /// The hints of the loops closed so far, in the order found.
    easiest: &'a mut Easiest,
    /// The pairs and cells of the loops already judged, from any start
    /// and either way round.
    judged: &'a mut Vec<(u16, u128)>,
}

/// The houses of `cell`, as a bit set.
fn house_set(cell: usize) -> u32 {
    houses_of(cell).iter().fold(0, |set, &h| set | 1 << h)
}

impl LoopSearch<'_> {
    /// Whether some loop may still extend the path: a valid loop holds
    /// each of its houses once on each side, so a house on one side only
    /// needs a cell of the loop not yet on the path. Walking on from a
    /// path that fails this offers nothing, so passing over it changes
    /// nothing found (the extras met at this cell are gathered anyway).
    fn closable(&self) -> bool {
        let free = self.holders & !self.on_path;
        let mut open = self.used[0] ^ self.used[1];
        while open != 0 {
            if HOUSE_CELLS[open.trailing_zeros() as usize] & free == 0 {
                return false;
            }
            open &= open - 1;
        }
        true
    }

    /// Extends the path from its last cell along a house of another kind
    /// than the one it came by. A cell with extra candidates may join
    /// while fewer than two have, or when the extra digits stay one digit.
    ///
    /// A path that holds an earlier start, or would step into one, goes no
    /// farther when no loop of the pair can have three cells with extras
    /// (`few_extras`), or once the extra digits met are two or more and at
    /// most two of its cells have extras: past that, a cell with extras
    /// joins only by the allowance. Either way every loop it could close
    /// has at most two cells with extras. Such a loop is found from each
    /// of its starts (no cell of it is refused, whatever the order its
    /// cells are met in, and a valid loop changes house kind at every
    /// cell, its start included), so the earlier start judged it already.
    /// Nothing judged changes, nor the order it is judged in.
    ///
    /// As in SE 1.2.1, the extra digits are gathered per cell of the
    /// path, not per branch: every cell off the path that holds the pair
    /// and is met from this cell adds its extras to those its later
    /// siblings are judged with (and pass on), whether or not it joined.
    /// So a third cell with extras may be refused after a sibling with
    /// other extras, and some loops are not found, as SE does not find
    /// them.
    fn walk(&mut self, allowed: u32, extra: u16, came_by: usize) {
        let Some(&cell) = self.path.last() else {
            return;
        };
        let first = self.path[0];
        let mut extra = extra;
        for (kind, house) in houses_of(cell).into_iter().enumerate() {
            if kind == came_by {
                continue;
            }
            // In reading order within the house (the order of the cells'
            // numbers).
            for next in cells_of(HOUSE_CELLS[house] & self.all_holders) {
                let bit = CELL_BIT[next];
                if next == first && self.path.len() >= 4 {
                    if is_valid_loop(&self.path) {
                        // The same cells give the same hints whatever
                        // the order they are met in (the two cells
                        // with extras play symmetric parts), and a hint
                        // offered again is not kept: only the first of
                        // the easiest is. So each loop is judged once.
                        let judged = (self.pair, self.on_path);
                        if !self.judged.contains(&judged) {
                            self.judged.push(judged);
                            loop_hints(self.state, &self.path, self.pair, self.easiest);
                        }
                    }
                } else if self.on_path & bit == 0 {
                    let cand = self.state.cand[next];
                    extra |= cand & !self.pair;
                    let more = cand.count_ones() > 2;
                    let joins = !more || extra.count_ones() == 1 || allowed > 0;
                    // A cell that cannot lie on a loop closes none, nor
                    // does a path with a house twice on one side: no
                    // valid loop is lost. Nor is a loop kept that is no
                    // easier than the easiest found so far: a longer path
                    // closes only longer loops, whose difficulty is at
                    // least their length's (and whose rank at least 1).
                    let side = self.path.len() % 2;
                    let houses = house_set(next);
                    let judged_before = self.earlier & (self.on_path | bit) != 0
                        && (self.few_extras
                            || extra.count_ones() >= 2 && self.with_extras + u32::from(more) <= 2);
                    if joins
                        && !judged_before
                        && self.holders & bit != 0
                        && self.used[side] & houses == 0
                        && self.easiest.would_keep(loop_tenths(self.path.len() + 1), 1)
                    {
                        self.path.push(next);
                        self.on_path |= bit;
                        self.used[side] |= houses;
                        self.with_extras += u32::from(more);
                        if self.closable() {
                            self.walk(allowed - u32::from(more && allowed > 0), extra, kind);
                        }
                        self.with_extras -= u32::from(more);
                        self.used[side] &= !houses;
                        self.on_path &= !bit;
                        self.path.pop();
                    }
                }
            }
        }
    }
}

/// The cells of `holders` that can lie on a valid loop through them
/// ([`is_valid_loop`]): every house a valid loop meets holds two of its
/// cells, one at an even and one at an odd position, so each of its cells
/// has another of them in each of its three houses (not only in the two
/// it enters and leaves by). Cells without are dropped until none is left
/// to drop; no valid loop loses a cell.
fn loop_cells(mut holders: u128) -> u128 {
    loop {
        let kept = cells_of(holders)
            .filter(|&c| {
                houses_of(c)
                    .iter()
                    .all(|&h| HOUSE_CELLS[h] & holders & !CELL_BIT[c] != 0)
            })
            .fold(0u128, |set, c| set | 1 << c);
        if kept == holders {
            return kept;
        }
        holders = kept;
    }
}

/// Unique rectangles and loops: cells holding both of two digits `v1`,
/// `v2`, in a closed loop through houses each holding two of them, would
/// let the two digits swap (a second solution) if every cell had only
/// those two. So some cell's extra candidates hold:
/// - type 1: one cell with extras loses `v1` and `v2`;
/// - type 2: the extras are one digit, which every cell seeing all the
///   cells with extras loses;
/// - type 3: two cells with extras act as one cell holding their extras,
///   in a naked subset of a house they share (+0.1 per digit past one), or
///   `v1`, `v2` with other digits make a hidden subset there (+0.1 per
///   digit past two);
/// - type 4: two cells with extras, in a house where `v1` has no other
///   place: they lose `v2` (or the same with `v1`, `v2` swapped).
///
/// Difficulty 4.5 for a rectangle, more for longer loops
/// ([`loop_tenths`]), plus the type 3 rise.
///
/// Along a path, the pairs of digits whose walks `memory` says close no
/// loop are passed over.
#[inline(never)]
pub(super) fn unique_loops_along(
    state: &State,
    found: &mut Found,
    memory: &mut LoopMemory,
) -> Option<(Technique, u16)> {
    search_loops(state, found, true, Some(memory))
}

/// [`unique_loops_along`] without a path's memory: every pair is walked.
#[cfg(test)]
pub(super) fn unique_loops(state: &State, found: &mut Found) -> Option<(Technique, u16)> {
    search_loops(state, found, true, None)
}

/// What a path keeps for the unique loops: the pairs of digits whose
/// walks closed no valid loop in a call that found no step, each with the
/// cells holding both digits then, and the candidates of those cells.
///
/// The walks from a pair's starts read only the cells holding both of its
/// digits and their candidates (in a call that finds no step, no easier
/// loop cuts a walk short). So while those cells and their candidates are
/// the same, the walks close no loop again, and are passed over.
pub(super) struct LoopMemory {
    /// Per pair (`v1 * 9 + v2`), the cells holding both when its walks
    /// closed none; empty for none recorded.
    holders: [u128; 81],
    /// The candidates of the call that recorded them (every record is of
    /// the last call that found no step).
    cand: [u16; 81],
}

impl LoopMemory {
    pub(super) fn new() -> LoopMemory {
        LoopMemory {
            holders: [0; 81],
            cand: [0; 81],
        }
    }

    /// Whether the walks of pair `p`, whose cells holding both digits are
    /// `holders` in `state`, closed no loop on the same cells and
    /// candidates.
    fn closes_none(&self, p: usize, holders: u128, state: &State) -> bool {
        self.holders[p] == holders
            && holders != 0
            && cells_of(holders).all(|c| self.cand[c] == state.cand[c])
    }
}

/// The unique loops, passing over the paths only earlier starts' loops
/// can close (see [`LoopSearch::walk`]) when `prune`, and the pairs
/// `memory` says close no loop.
fn search_loops(
    state: &State,
    found: &mut Found,
    prune: bool,
    mut memory: Option<&mut LoopMemory>,
) -> Option<(Technique, u16)> {
    let mut easiest = Easiest::first();
    let digit_holders = holders(&state.cand);
    // Per pair of digits (`v1 * 9 + v2`), the cells holding both, those
    // of them that can lie on a loop, and those holding the pair alone,
    // found at its first start.
    let mut pairs: [Option<(u128, u128, u128, bool)>; 81] = [None; 81];
    // The loops judged so far (a few at most).
    let mut judged = Vec::new();
    // The walk's path, its memory kept from one start to the next.
    let mut path = Vec::new();
    // The pairs whose walks ran or were passed over, with their holders.
    let mut walked = [0u128; 81];
    for start in 0..81 {
        let pair = state.cand[start];
        if pair.count_ones() != 2 {
            continue;
        }
        let (v1, v2) = (
            pair.trailing_zeros() as usize,
            15 - pair.leading_zeros() as usize,
        );
        let (all_holders, holders, alone, few_extras) =
            *pairs[v1 * 9 + v2].get_or_insert_with(|| {
                let all = digit_holders[v1] & digit_holders[v2];
                let on_loops = loop_cells(all);
                let alone = cells_of(all)
                    .filter(|&c| state.cand[c] == pair)
                    .fold(0u128, |set, c| set | 1 << c);
                // Per extra digit, the cells that could lie on a loop
                // holding the pair and that digit alone.
                let mut with_one = [0u8; 9];
                for c in cells_of(on_loops) {
                    let extra = state.cand[c] & !pair;
                    if extra.count_ones() == 1 {
                        with_one[extra.trailing_zeros() as usize] += 1;
                    }
                }
                let few_extras = with_one.iter().all(|&n| n < 3);
                (all, on_loops, alone, few_extras)
            });
        // A loop needs four cells or more.
        if holders & (1 << start) == 0 || holders.count_ones() < 4 {
            continue;
        }
        let p = v1 * 9 + v2;
        walked[p] = all_holders;
        if memory
            .as_ref()
            .is_some_and(|m| m.closes_none(p, all_holders, state))
        {
            continue;
        }
        path.clear();
        path.push(start);
        let mut search = LoopSearch {
            state,
            pair,
            all_holders,
            holders,
            earlier: if prune {
                alone & ((1u128 << start) - 1)
            } else {
                0
            },
            path,
            with_extras: 0,
            few_extras,
            on_path: 1 << start,
            used: [house_set(start), 0],
            easiest: &mut easiest,
            judged: &mut judged,
        };
        search.walk(2, 0, usize::MAX);
        path = search.path;
    }
    if let Some(memory) = memory.as_mut() {
        // Recorded only when no step was found: then no walk was cut
        // short. The pairs passed over are recorded again (their cells
        // are the same), so every record is of this call's candidates.
        let stepped = easiest.tenths != u16::MAX;
        for (p, &holders) in walked.iter().enumerate() {
            let looped = judged.iter().any(|&(pair, _)| pair_index(pair) == p);
            memory.holders[p] = if stepped || looped { 0 } else { holders };
        }
        memory.cand = state.cand;
    }
    easiest.finish(found)
}

/// The index `v1 * 9 + v2` of a pair of digits given as a 9-bit set.
fn pair_index(pair: u16) -> usize {
    pair.trailing_zeros() as usize * 9 + 15 - pair.leading_zeros() as usize
}

fn loop_hints(state: &State, lp: &[usize], pair: u16, easiest: &mut Easiest) {
    let base = loop_tenths(lp.len());
    let technique = if lp.len() == 4 {
        Technique::UniqueRectangle
    } else {
        Technique::UniqueLoop
    };
    let extras: Vec<usize> = lp
        .iter()
        .copied()
        .filter(|&c| state.cand[c].count_ones() > 2)
        .collect();
    let common_peers =
        |cells: &[usize]| -> u128 { cells.iter().fold(!0u128 >> 47, |set, &c| set & PEERS[c]) };
    match extras.len() {
        1 => easiest.offer(state, base, 1, technique, |f| {
            f.eliminate(state, extras[0], pair)
        }),
        n if n > 2 => {
            let extra = extras.iter().fold(0, |m, &c| m | (state.cand[c] & !pair));
            if extra.count_ones() == 1 {
                easiest.offer(state, base, 2, technique, |f| {
                    for cell in cells_of(common_peers(&extras)) {
                        f.eliminate(state, cell, extra);
                    }
                });
            }
        }
        2 => {
            let (c1, c2) = (extras[0], extras[1]);
            let extra = (state.cand[c1] | state.cand[c2]) & !pair;
            if extra.count_ones() == 1 {
                easiest.offer(state, base, 2, technique, |f| {
                    for cell in cells_of(common_peers(&extras)) {
                        f.eliminate(state, cell, extra);
                    }
                });
            } else {
                let t = Type3 {
                    state,
                    technique,
                    base,
                    pair,
                    c1,
                    c2,
                    extra,
                };
                t.search(easiest);
            }
            // Type 4.
            let v1 = pair & pair.wrapping_neg();
            let v2 = pair & !v1;
            for house in shared_houses(c1, c2) {
                for (lock, other) in [(v1, v2), (v2, v1)] {
                    let elsewhere = HOUSES[house].iter().any(|&c| {
                        let c = usize::from(c);
                        c != c1 && c != c2 && state.cand[c] & lock != 0
                    });
                    if !elsewhere {
                        easiest.offer(state, base, 4, technique, |f| {
                            f.eliminate(state, c1, other);
                            f.eliminate(state, c2, other);
                        });
                    }
                }
            }
        }
        _ => {}
    }
}

/// The houses both cells are in.
pub(super) fn shared_houses(a: usize, b: usize) -> impl Iterator<Item = usize> {
    houses_of(a)
        .into_iter()
        .filter(move |h| houses_of(b).contains(h))
}

/// Unique loop type 3 on the two cells `c1`, `c2` with extra digits
/// `extra` (two or more).
struct Type3<'a> {
    state: &'a State,
    technique: Technique,
    base: u16,
    pair: u16,
    c1: usize,
    c2: usize,
    extra: u16,
}

impl Type3<'_> {
    /// In each house the two cells share, the naked and hidden subsets.
    fn search(&self, easiest: &mut Easiest) {
        for house in shared_houses(self.c1, self.c2) {
            let cells = &HOUSES[house];
            let empty = cells
                .iter()
                .filter(|&&c| self.state.value[usize::from(c)] == 0)
                .count();
            for degree in self.extra.count_ones()..=7 {
                if 2 * degree as usize <= empty {
                    self.naked(cells, degree, easiest);
                }
                if 2 * (degree as usize) < empty && degree >= 2 {
                    self.hidden(cells, degree, easiest);
                }
            }
        }
    }

    /// Naked: the pseudo-cell (the extras) and `degree - 1` other cells
    /// hold `degree` digits.
    fn naked(&self, cells: &[u8; 9], degree: u32, easiest: &mut Easiest) {
        let (state, c1, c2) = (self.state, self.c1, self.c2);
        let both_extra = self.extra & state.cand[c1] & state.cand[c2];
        let others: [u16; 9] = std::array::from_fn(|i| {
            let c = usize::from(cells[i]);
            if c == c1 || c == c2 { 0 } else { state.cand[c] }
        });
        naked_with(&others, degree - 1, self.extra, &mut |chosen, union| {
            // Every extra digit not in both cells is in another.
            if (both_extra | others_union(&others, chosen)).count_ones() != degree {
                return;
            }
            easiest.offer(
                state,
                self.base + (degree as u16 - 1),
                3,
                self.technique,
                |f| {
                    for d in bits(union) {
                        let bit = 1u16 << d;
                        let holders = [c1, c2]
                            .into_iter()
                            .chain(bits(chosen).map(|i| usize::from(cells[i])))
                            .filter(|&c| state.cand[c] & bit != 0)
                            .fold(0u128, |s, c| s | 1 << c);
                        let victims = cells_of(holders).fold(!0u128 >> 47, |s, c| s & PEERS[c]);
                        for v in cells_of(victims) {
                            f.eliminate(state, v, bit);
                        }
                    }
                },
            );
        });
    }

    /// Hidden: the pair's digits and `degree - 2` digits outside the
    /// extras have `degree` places in the house, counting the two cells
    /// as one.
    fn hidden(&self, cells: &[u8; 9], degree: u32, easiest: &mut Easiest) {
        let state = self.state;
        let index_of = |cell: usize| cells.iter().position(|&c| usize::from(c) == cell);
        let (i1, i2) = (
            index_of(self.c1).unwrap_or(9),
            index_of(self.c2).unwrap_or(9),
        );
        let places = |d: usize| -> u16 {
            cells
                .iter()
                .enumerate()
                .filter(|&(i, &c)| i != i2 && state.cand[usize::from(c)] & (1 << d) != 0)
                .fold(0, |m, (i, _)| m | 1 << i)
        };
        let rest = 0x1FF & !self.pair & !self.extra;
        for_each_subset(rest, degree - 2, &mut |chosen| {
            let digits = chosen | self.pair;
            let mut union = 0u16;
            for d in bits(digits) {
                let p = places(d);
                if p == 0 {
                    return;
                }
                union |= p;
            }
            if union.count_ones() != degree {
                return;
            }
            let hidden = union & !(1 << i1);
            easiest.offer(
                state,
                self.base + (degree as u16 - 2),
                3,
                self.technique,
                |f| {
                    for i in bits(hidden) {
                        f.eliminate(state, usize::from(cells[i]), !digits & 0x1FF);
                    }
                },
            );
        });
    }
}

/// The union of the candidates of the chosen other cells.
fn others_union(others: &[u16; 9], chosen: u16) -> u16 {
    bits(chosen).fold(0, |m, i| m | others[i])
}

/// Calls `hit(chosen, union)` for each choice of `k` of the `others` with
/// two candidates or more whose candidates with `extra` make exactly
/// `k + 1` digits.
fn naked_with(others: &[u16; 9], k: u32, extra: u16, hit: &mut impl FnMut(u16, u16)) {
    fn walk(
        others: &[u16; 9],
        start: usize,
        left: u32,
        k: u32,
        chosen: u16,
        union: u16,
        hit: &mut impl FnMut(u16, u16),
    ) {
        if left == 0 {
            if union.count_ones() == k + 1 {
                hit(chosen, union);
            }
            return;
        }
        for i in start..9 {
            let union = union | others[i];
            if others[i].count_ones() >= 2 && union.count_ones() <= k + 1 {
                walk(others, i + 1, left - 1, k, chosen | 1 << i, union, hit);
            }
        }
    }
    walk(others, 0, k, k, 0, extra, hit);
}

/// Calls `hit(chosen)` for each `k`-digit subset of `digits`.
fn for_each_subset(digits: u16, k: u32, hit: &mut impl FnMut(u16)) {
    fn walk(digits: u16, k: u32, chosen: u16, hit: &mut impl FnMut(u16)) {
        if k == 0 {
            hit(chosen);
            return;
        }
        for d in bits(digits) {
            let rest = digits & !((2u16 << d) - 1);
            walk(rest, k - 1, chosen | 1 << d, hit);
        }
    }
    if (digits.count_ones()) >= k {
        walk(digits, k, 0, hit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state whose only open cells are `cells` (row, column, digits;
    /// from 0), every other cell counting as placed.
    fn state(cells: &[(usize, usize, &str)]) -> State {
        let mut cand = [0u16; 81];
        for &(r, c, digits) in cells {
            cand[r * 9 + c] = mask(digits);
        }
        State::with_candidates(cand)
    }

    /// A step's technique, difficulty and removals (cell, digits).
    type Step = (Technique, u16, Vec<(usize, u16)>);

    /// The unique loops' step.
    fn removals(state: &State) -> Option<Step> {
        let mut found = Found::default();
        let (technique, tenths) = unique_loops(state, &mut found)?;
        let removed = (0..81)
            .filter(|&c| found.elim[c] != 0)
            .map(|c| (c, found.elim[c]))
            .collect();
        Some((technique, tenths, removed))
    }

    /// Digits as a candidate mask.
    fn mask(digits: &str) -> u16 {
        digits.bytes().fold(0, |m, b| m | 1 << (b - b'1'))
    }

    /// Two rectangles at 4.5 share a cell: a type 1 on 7 and 8 (cells
    /// r1c4, r1c8, r3c4, r3c8, the last with a 6), and a type 4 on 6 and
    /// 8 (r3c7, r3c8 with extras, r4c7, r4c8; 6 only there in row 3).
    /// Only the type 1 is taken: the step is SE's one hint, the easiest
    /// by difficulty then type.
    #[test]
    fn a_step_takes_one_loop_the_easiest_by_type() {
        let grid = state(&[
            (0, 3, "78"),
            (0, 7, "78"),
            (2, 3, "78"),
            (2, 7, "678"),
            (2, 6, "568"),
            (3, 6, "68"),
            (3, 7, "68"),
        ]);
        let (technique, tenths, removed) = removals(&grid).expect("a rectangle");
        assert_eq!((technique, tenths), (Technique::UniqueRectangle, 45));
        assert_eq!(removed, vec![(2 * 9 + 7, mask("78"))]);
    }

    /// Two disjoint type 1 rectangles: the step takes the one found
    /// first, from the lower start cell.
    #[test]
    fn a_step_takes_the_first_loop_in_scan_order() {
        let grid = state(&[
            (0, 0, "12"),
            (0, 3, "12"),
            (1, 0, "12"),
            (1, 3, "123"),
            (6, 1, "45"),
            (6, 7, "45"),
            (8, 1, "456"),
            (8, 7, "45"),
        ]);
        let (_, _, removed) = removals(&grid).expect("a rectangle");
        assert_eq!(removed, vec![(9 + 3, mask("12"))]);
    }

    /// A loop of six cells on 1 and 2 (r4c1, r4c5, r1c5, r1c6, r6c6,
    /// r6c1), three of them with an extra 3: a type 2 at 4.6 that takes
    /// the 3 from r3c5, which sees all three.
    fn six_cell_loop() -> Vec<(usize, usize, &'static str)> {
        vec![
            (3, 0, "12"),
            (3, 4, "123"),
            (0, 4, "123"),
            (0, 5, "123"),
            (5, 5, "12"),
            (5, 0, "12"),
            (2, 4, "39"),
        ]
    }

    #[test]
    fn a_loop_with_one_extra_digit_is_a_type_2() {
        let (technique, tenths, removed) = removals(&state(&six_cell_loop())).expect("the loop");
        assert_eq!((technique, tenths), (Technique::UniqueLoop, 46));
        assert_eq!(removed, vec![(2 * 9 + 4, mask("3"))]);
    }

    /// The same loop with two more cells holding 1, 2 and a 4, met just
    /// before the third cell with an extra digit whichever way the loop
    /// is walked (r2c5 before r4c5 in column 5, r1c4 before r1c6 in row 1
    /// and box 2): SE 1.2.1 gathers the extra digits of every cell met,
    /// so the third cell is refused (two extra digits, no cell with
    /// extras allowed any more) and the loop is never found.
    #[test]
    fn extra_digits_of_cells_met_on_the_way_close_the_loop_to_a_third_extra_cell() {
        let mut cells = six_cell_loop();
        cells.extend([(1, 4, "124"), (0, 3, "124")]);
        assert_eq!(removals(&state(&cells)), None);
    }

    /// Passing over the paths that only earlier starts' loops can close,
    /// and the pairs a path's memory says close no loop, changes no step:
    /// at every state of the rated paths of generated puzzles (rated 4.0
    /// to 6.6, and the hard ones), the loops searched with and without
    /// them give the same step.
    #[test]
    fn passing_over_earlier_starts_and_remembered_pairs_changes_no_step() {
        use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        let puzzles = mid_and_hard_puzzles(7, 60);
        let (mut checked, mut stepped, mut spared) = (0, 0, 0);
        for grid in &puzzles {
            let mut memory = LoopMemory::new();
            for_each_state_on_path(grid, |state, _| {
                let digit_holders = holders(&state.cand);
                spared += usize::from((0..81).any(|p| {
                    let (v1, v2) = (p / 9, p % 9);
                    v1 < v2 && memory.closes_none(p, digit_holders[v1] & digit_holders[v2], state)
                }));
                let (mut pruned, mut whole) = (Found::default(), Found::default());
                let step = search_loops(state, &mut pruned, true, Some(&mut memory));
                assert_eq!(step, search_loops(state, &mut whole, false, None), "{grid}");
                assert_eq!(pruned.elim, whole.elim, "{grid}");
                checked += 1;
                stepped += usize::from(step.is_some());
            });
        }
        assert!(checked > 3000, "{checked}");
        assert!(stepped > 100, "{stepped}");
        assert!(spared > 1000, "{spared}");
    }

    proptest::proptest! {
        /// Every set of cells that could make a valid loop (each house
        /// meeting it holds two of its cells, as `is_valid_loop` requires)
        /// is kept whole by `loop_cells`; the holders are drawn from the
        /// top-left six rows and columns, where such sets are common.
        #[test]
        fn loop_cells_keep_every_set_a_valid_loop_could_make(
            picked in proptest::collection::btree_set(0usize..36, 4..=12),
        ) {
            let cells: Vec<usize> = picked.iter().map(|&i| i / 6 * 9 + i % 6).collect();
            let holders = cells.iter().fold(0u128, |set, &c| set | 1 << c);
            let kept = loop_cells(holders);
            for choice in 1u16..1 << cells.len() {
                let set = bits(choice).fold(0u128, |set, i| set | 1 << cells[i]);
                let paired = HOUSE_CELLS
                    .iter()
                    .all(|&house| matches!((house & set).count_ones(), 0 | 2));
                if set.count_ones() >= 4 && paired {
                    proptest::prop_assert_eq!(set & !kept, 0);
                }
            }
        }

        /// A valid loop meets each of its houses at two of its cells: the
        /// fact `loop_cells` rests on. Checked on every order of sets of
        /// four to six cells drawn from two bands and two stacks.
        #[test]
        fn a_valid_loop_holds_two_cells_of_each_house_it_meets(
            picked in proptest::collection::btree_set(0usize..36, 4..=6),
        ) {
            let cells: Vec<usize> = picked.iter().map(|&i| i / 6 * 9 + i % 6).collect();
            let set = cells.iter().fold(0u128, |set, &c| set | 1 << c);
            let mut order = cells.clone();
            super::super::tests::for_each_order(&mut order, 0, &mut |lp| {
                if is_valid_loop(lp) {
                    for house in HOUSE_CELLS {
                        assert!(matches!((house & set).count_ones(), 0 | 2), "{lp:?}");
                    }
                }
            });
        }
    }
}
