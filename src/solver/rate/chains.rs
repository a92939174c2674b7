//! SE's "forcing chains and cycles" producer (its unary chaining): from a
//! candidate assumed true or false, follow the direct consequences and
//! look for the assumption's own negation (a forcing chain) or for the
//! way back to it (a cycle).
//!
//! A *node* is a candidate (cell, digit) with a truth value. From a true
//! node: the digit leaves the cell's peers, and, where links between
//! digits of a cell are allowed ("Y"), the cell's other digits go false.
//! From a false node: where links within houses are allowed ("X"), the
//! digit's only other place in a house goes true, and with "Y" a bivalue
//! cell's other digit goes true. Three passes, as SE makes them: X only
//! (one digit), Y only (cycles from bivalue cells), and both.
//!
//! The complexity of a conclusion is the number of nodes on its chain,
//! both ends counted; its difficulty is the pass's base plus SE's length
//! rise ([`length_tenths`]).

use super::state::{Found, HOUSES, HOUSES_OF, Index, PEERS, State, bits, cells_of};
use super::{Budget, Exhausted, Technique};

/// Nodes: `(cell * 9 + digit) * 2 + truth`.
fn node(cell: usize, d: usize, on: bool) -> usize {
    (cell * 9 + d) * 2 + usize::from(on)
}

/// SE's rise for a chain of `complexity` nodes, in tenths: 0.1 each time
/// `complexity - 2` passes a ceiling that starts at 4 and grows by 3/2
/// and 4/3 in turn (4, 6, 8, 12, 16, 24, ...).
pub(super) fn length_tenths(complexity: u32) -> u16 {
    let length = complexity.saturating_sub(2);
    let (mut ceil, mut odd, mut added) = (4u32, false, 0u16);
    while length > ceil {
        added += 1;
        ceil = if odd { ceil * 4 / 3 } else { ceil * 3 / 2 };
        odd = !odd;
    }
    added
}

/// Which links a pass follows.
#[derive(Clone, Copy)]
struct Links {
    x: bool,
    y: bool,
}

/// The links of one state, as bit sets: where each digit may go, and
/// for each digit and cell the places linked to it by a house where the
/// digit has two places.
struct Graph {
    holders: [u128; 9],
    conj: Box<[[u128; 81]; 9]>,
    bivalue: u128,
}

impl Graph {
    fn new(state: &State, index: &Index) -> Graph {
        let mut holders = [0u128; 9];
        let mut bivalue = 0u128;
        for (cell, &cand) in state.cand.iter().enumerate() {
            for d in bits(cand) {
                holders[d] |= 1 << cell;
            }
            if cand.count_ones() == 2 {
                bivalue |= 1 << cell;
            }
        }
        let mut conj = Box::new([[0u128; 81]; 9]);
        for (house, places) in index.places.iter().enumerate() {
            for (d, &p) in places.iter().enumerate() {
                if p.count_ones() == 2 {
                    let [a, b] = [p.trailing_zeros(), 15 - p.leading_zeros()]
                        .map(|i| usize::from(HOUSES[house][i as usize]));
                    conj[d][a] |= 1 << b;
                    conj[d][b] |= 1 << a;
                }
            }
        }
        Graph {
            holders,
            conj,
            bivalue,
        }
    }
}

/// Breadth-first layers (in links) from a start node, on bit sets: layer
/// `k` holds the nodes first reached after `k` links, true nodes on the
/// start's parity when it is true.
struct Search {
    layers: Vec<[u128; 9]>,
    start_on: bool,
}

impl Search {
    fn new() -> Search {
        Search {
            layers: Vec::with_capacity(64),
            start_on: true,
        }
    }

    /// The distance of `n` from the start, `u16::MAX` if unreached.
    fn dist(&self, n: usize) -> u16 {
        let (cell, d, on) = (n / 18, n / 2 % 9, n % 2 == 1);
        let first = usize::from(on != self.start_on);
        (first..self.layers.len())
            .step_by(2)
            .find(|&k| self.layers[k][d] & (1 << cell) != 0)
            .map_or(u16::MAX, |k| k as u16)
    }

    /// Searches from `start`; one unit of work per node reached.
    fn run(
        &mut self,
        state: &State,
        graph: &Graph,
        links: Links,
        start: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        self.layers.clear();
        let (cell, d) = (start / 18, start / 2 % 9);
        let mut frontier = [0u128; 9];
        frontier[d] = 1 << cell;
        let (mut seen_on, mut seen_off) = ([0u128; 9], [0u128; 9]);
        let mut on = start % 2 == 1;
        self.start_on = on;
        if on {
            seen_on = frontier;
        } else {
            seen_off = frontier;
        }
        self.layers.push(frontier);
        loop {
            let mut next = [0u128; 9];
            for (d, &cells) in frontier.iter().enumerate() {
                for c in cells_of(cells) {
                    if on {
                        next[d] |= PEERS[c] & graph.holders[d];
                        if links.y {
                            for e in bits(state.cand[c] & !(1 << d)) {
                                next[e] |= 1 << c;
                            }
                        }
                    } else {
                        if links.x {
                            next[d] |= graph.conj[d][c];
                        }
                        if links.y && graph.bivalue & (1 << c) != 0 {
                            let e = (state.cand[c] & !(1 << d)).trailing_zeros() as usize;
                            next[e] |= 1 << c;
                        }
                    }
                }
            }
            let seen = if on { &mut seen_off } else { &mut seen_on };
            let mut count = 0u64;
            for (d, set) in next.iter_mut().enumerate() {
                *set &= !seen[d];
                seen[d] |= *set;
                count += u64::from(set.count_ones());
            }
            if count == 0 {
                return Ok(());
            }
            if !budget.spend_many(count) {
                return Err(Exhausted);
            }
            self.layers.push(next);
            frontier = next;
            on = !on;
        }
    }

    /// Calls `hit` with each node one link nearer the start with a link
    /// to `n`.
    fn preds(
        &self,
        state: &State,
        graph: &Graph,
        links: Links,
        n: usize,
        hit: &mut impl FnMut(usize),
    ) {
        let want = self.dist(n).wrapping_sub(1);
        let (cell, d) = (n / 18, n / 2 % 9);
        let mut check = |m: usize| {
            if self.dist(m) == want {
                hit(m);
            }
        };
        if n & 1 == 0 {
            // A false node: the digit true in a peer, or (Y) another digit
            // of the cell true.
            for q in cells_of(PEERS[cell] & graph.holders[d]) {
                check(node(q, d, true));
            }
            if links.y {
                for e in bits(state.cand[cell] & !(1 << d)) {
                    check(node(cell, e, true));
                }
            }
        } else {
            if links.x {
                for p in cells_of(graph.conj[d][cell]) {
                    check(node(p, d, false));
                }
            }
            if links.y && graph.bivalue & (1 << cell) != 0 {
                let e = (state.cand[cell] & !(1 << d)).trailing_zeros() as usize;
                check(node(cell, e, false));
            }
        }
    }
}

/// A conclusion and what it weighs, for choosing the easiest.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Weight {
    tenths: u16,
    complexity: u32,
    /// SE's tie-break between passes: X 2, Y 3, both 4.
    pass: u8,
}

/// The easiest conclusions found, merged.
struct Best {
    weight: Option<Weight>,
    technique: Technique,
    found: Found,
}

impl Best {
    fn offer(
        &mut self,
        state: &State,
        weight: Weight,
        technique: Technique,
        cell: usize,
        elim: u16,
    ) {
        let elim = elim & state.cand[cell];
        if elim == 0 || self.weight.is_some_and(|w| weight > w) {
            return;
        }
        if self.weight != Some(weight) {
            self.weight = Some(weight);
            self.technique = technique;
            self.found.clear();
        }
        self.technique = self.technique.min(technique);
        self.found.eliminate(state, cell, elim);
    }
}

/// SE's unary chaining: the cycles ([`cycles`]) and the forcing chains.
/// Forcing chains: a candidate whose truth leads
/// to its falsehood is removed; one whose falsehood leads to its truth is
/// placed (its cell loses the other digits). One digit (X links only,
/// "forcing x-chain", 6.6) or any (X and Y links, "forcing chain", 7.0),
/// plus the length rise. Takes the easiest conclusions (by difficulty,
/// then complexity, then pass), every one of them.
#[inline(never)]
pub(super) fn unary_chaining(
    state: &State,
    index: &Index,
    found: &mut Found,
    budget: &mut Budget,
) -> Result<Option<(Technique, u16)>, Exhausted> {
    let mut best = Best {
        weight: None,
        technique: Technique::FullHouse,
        found: Found::default(),
    };
    let graph = Graph::new(state, index);
    let mut search = Search::new();
    cycles(state, index, &graph, &mut search, &mut best, budget)?;
    let passes = [
        (
            Links { x: true, y: false },
            66,
            2u8,
            Technique::ForcingXChain,
        ),
        (Links { x: true, y: true }, 70, 4u8, Technique::ForcingChain),
    ];
    for (links, base, pass, technique) in passes {
        for cell in 0..81 {
            if state.cand[cell].count_ones() < 2 {
                continue;
            }
            for d in bits(state.cand[cell]) {
                // From the candidate true: done with the cycles. From it
                // false: a chain back to it true places it.
                let start = node(cell, d, false);
                search.run(state, &graph, links, start, budget)?;
                let back = search.dist(node(cell, d, true));
                if back == u16::MAX {
                    continue;
                }
                let complexity = u32::from(back) + 1;
                let weight = Weight {
                    tenths: base + length_tenths(complexity),
                    complexity,
                    pass,
                };
                best.offer(state, weight, technique, cell, state.cand[cell] & !(1 << d));
            }
        }
    }
    Ok(match best.weight {
        Some(w) if best.found.any => {
            *found = best.found;
            Some((best.technique, w.tenths))
        }
        _ => None,
    })
}

/// SE's cycles ("bidirectional" X-, Y- and XY-cycles): from a candidate
/// assumed true, a chain back to it. A shortest chain to some true node
/// `u`, then a false node `o` that `u` forces and that forces the start,
/// with `o` not on the chain and at least four links in all. A candidate
/// outside the cycle's cells that sees a true node and a false node of
/// its digit on the cycle is removed. X only (6.5), Y only from bivalue
/// cells (6.5), or both (7.0), plus the length rise of the cycle's node
/// count.
#[inline(never)]
fn cycles(
    state: &State,
    index: &Index,
    graph: &Graph,
    dag: &mut Search,
    best: &mut Best,
    budget: &mut Budget,
) -> Result<(), Exhausted> {
    let passes = [
        (
            Links { x: true, y: false },
            65,
            2u8,
            Technique::BidirectionalXCycle,
        ),
        (
            Links { x: false, y: true },
            65,
            3u8,
            Technique::BidirectionalYCycle,
        ),
        (
            Links { x: true, y: true },
            70,
            4u8,
            Technique::BidirectionalCycle,
        ),
    ];
    let mut path = Vec::new();
    let (mut closing, mut us) = (Vec::new(), Vec::new());
    for (links, base, pass, technique) in passes {
        for (cell, &cands) in state.cand.iter().enumerate() {
            let n = cands.count_ones();
            if n < 2 || (!links.x && n > 2) {
                continue;
            }
            for d in bits(state.cand[cell]) {
                let start = node(cell, d, true);
                dag.run(state, graph, links, start, budget)?;
                // The forcing chain from the candidate true, on the same
                // search (X and XY passes).
                if let Some((fbase, fpass, ftech)) = forcing_of(links) {
                    let back = dag.dist(node(cell, d, false));
                    if back != u16::MAX {
                        let complexity = u32::from(back) + 1;
                        let weight = Weight {
                            tenths: fbase + length_tenths(complexity),
                            complexity,
                            pass: fpass,
                        };
                        best.offer(state, weight, ftech, cell, 1 << d);
                    }
                }
                // The false nodes that force the start: the digit's other
                // place in a house where it has two (X), the other digit
                // of a bivalue cell (Y).
                closing.clear();
                let bit = 1u16 << d;
                if links.x {
                    for &house in &HOUSES_OF[cell] {
                        let places = index.places[usize::from(house)][d];
                        if places.count_ones() == 2 {
                            for i in bits(places) {
                                let c = usize::from(HOUSES[usize::from(house)][i]);
                                if c != cell {
                                    closing.push(node(c, d, false));
                                }
                            }
                        }
                    }
                }
                if links.y && n == 2 {
                    let e = (state.cand[cell] & !bit).trailing_zeros() as usize;
                    closing.push(node(cell, e, false));
                }
                for &o in &closing {
                    // Every true node u that forces o, two links out or
                    // more: the digit in a peer, or (Y) another digit of
                    // the cell.
                    let (oc, od) = (o / 18, o / 2 % 9);
                    us.clear();
                    for q in cells_of(PEERS[oc]) {
                        if state.cand[q] & (1 << od) != 0 {
                            us.push(node(q, od, true));
                        }
                    }
                    if links.y {
                        for e in bits(state.cand[oc] & !(1 << od)) {
                            us.push(node(oc, e, true));
                        }
                    }
                    for &u in &us {
                        let du = dag.dist(u);
                        if u == start || du == u16::MAX || du < 2 {
                            continue;
                        }
                        let complexity = u32::from(du) + 2;
                        let weight = Weight {
                            tenths: base + length_tenths(complexity),
                            complexity,
                            pass,
                        };
                        if best.weight.is_some_and(|w| weight > w) {
                            continue;
                        }
                        path.clear();
                        path.push(u);
                        let walk = Walk {
                            state,
                            graph,
                            links,
                            dag,
                        };
                        walk.each_path(&mut path, budget, &mut |path| {
                            if path.contains(&o) {
                                return;
                            }
                            cycle_eliminations(state, path, o, &mut |c, elim| {
                                best.offer(state, weight, technique, c, elim)
                            });
                        })?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The forcing chains a cycle pass's searches also give: X forcing
/// chains (6.6) and XY ones (7.0); none for the Y pass.
fn forcing_of(links: Links) -> Option<(u16, u8, Technique)> {
    match (links.x, links.y) {
        (true, false) => Some((66, 2, Technique::ForcingXChain)),
        (true, true) => Some((70, 4, Technique::ForcingChain)),
        _ => None,
    }
}

/// Shortest paths back to the start of a search.
struct Walk<'a> {
    state: &'a State,
    graph: &'a Graph,
    links: Links,
    dag: &'a Search,
}

impl Walk<'_> {
    /// Calls `hit` with every shortest path from the start to `path[0]`
    /// (listed from its end back to the start); one unit of work per node.
    fn each_path(
        &self,
        path: &mut Vec<usize>,
        budget: &mut Budget,
        hit: &mut impl FnMut(&[usize]),
    ) -> Result<(), Exhausted> {
        let Some(&last) = path.last() else {
            return Ok(());
        };
        if !budget.spend() {
            return Err(Exhausted);
        }
        if self.dag.dist(last) == 0 {
            hit(path);
            return Ok(());
        }
        // At most 20 peers and 8 other digits, or 3 partners and 1 digit.
        let (mut preds, mut n) = ([0usize; 32], 0);
        self.dag
            .preds(self.state, self.graph, self.links, last, &mut |p| {
                preds[n] = p;
                n += 1;
            });
        for &p in &preds[..n] {
            path.push(p);
            self.each_path(path, budget, hit)?;
            path.pop();
        }
        Ok(())
    }
}

/// The eliminations of the cycle made of `path` and `o`: a candidate
/// outside its cells seeing a true and a false node of its digit.
fn cycle_eliminations(state: &State, path: &[usize], o: usize, out: &mut impl FnMut(usize, u16)) {
    let nodes = path.iter().copied().chain([o]);
    let cells: u128 = nodes.clone().fold(0, |s, n| s | 1 << (n / 18));
    let (mut on, mut off) = ([0u16; 81], [0u16; 81]);
    for n in nodes {
        let (cell, bit) = (n / 18, 1u16 << (n / 2 % 9));
        let side = if n % 2 == 1 { &mut on } else { &mut off };
        for q in cells_of(PEERS[cell] & !cells) {
            side[q] |= bit & state.cand[q];
        }
    }
    for q in 0..81 {
        if on[q] & off[q] != 0 {
            out(q, on[q] & off[q]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_rise_follows_ses_ceilings() {
        // Ceilings on complexity - 2: 4, 6, 8, 12, 16, 24, 32, ...
        let rises: Vec<u16> = [4, 6, 7, 8, 9, 10, 11, 14, 15, 18, 19, 26, 27, 34, 35]
            .map(length_tenths)
            .to_vec();
        assert_eq!(rises, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7]);
    }
}
