//! SE's cycles ("bidirectional" X-, Y- and XY-cycles), on the searches of
//! `chains.rs`: from a candidate assumed true, the shortest chains back to
//! it, and what the cycle they close eliminates.

use super::chains::{Best, Graph, Links, Search, Weight, forcing_of, length_tenths, node};
use super::reach::{Forced, Lazy};
use super::state::{
    CELL_BIT, HOUSE_CELLS, HOUSES, HOUSES_OF, Index, PEERS, State, bits, cells_of, has,
};
use super::{Budget, Exhausted, Technique};

/// SE's cycles ("bidirectional" X-, Y- and XY-cycles): from a candidate
/// assumed true, a chain back to it. A shortest chain to some true node
/// `u`, then a false node `o` that `u` forces and that forces the start,
/// with `o` not on the chain and at least four links in all. A candidate
/// outside the cycle's cells that sees a true node and a false node of
/// its digit on the cycle is removed. X only (6.5), Y only from bivalue
/// cells (6.5), or both (7.0), plus the length rise of the cycle's node
/// count. With X links only, only the starts of `x_digits` are searched,
/// and the pass with Y links only is passed over with `skip_y` (see
/// [`super::chains::unary_chaining`]).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) fn cycles(
    state: &State,
    index: &Index,
    graph: &Graph,
    dag: &mut Search,
    tree: &mut Tree,
    best: &mut Best,
    budget: &mut Budget,
    graphs: &mut Lazy,
    y_space: &mut Forced,
    x_digits: u16,
    skip_y: bool,
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
        if best.excludes(base) || (skip_y && !links.x) {
            // Every cycle of this pass is harder than what is found, or
            // it would find nothing again.
            continue;
        }
        // The graph's components tell which searches can find a cycle
        // that removes something or a forcing chain: those from a start
        // that lies on a cycle (reaches one of its closing nodes) in a
        // component where some candidate sees a true and a false node of
        // its digit, or that reaches its own negation. With Y links only,
        // the graph is that of the cells that can lie on a cycle.
        let reach: &Forced = if links.x {
            graphs.get(&state.cand, links.y, budget)?
        } else {
            let nodes = y_space.build_y_cycles(&state.cand, y_cycle_cells(state, graph));
            if !budget.spend_many(nodes as u64) {
                return Err(Exhausted);
            }
            y_space
        };
        // The tree of another pass or grid is not this pass's.
        tree.forget();
        let mut pass = Pass {
            state,
            graph,
            links,
            base,
            pass,
            technique,
            path: Vec::new(),
            us: Vec::new(),
            tree: &mut *tree,
        };
        for (cell, &cands) in state.cand.iter().enumerate() {
            let n = cands.count_ones();
            if n < 2 {
                continue;
            }
            let digits = if links.y { 0x1FF } else { x_digits };
            for d in bits(state.cand[cell] & digits) {
                let start = node(cell, d, true);
                if !reach.reaches_conjugate(start) && !reach.on_removing_cycle(start) {
                    continue;
                }
                // A cycle through a node `du` links out has `du + 2`
                // nodes, the forcing chain back to the start false `back
                // + 1`: the search goes no farther than the first may, and
                // half as far as the second ([`Search::to_negation`]).
                let cycle = best.most_nodes(base).saturating_sub(2);
                let chain = forcing_of(links)
                    .map_or(0, |(fbase, ..)| best.most_nodes(fbase).saturating_sub(1));
                let depth = cycle.max(chain.div_ceil(2)) as usize;
                if depth == 0 {
                    continue;
                }
                closing_nodes(state, index, links, cell, d, &mut closing);
                dag.run(state, graph, links, start, depth, budget)?;
                // The forcing chain from the candidate true, on the same
                // search (X and XY passes).
                if let Some((fbase, fpass, ftech)) = forcing_of(links) {
                    let back = dag.to_negation();
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

/// The bivalue cells that can lie on a cycle with links inside cells only
/// (a Y-cycle): its true nodes are all in bivalue cells, and each of its
/// cells, true for one digit and false for the other, has in the cycle a
/// bivalue peer holding the first (the next cell, false for it) and one
/// holding the second (the cell before, true for it). Cells without are
/// dropped until none is left to drop; no cycle loses a cell.
fn y_cycle_cells(state: &State, graph: &Graph) -> u128 {
    let mut cells = graph.bivalue;
    loop {
        let kept = cells_of(cells)
            .filter(|&c| bits(state.cand[c]).all(|d| PEERS[c] & cells & graph.holders[d] != 0))
            .fold(0u128, |set, c| set | 1 << c);
        if kept == cells {
            return kept;
        }
        cells = kept;
    }
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
struct Pass<'a, 't> {
    state: &'a State,
    graph: &'a Graph,
    links: Links,
    base: u16,
    pass: u8,
    technique: Technique,
    path: Vec<usize>,
    us: Vec<usize>,
    /// SE's chains from the current start, built when a cycle needs one.
    tree: &'t mut Tree,
}

impl Pass<'_, '_> {
    /// The cycles through the closing node `o` of the search from
    /// `start`: every true node `u` that forces `o`, two links out or
    /// more (the digit in a peer, or with Y another digit of the cell),
    /// with SE's chain from the start to it ([`Tree`]), `o` not on it.
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
        // A cycle through `u` has `dist(u) + 2` nodes: only the true
        // nodes reached within the links a kept cycle may have can close
        // one (the weights only grow along the loop below).
        let most = best.most_nodes(self.base).saturating_sub(2) as usize;
        let reached = |d: usize| dag.reached_within(d, true, most);
        self.us.clear();
        for q in cells_of(PEERS[oc] & self.graph.holders[od] & reached(od)) {
            self.us.push(node(q, od, true));
        }
        if self.links.y {
            for e in bits(state.cand[oc] & !(1 << od)) {
                if has(reached(e), oc) {
                    self.us.push(node(oc, e, true));
                }
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
            self.tree
                .reach(state, self.graph, self.links, start, u, budget)?;
            self.tree.chain(u, &mut self.path);
            if self.path.contains(&o) {
                continue;
            }
            let technique = self.technique;
            cycle_eliminations(&self.graph.holders, &self.path, o, &mut |c, elim| {
                best.offer(state, weight, technique, c, elim)
            });
        }
        Ok(())
    }
}

/// No parent: unreached, or the start.
const NO_PARENT: u16 = u16::MAX;

/// SE's breadth-first search from a start, in SE's order, keeping for
/// each node the first node that reached it: the chain SE's cycle through
/// a node follows. From a true node, in order: (with Y) the cell's other
/// digits false, then the digit false in the box's other cells, then in
/// the row's and the column's cells outside the box, each house in
/// reading order. From a false node: (with Y, in a bivalue cell) the
/// other digit true, then (with X) the digit true in the other place of
/// the box, the row and the column, where it has two. Every shortest
/// chain has the same length, but a cycle's removals depend on its
/// cells, and SE tries only this one.
///
/// The search runs only as far as the nodes asked for: a node's parent
/// is set when it is first reached and never changes, and every node of
/// a layer is expanded, in queue order, before any of the next. Kept from
/// one pass to the next: [`Tree::forget`] before another graph or links.
pub(super) struct Tree {
    /// The start the tree grows from, if any.
    start: Option<usize>,
    parent: Vec<u16>,
    /// The nodes reached, in SE's order, the start first.
    queue: Vec<u16>,
    /// How many of them are expanded.
    head: usize,
}

impl Tree {
    /// An empty tree; its tables are allocated by the first search, so a
    /// pass that closes no cycle allocates nothing.
    pub(super) fn new() -> Tree {
        Tree {
            start: None,
            parent: Vec::new(),
            queue: Vec::new(),
            head: 0,
        }
    }

    /// Grown from no start: the next search starts over, whatever its
    /// start (the parents set are cleared then).
    fn forget(&mut self) {
        self.start = None;
    }

    /// Starts over from `start`.
    fn restart(&mut self, start: usize) {
        if self.parent.is_empty() {
            self.parent = vec![NO_PARENT; 81 * 9 * 2];
        }
        for &n in &self.queue {
            self.parent[usize::from(n)] = NO_PARENT;
        }
        self.queue.clear();
        self.queue.push(start as u16);
        self.head = 0;
        self.start = Some(start);
    }

    /// Grows the tree from `start` until it reaches `target` (or reaches
    /// all it can); one unit of work per node reached.
    fn reach(
        &mut self,
        state: &State,
        graph: &Graph,
        links: Links,
        start: usize,
        target: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        if self.start != Some(start) {
            self.restart(start);
        }
        let before = self.queue.len();
        while self.parent[target] == NO_PARENT && target != start {
            let Some(&n) = self.queue.get(self.head) else {
                break;
            };
            self.head += 1;
            self.expand(state, graph, links, usize::from(n));
        }
        if budget.spend_many((self.queue.len() - before) as u64) {
            Ok(())
        } else {
            Err(Exhausted)
        }
    }

    /// Queues what node `n` reaches first, in SE's order.
    fn expand(&mut self, state: &State, graph: &Graph, links: Links, n: usize) {
        let (cell, d) = (n / 18, n / 2 % 9);
        let start = self.start;
        let mut reach = |m: usize| {
            if Some(m) != start && self.parent[m] == NO_PARENT {
                self.parent[m] = n as u16;
                self.queue.push(m as u16);
            }
        };
        let [row, col, boxed] = HOUSES_OF[cell].map(usize::from);
        if n & 1 == 1 {
            if links.y {
                for e in bits(state.cand[cell] & !(1 << d)) {
                    reach(node(cell, e, false));
                }
            }
            let box_cells = HOUSE_CELLS[boxed];
            let holders = graph.holders[d] & !CELL_BIT[cell];
            for house_cells in [
                box_cells,
                HOUSE_CELLS[row] & !box_cells,
                HOUSE_CELLS[col] & !box_cells,
            ] {
                for q in cells_of(house_cells & holders) {
                    reach(node(q, d, false));
                }
            }
        } else {
            if links.y && has(graph.bivalue, cell) {
                let e = (state.cand[cell] & !(1 << d)).trailing_zeros() as usize;
                reach(node(cell, e, true));
            }
            if links.x {
                for house in [boxed, row, col] {
                    let places = HOUSE_CELLS[house] & graph.holders[d];
                    if places.count_ones() == 2 {
                        reach(node(
                            (places & !CELL_BIT[cell]).trailing_zeros() as usize,
                            d,
                            true,
                        ));
                    }
                }
            }
        }
    }

    /// The chain from `n` back to the start, into `path` (`n` first).
    fn chain(&self, n: usize, path: &mut Vec<usize>) {
        path.clear();
        let mut at = n;
        path.push(at);
        while self.parent[at] != NO_PARENT {
            at = usize::from(self.parent[at]);
            path.push(at);
        }
    }
}

/// The eliminations of the cycle made of `path` and `o`: a candidate
/// outside its cells seeing a true and a false node of its digit
/// (`holders`: where each digit may go).
fn cycle_eliminations(
    holders: &[u128; 9],
    path: &[usize],
    o: usize,
    out: &mut impl FnMut(usize, u16),
) {
    let nodes = path.iter().copied().chain([o]);
    let cells: u128 = nodes.clone().fold(0, |s, n| s | 1 << (n / 18));
    // Per digit, the cells seeing a true node, and a false node, of it.
    let (mut on, mut off) = ([0u128; 9], [0u128; 9]);
    let mut digits = 0u16;
    for n in nodes {
        let (cell, d) = (n / 18, n / 2 % 9);
        digits |= 1 << d;
        let side = if n % 2 == 1 { &mut on } else { &mut off };
        side[d] |= PEERS[cell];
    }
    for d in bits(digits) {
        for q in cells_of(on[d] & off[d] & holders[d] & !cells) {
            out(q, 1 << d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state whose only candidates are the digit `d` (from 0) in
    /// `cells` (row, column; from 0).
    fn one_digit(d: usize, cells: &[(usize, usize)]) -> State {
        let mut cand = [0u16; 81];
        for &(r, c) in cells {
            cand[r * 9 + c] |= 1 << d;
        }
        State::with_candidates(cand)
    }

    /// No Y-cycle passes through a bivalue cell `y_cycle_cells` leaves
    /// out: at every state of the rated paths of generated puzzles and the
    /// hard test puzzles, a search with links inside cells only from each
    /// digit of such a cell never reaches, true, the other digit in a
    /// peer (the node that would force the cell's other digit false and
    /// close the cycle).
    #[test]
    fn cells_left_out_of_y_cycles_close_none() {
        use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        let puzzles = mid_and_hard_puzzles(13, 40);
        let mut search = Search::new();
        let mut budget = Budget { left: u64::MAX };
        let links = Links { x: false, y: true };
        let (mut left_out, mut kept) = (0, 0);
        for grid in &puzzles {
            for_each_state_on_path(grid, |state, index| {
                let graph = Graph::new(state, index);
                let cells = y_cycle_cells(state, &graph);
                kept += cells.count_ones();
                for cell in cells_of(graph.bivalue & !cells) {
                    left_out += 1;
                    for d in bits(state.cand[cell]) {
                        let e = (state.cand[cell] & !(1 << d)).trailing_zeros() as usize;
                        let start = node(cell, d, true);
                        search
                            .run(state, &graph, links, start, usize::MAX, &mut budget)
                            .unwrap();
                        let closing = search.reached_within(e, true, usize::MAX) & PEERS[cell];
                        assert_eq!(closing, 0, "{grid}: r{}c{}", cell / 9 + 1, cell % 9 + 1);
                    }
                }
            });
        }
        assert!(left_out > 1000, "{left_out}");
        assert!(kept > 1000, "{kept}");
    }

    /// No cycle through a true node that `on_removing_cycle` leaves out
    /// removes anything: at every state of the rated paths of generated
    /// puzzles and the hard test puzzles, closing every cycle SE's chain
    /// from such a node makes (no length limit) removes no candidate, with
    /// links within houses and inside cells (the components of
    /// [`Forced::build`]) and with links inside cells only (those of
    /// [`Forced::build_y_cycles`]). Nodes on cycles that are kept and left
    /// out both occur, with both kinds of links.
    #[test]
    fn starts_left_out_of_removing_cycles_remove_nothing() {
        use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        let puzzles = mid_and_hard_puzzles(17, 40);
        let mut forced = Forced::new();
        let (mut search, mut tree) = (Search::new(), Tree::new());
        let mut budget = Budget { left: u64::MAX };
        let mut closing = Vec::new();
        let (mut left_out, mut kept) = ([0; 2], [0; 2]);
        for grid in &puzzles {
            for_each_state_on_path(grid, |state, index| {
                let graph = Graph::new(state, index);
                for (k, x) in [(0, true), (1, false)] {
                    let links = Links { x, y: true };
                    if x {
                        forced.build(&state.cand, true, 0x1FF, true);
                    } else {
                        forced.build_y_cycles(&state.cand, y_cycle_cells(state, &graph));
                    }
                    for cell in 0..81 {
                        for d in bits(state.cand[cell]) {
                            let start = node(cell, d, true);
                            if !forced.on_cycle(start) {
                                continue;
                            }
                            if forced.on_removing_cycle(start) {
                                kept[k] += 1;
                                continue;
                            }
                            left_out[k] += 1;
                            search
                                .run(state, &graph, links, start, usize::MAX, &mut budget)
                                .unwrap();
                            closing_nodes(state, index, links, cell, d, &mut closing);
                            tree.forget();
                            let mut best = Best::new(u16::MAX);
                            let mut pass = Pass {
                                state,
                                graph: &graph,
                                links,
                                base: 70,
                                pass: 4,
                                technique: Technique::BidirectionalCycle,
                                path: Vec::new(),
                                us: Vec::new(),
                                tree: &mut tree,
                            };
                            for &o in &closing {
                                pass.close(&search, &mut best, start, o, &mut budget)
                                    .unwrap();
                            }
                            let at = (cell / 9 + 1, cell % 9 + 1, d + 1);
                            assert!(best.weight.is_none(), "{grid}: {at:?}, X links {x}");
                        }
                    }
                }
            });
        }
        for k in 0..2 {
            assert!(left_out[k] > 500, "{left_out:?}");
            assert!(kept[k] > 500, "{kept:?}");
        }
    }

    /// Two shortest chains reach r2c6 true from r1c1 true: through r2c2
    /// (the start's box) and through r1c6 (its row). SE expands a true
    /// node's box before its row, so its chain, the one a cycle through
    /// r2c6 follows, goes through r2c2.
    #[test]
    fn a_node_keeps_the_first_chain_in_ses_order() {
        let (start, by_box, by_row, target) = ((0, 0), (1, 1), (0, 5), (1, 5));
        let state = one_digit(0, &[start, by_box, by_row, target]);
        let graph = Graph::new(&state, &Index::new(&state));
        let at = |(r, c): (usize, usize), on| node(r * 9 + c, 0, on);
        let mut tree = Tree::new();
        let mut budget = Budget { left: u64::MAX };
        let links = Links { x: true, y: false };
        tree.reach(
            &state,
            &graph,
            links,
            at(start, true),
            at(target, true),
            &mut budget,
        )
        .unwrap();
        let mut path = Vec::new();
        tree.chain(at(target, true), &mut path);
        assert_eq!(
            path,
            vec![at(target, true), at(by_box, false), at(start, true)]
        );
        // Both ways are as short: the search by layers sees both.
        let mut search = Search::new();
        search
            .run(
                &state,
                &graph,
                links,
                at(start, true),
                usize::MAX,
                &mut budget,
            )
            .unwrap();
        assert_eq!(search.dist(at(target, true)), 2);
        assert_eq!(search.dist(at(by_row, false)), 1);
    }
}
