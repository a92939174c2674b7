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
const NODES: usize = 81 * 9 * 2;

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

/// Calls `next` with every node that follows from `n`.
fn follow(state: &State, index: &Index, links: Links, n: usize, next: &mut impl FnMut(usize)) {
    let (cell, d, on) = (n / 18, n / 2 % 9, n % 2 == 1);
    let bit = 1u16 << d;
    if on {
        if links.y {
            for e in bits(state.cand[cell] & !bit) {
                next(node(cell, e, false));
            }
        }
        for p in cells_of(PEERS[cell]) {
            if state.cand[p] & bit != 0 {
                next(node(p, d, false));
            }
        }
    } else {
        if links.y && state.cand[cell].count_ones() == 2 {
            let other = (state.cand[cell] & !bit).trailing_zeros() as usize;
            next(node(cell, other, true));
        }
        if links.x {
            for &house in &HOUSES_OF[cell] {
                let places = index.places[usize::from(house)][d];
                if places.count_ones() == 2 {
                    let [a, b] = [places.trailing_zeros(), 15 - places.leading_zeros()]
                        .map(|i| usize::from(HOUSES[usize::from(house)][i as usize]));
                    next(node(if a == cell { b } else { a }, d, true));
                }
            }
        }
    }
}

/// Breadth-first distances (in links) from `start`, `u16::MAX` where
/// unreached; one unit of work per node expanded.
fn distances(
    state: &State,
    index: &Index,
    links: Links,
    start: usize,
    dist: &mut [u16; NODES],
    queue: &mut Vec<usize>,
    budget: &mut Budget,
) -> Result<(), Exhausted> {
    dist.fill(u16::MAX);
    dist[start] = 0;
    queue.clear();
    queue.push(start);
    let mut head = 0;
    while let Some(&n) = queue.get(head) {
        head += 1;
        if !budget.spend() {
            return Err(Exhausted);
        }
        let here = dist[n];
        follow(state, index, links, n, &mut |m| {
            if dist[m] == u16::MAX {
                dist[m] = here + 1;
                queue.push(m);
            }
        });
    }
    Ok(())
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
    cycles(state, index, &mut best, budget)?;
    let mut dist = Box::new([0u16; NODES]);
    let mut queue = Vec::with_capacity(NODES);
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
                distances(state, index, links, start, &mut dist, &mut queue, budget)?;
                let back = dist[node(cell, d, true)];
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

/// Predecessors on shortest paths, for the cycles: `preds[n]` lists the
/// nodes one link nearer the start with a link to `n`.
struct Dag {
    dist: Box<[u16; NODES]>,
    preds: Vec<Vec<u16>>,
    queue: Vec<usize>,
}

impl Dag {
    fn new() -> Dag {
        Dag {
            dist: Box::new([u16::MAX; NODES]),
            preds: vec![Vec::new(); NODES],
            queue: Vec::with_capacity(NODES),
        }
    }

    /// Breadth-first from `start`, keeping every shortest-path
    /// predecessor; one unit of work per node expanded.
    fn search(
        &mut self,
        state: &State,
        index: &Index,
        links: Links,
        start: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        for &n in &self.queue {
            self.dist[n] = u16::MAX;
            self.preds[n].clear();
        }
        self.queue.clear();
        self.dist[start] = 0;
        self.queue.push(start);
        let mut head = 0;
        while let Some(&n) = self.queue.get(head) {
            head += 1;
            if !budget.spend() {
                return Err(Exhausted);
            }
            let here = self.dist[n];
            let (dist, preds, queue) = (&mut self.dist, &mut self.preds, &mut self.queue);
            follow(state, index, links, n, &mut |m| {
                if dist[m] == u16::MAX {
                    dist[m] = here + 1;
                    queue.push(m);
                }
                if dist[m] == here + 1 {
                    preds[m].push(n as u16);
                }
            });
        }
        Ok(())
    }
}

/// SE's cycles ("bidirectional" X-, Y- and XY-cycles): from a candidate
/// assumed true, a chain back to it. A shortest chain to some true node
/// `u`, then a false node `o` that `u` forces and that forces the start,
/// with `o` not on the chain and at least four links in all. A candidate
/// outside the cycle's cells that sees a true node and a false node of
/// its digit on the cycle is removed. X only (6.5), Y only from bivalue
/// cells (6.5), or both (7.0), plus the length rise of the cycle's node
/// count.
fn cycles(
    state: &State,
    index: &Index,
    best: &mut Best,
    budget: &mut Budget,
) -> Result<(), Exhausted> {
    let mut dag = Dag::new();
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
                dag.search(state, index, links, start, budget)?;
                // The forcing chain from the candidate true, on the same
                // search (X and XY passes).
                if let Some((fbase, fpass, ftech)) = forcing_of(links) {
                    let back = dag.dist[node(cell, d, false)];
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
                        let du = dag.dist[u];
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
                        each_path(&dag, &mut path, budget, &mut |path| {
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

/// Calls `hit` with every shortest path from the start to `path[0]`
/// (listed from its end back to the start); one unit of work per node.
fn each_path(
    dag: &Dag,
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
    if dag.dist[last] == 0 {
        hit(path);
        return Ok(());
    }
    for &p in &dag.preds[last] {
        path.push(usize::from(p));
        each_path(dag, path, budget, hit)?;
        path.pop();
    }
    Ok(())
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
