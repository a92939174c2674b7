//! SE's cycles ("bidirectional" X-, Y- and XY-cycles), on the searches of
//! `chains.rs`: from a candidate assumed true, the shortest chains back to
//! it, and what the cycle they close eliminates.

use super::chains::{Best, Graph, Links, Search, Weight, forcing_of, length_tenths, node};
use super::reach::Lazy;
use super::state::{HOUSES, HOUSES_OF, Index, PEERS, State, bits, cells_of};
use super::{Budget, Exhausted, Technique};

/// SE's cycles ("bidirectional" X-, Y- and XY-cycles): from a candidate
/// assumed true, a chain back to it. A shortest chain to some true node
/// `u`, then a false node `o` that `u` forces and that forces the start,
/// with `o` not on the chain and at least four links in all. A candidate
/// outside the cycle's cells that sees a true node and a false node of
/// its digit on the cycle is removed. X only (6.5), Y only from bivalue
/// cells (6.5), or both (7.0), plus the length rise of the cycle's node
/// count.
#[inline(never)]
pub(super) fn cycles(
    state: &State,
    index: &Index,
    graph: &Graph,
    dag: &mut Search,
    best: &mut Best,
    budget: &mut Budget,
    graphs: &mut Lazy,
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
    let mut closing = Vec::new();
    for (links, base, pass, technique) in passes {
        if best.excludes(base) {
            // Every cycle of this pass is harder than what is found.
            continue;
        }
        // With links within houses, the graph's components tell which
        // searches can find a cycle or a forcing chain: those from a
        // start that lies on a cycle (reaches one of its closing nodes)
        // or reaches its own negation. Without them (Y only), the starts
        // are few.
        let reach = if links.x {
            Some(graphs.get(&state.cand, links.y, budget)?)
        } else {
            None
        };
        let mut pass = Pass {
            state,
            graph,
            links,
            base,
            pass,
            technique,
            path: Vec::new(),
            us: Vec::new(),
        };
        for (cell, &cands) in state.cand.iter().enumerate() {
            let n = cands.count_ones();
            if n < 2 || (!links.x && n > 2) {
                continue;
            }
            for d in bits(state.cand[cell]) {
                let start = node(cell, d, true);
                let fruitful =
                    reach.is_none_or(|r| r.reaches_conjugate(start) || r.on_cycle(start));
                if !fruitful {
                    continue;
                }
                closing_nodes(state, index, links, cell, d, &mut closing);
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
                for &o in &closing {
                    pass.close(dag, best, start, o, budget)?;
                }
            }
        }
    }
    Ok(())
}

/// The false nodes that force `d` in `cell` true: the digit's other place
/// in a house where it has two (X), the other digit of a bivalue cell (Y).
pub(super) fn closing_nodes(
    state: &State,
    index: &Index,
    links: Links,
    cell: usize,
    d: usize,
    out: &mut Vec<usize>,
) {
    out.clear();
    if links.x {
        for &house in &HOUSES_OF[cell] {
            let places = index.places[usize::from(house)][d];
            if places.count_ones() == 2 {
                for i in bits(places) {
                    let c = usize::from(HOUSES[usize::from(house)][i]);
                    if c != cell {
                        out.push(node(c, d, false));
                    }
                }
            }
        }
    }
    if links.y && state.cand[cell].count_ones() == 2 {
        let e = (state.cand[cell] & !(1u16 << d)).trailing_zeros() as usize;
        out.push(node(cell, e, false));
    }
}

/// One pass of the cycles: its links, base and tie-break, and scratch.
struct Pass<'a> {
    state: &'a State,
    graph: &'a Graph,
    links: Links,
    base: u16,
    pass: u8,
    technique: Technique,
    path: Vec<usize>,
    us: Vec<usize>,
}

impl Pass<'_> {
    /// The cycles through the closing node `o` of the search from
    /// `start`: every true node `u` that forces `o`, two links out or
    /// more (the digit in a peer, or with Y another digit of the cell),
    /// and every shortest chain from the start to it.
    fn close(
        &mut self,
        dag: &Search,
        best: &mut Best,
        start: usize,
        o: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        let state = self.state;
        let (oc, od) = (o / 18, o / 2 % 9);
        self.us.clear();
        for q in cells_of(PEERS[oc]) {
            if state.cand[q] & (1 << od) != 0 {
                self.us.push(node(q, od, true));
            }
        }
        if self.links.y {
            for e in bits(state.cand[oc] & !(1 << od)) {
                self.us.push(node(oc, e, true));
            }
        }
        for i in 0..self.us.len() {
            let u = self.us[i];
            let du = dag.dist(u);
            if u == start || du == u16::MAX || du < 2 {
                continue;
            }
            let complexity = u32::from(du) + 2;
            let weight = Weight {
                tenths: self.base + length_tenths(complexity),
                complexity,
                pass: self.pass,
            };
            if best.rejects(weight) {
                continue;
            }
            self.path.clear();
            self.path.push(u);
            let walk = Walk {
                state,
                graph: self.graph,
                links: self.links,
                dag,
            };
            let technique = self.technique;
            walk.each_path(&mut self.path, budget, &mut |path| {
                if path.contains(&o) {
                    return;
                }
                cycle_eliminations(state, path, o, &mut |c, elim| {
                    best.offer(state, weight, technique, c, elim)
                });
            })?;
        }
        Ok(())
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
