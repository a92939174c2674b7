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

use super::cycles::Tree;
use super::reach::{Forced, Lazy, Placements, digits_with_single_digit_conclusions};
use super::state::{
    CELL_BIT, Found, HOUSES, Index, PEERS, State, bits, bivalue, cells_of, has, holders,
};
use super::{Budget, Exhausted, Technique};

/// Nodes: `(cell * 9 + digit) * 2 + truth`.
pub(super) fn node(cell: usize, d: usize, on: bool) -> usize {
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

/// The most nodes a chain may have for `base` plus its length rise to
/// stay within `tenths`: `None` when even the shortest rises above it,
/// and `u32::MAX` when no chain of the grid's 1,458 nodes does.
pub(super) fn most_nodes(base: u16, tenths: u16) -> Option<u32> {
    let rise = usize::from(tenths.checked_sub(base)?);
    // Past the last ceiling within the grid's 1,458 nodes, no chain rises
    // further.
    if rise >= LENGTH_CEILINGS.len() {
        return Some(u32::MAX);
    }
    Some(LENGTH_CEILINGS[rise] + 2)
}

/// The length ceilings of [`length_tenths`] in order (a chain of `ceil +
/// 2` nodes rises by the number of ceilings before `ceil`), up to the
/// first above the grid's 1,458 nodes.
const LENGTH_CEILINGS: [u32; 18] = {
    let mut ceilings = [0u32; 18];
    let (mut ceil, mut i) = (4u32, 0);
    while i < ceilings.len() {
        ceilings[i] = ceil;
        ceil = if i % 2 == 1 {
            ceil * 4 / 3
        } else {
            ceil * 3 / 2
        };
        i += 1;
    }
    ceilings
};

/// Which links a pass follows.
#[derive(Clone, Copy)]
pub(super) struct Links {
    pub(super) x: bool,
    pub(super) y: bool,
}

/// The links of one state, as bit sets: where each digit may go, and
/// for each digit and cell the places linked to it by a house where the
/// digit has two places. Kept from one state to the next and rebuilt in
/// place ([`Graph::set`]): only the entries of `conj` that were set are
/// cleared, not the whole table.
pub(super) struct Graph {
    pub(super) holders: [u128; 9],
    /// Empty outside the cells of `conjugated`.
    conj: Box<[[u128; 81]; 9]>,
    /// Per digit, the cells whose `conj` is not empty.
    conjugated: [u128; 9],
    pub(super) bivalue: u128,
}

impl Graph {
    /// The graph of no candidates, to be [`set`](Graph::set).
    pub(super) fn empty() -> Graph {
        Graph {
            holders: [0; 9],
            conj: Box::new([[0u128; 81]; 9]),
            conjugated: [0; 9],
            bivalue: 0,
        }
    }

    #[cfg(test)]
    pub(super) fn new(state: &State, index: &Index) -> Graph {
        let mut graph = Graph::empty();
        graph.set(state, index);
        graph
    }

    /// Makes this the graph of `state`.
    pub(super) fn set(&mut self, state: &State, index: &Index) {
        for (d, conj) in self.conj.iter_mut().enumerate() {
            for c in cells_of(self.conjugated[d]) {
                conj[c] = 0;
            }
        }
        self.holders = holders(&state.cand);
        self.bivalue = bivalue(&state.cand);
        self.conjugated = [0; 9];
        for (house, places) in index.places.iter().enumerate() {
            for (d, &p) in places.iter().enumerate() {
                if p.count_ones() == 2 {
                    let [a, b] = [p.trailing_zeros(), 15 - p.leading_zeros()]
                        .map(|i| usize::from(HOUSES[house][i as usize]));
                    self.conj[d][a] |= 1 << b;
                    self.conj[d][b] |= 1 << a;
                    self.conjugated[d] |= 1 << a | 1 << b;
                }
            }
        }
    }
}

/// Breadth-first layers (in links) from a start node, on bit sets: layer
/// `k` holds the nodes first reached after `k` links, true nodes on the
/// start's parity when it is true.
///
/// The layers of the last search follow those of the searches kept
/// before it ([`Search::keep`]): `first` is where its own begin.
pub(super) struct Search {
    layers: Vec<[u128; 9]>,
    first: usize,
    start_on: bool,
    /// After a search with links inside cells: per digit, the cells of
    /// the true nodes and of the false nodes reached, the start among
    /// them, and how many nodes were reached in all.
    seen_on: [u128; 9],
    seen_off: [u128; 9],
    reached: u64,
}

impl Search {
    pub(super) fn new() -> Search {
        Search {
            layers: Vec::with_capacity(64),
            first: 0,
            start_on: true,
            seen_on: [0; 9],
            seen_off: [0; 9],
            reached: 0,
        }
    }

    /// The layers of the last search: layer `k` holds the nodes first
    /// reached after `k` links, true nodes in the even layers when the
    /// start is true.
    pub(super) fn layers(&self) -> &[[u128; 9]] {
        &self.layers[self.first..]
    }

    /// Every search's layers kept since the last [`Search::run`] or
    /// [`Search::forget`], in order: the last search's begin at
    /// [`Search::first`].
    pub(super) fn kept(&self) -> &[[u128; 9]] {
        &self.layers
    }

    /// Drops every search kept: the next [`Search::keep`] is the first.
    pub(super) fn forget(&mut self) {
        self.layers.clear();
        self.first = 0;
    }

    /// Where the last search's layers begin in [`Search::kept`].
    pub(super) fn first(&self) -> usize {
        self.first
    }

    /// After a search with links inside cells: the cells of the true
    /// nodes and of the false nodes it reached, per digit, and their
    /// number, the start counted.
    pub(super) fn reached(&self) -> (&[u128; 9], &[u128; 9], u64) {
        (&self.seen_on, &self.seen_off, self.reached)
    }

    /// The distance of `n` from the start, `u16::MAX` if unreached.
    pub(super) fn dist(&self, n: usize) -> u16 {
        let (cell, d, on) = (n / 18, n / 2 % 9, n % 2 == 1);
        let layers = self.layers();
        // Every other layer, by index: `step_by` compiled to more.
        let mut k = usize::from(on != self.start_on);
        while k < layers.len() {
            if has(layers[k][d], cell) {
                return k as u16;
            }
            k += 2;
        }
        u16::MAX
    }

    /// The fewest links from the start to its own negation, `u16::MAX` if
    /// none is seen. The links are their own contrapositive (one from `p`
    /// to `q` comes with one from not-`q` to not-`p`: a digit's peers, a
    /// cell's digits, a house's or cell's only other place or digit), so a
    /// chain of `n` links from the start to its negation passes a node
    /// reached in `a` links whose negation is reached in `n - a`, and two
    /// such nodes give such a chain. So this is exact for every chain of
    /// up to twice the depth searched: a search for one of `n` links need
    /// go only `n.div_ceil(2)` deep.
    pub(super) fn to_negation(&self) -> u16 {
        let layers = self.layers();
        let n = layers.len();
        // A node and its negation lie in layers of opposite parity.
        for links in (1..(2 * n).saturating_sub(1)).step_by(2) {
            for a in (links.saturating_sub(n - 1)..=links.min(n - 1)).filter(|a| a % 2 == 0) {
                let (x, y) = (&layers[a], &layers[links - a]);
                if (0..9).any(|d| x[d] & y[d] != 0) {
                    return links as u16;
                }
            }
        }
        u16::MAX
    }

    /// The cells of the nodes of digit `d` and truth `on` reached within
    /// `most` links (so `dist` is at most `most` exactly for those).
    pub(super) fn reached_within(&self, d: usize, on: bool, most: usize) -> u128 {
        let layers = self.layers();
        let end = layers.len().min(most.saturating_add(1));
        let (mut set, mut k) = (0, usize::from(on != self.start_on));
        while k < end {
            set |= layers[k][d];
            k += 2;
        }
        set
    }

    /// Searches from `start`, layer by layer up to layer `depth` (nodes
    /// farther away stay unreached); one unit of work per node reached.
    pub(super) fn run(
        &mut self,
        state: &State,
        graph: &Graph,
        links: Links,
        start: usize,
        depth: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        self.layers.clear();
        self.first = 0;
        if links.x && !links.y {
            return self.run_one_digit(graph, start, depth, budget);
        }
        self.run_with_cells(state, graph, links, start, depth, budget)
    }

    /// [`Search::run`] with links inside cells, its layers placed after
    /// those of the searches before it, which are kept.
    pub(super) fn keep(
        &mut self,
        state: &State,
        graph: &Graph,
        links: Links,
        start: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        debug_assert!(links.y);
        self.first = self.layers.len();
        self.run_with_cells(state, graph, links, start, usize::MAX, budget)
    }

    fn run_with_cells(
        &mut self,
        state: &State,
        graph: &Graph,
        links: Links,
        start: usize,
        depth: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        let first = self.first;
        let (cell, d) = (start / 18, start / 2 % 9);
        let mut on = start % 2 == 1;
        self.start_on = on;
        // Set in place: a whole layer (or set) built on the stack and
        // moved would be copied by a call.
        let Search {
            layers,
            seen_on,
            seen_off,
            ..
        } = self;
        *seen_on = [0; 9];
        *seen_off = [0; 9];
        if on {
            seen_on[d] = 1 << cell;
        } else {
            seen_off[d] = 1 << cell;
        }
        layers.push([0u128; 9]);
        layers[first][d] = 1 << cell;
        let mut reached = 1u64;
        // The digits the frontier holds nodes of: a layer visits those
        // sets only, not all nine.
        let mut live = 1u16 << d;
        while layers.len() - first <= depth {
            // The next layer is written in place, after the frontier.
            let k = layers.len();
            layers.push([0u128; 9]);
            let (done, new) = layers.split_at_mut(k);
            let (frontier, next) = (&done[k - 1], &mut new[0]);
            let mut touched = 0u16;
            for d in bits(live) {
                if on {
                    let mut peers = 0u128;
                    for c in cells_of(frontier[d]) {
                        peers |= PEERS[c];
                        if links.y {
                            let others = state.cand[c] & !(1 << d);
                            touched |= others;
                            for e in bits(others) {
                                next[e] |= CELL_BIT[c];
                            }
                        }
                    }
                    next[d] |= peers & graph.holders[d];
                    touched |= 1 << d;
                } else {
                    // A false node links out only where its digit has one
                    // other place in a house (X) or its cell one other
                    // digit (Y): the rest of the frontier ends there.
                    if links.x {
                        for c in cells_of(frontier[d] & graph.conjugated[d]) {
                            next[d] |= graph.conj[d][c];
                        }
                        touched |= 1 << d;
                    }
                    if links.y {
                        for c in cells_of(frontier[d] & graph.bivalue) {
                            let e = (state.cand[c] & !(1 << d)).trailing_zeros() as usize;
                            next[e] |= CELL_BIT[c];
                            touched |= 1 << e;
                        }
                    }
                }
            }
            let seen = if on { &mut *seen_off } else { &mut *seen_on };
            let mut count = 0u64;
            live = 0;
            for d in bits(touched) {
                let set = &mut next[d];
                *set &= !seen[d];
                seen[d] |= *set;
                if *set != 0 {
                    live |= 1 << d;
                    count += u64::from(set.count_ones());
                }
            }
            if count == 0 {
                layers.pop();
                break;
            }
            if !budget.spend_many(count) {
                layers.pop();
                return Err(Exhausted);
            }
            reached += count;
            on = !on;
        }
        self.reached = reached;
        Ok(())
    }

    /// [`Search::run`] with X links only: the search never leaves the
    /// start's digit, so each layer is one cell set.
    fn run_one_digit(
        &mut self,
        graph: &Graph,
        start: usize,
        depth: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        let (cell, d) = (start / 18, start / 2 % 9);
        let mut frontier = CELL_BIT[cell];
        let mut on = start % 2 == 1;
        self.start_on = on;
        let (mut seen_on, mut seen_off) = if on { (frontier, 0) } else { (0, frontier) };
        // A layer is pushed empty, then given its one set: built on the
        // stack and moved, the nine sets would be copied by a call.
        let push = |layers: &mut Vec<[u128; 9]>, cells: u128| {
            let k = layers.len();
            layers.push([0u128; 9]);
            layers[k][d] = cells;
        };
        push(&mut self.layers, frontier);
        while self.layers.len() <= depth {
            let mut next = 0u128;
            if on {
                for c in cells_of(frontier) {
                    next |= PEERS[c];
                }
                next &= graph.holders[d];
            } else {
                for c in cells_of(frontier & graph.conjugated[d]) {
                    next |= graph.conj[d][c];
                }
            }
            let seen = if on { &mut seen_off } else { &mut seen_on };
            next &= !*seen;
            *seen |= next;
            if next == 0 {
                return Ok(());
            }
            if !budget.spend_many(u64::from(next.count_ones())) {
                return Err(Exhausted);
            }
            push(&mut self.layers, next);
            frontier = next;
            on = !on;
        }
        Ok(())
    }
}

/// A conclusion and what it weighs, for choosing the easiest.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Weight {
    pub(super) tenths: u16,
    pub(super) complexity: u32,
    /// SE's tie-break between passes: X 2, Y 3, both 4.
    pub(super) pass: u8,
}

/// The easiest conclusions found, merged; none harder than `ceiling`
/// tenths is kept.
pub(super) struct Best {
    pub(super) weight: Option<Weight>,
    technique: Technique,
    found: Found,
    ceiling: u16,
}

impl Best {
    /// Nothing found yet; nothing harder than `ceiling` tenths is kept.
    pub(super) fn new(ceiling: u16) -> Best {
        Best {
            weight: None,
            technique: Technique::FullHouse,
            found: Found::default(),
            ceiling,
        }
    }

    /// Whether no conclusion of `weight` can be kept.
    pub(super) fn rejects(&self, weight: Weight) -> bool {
        weight.tenths > self.ceiling || self.weight.is_some_and(|w| weight > w)
    }

    /// Whether no conclusion of a pass of base `base` can be kept.
    pub(super) fn excludes(&self, base: u16) -> bool {
        base > self.ceiling || self.weight.is_some_and(|w| w.tenths < base)
    }

    /// The most nodes a conclusion of base `base` (plus its length rise)
    /// may have and still be kept, `0` when none can be: a weight grows
    /// with its node count, so a longer one is rejected.
    pub(super) fn most_nodes(&self, base: u16) -> u32 {
        let Some(mut most) = most_nodes(base, self.ceiling) else {
            return 0;
        };
        if let Some(w) = self.weight {
            // Easier than `w`, or as hard and no longer.
            let easier = w.tenths.checked_sub(1).and_then(|t| most_nodes(base, t));
            let as_hard = most_nodes(base, w.tenths).map(|m| m.min(w.complexity));
            most = most.min(easier.max(as_hard).unwrap_or(0));
        }
        most
    }

    pub(super) fn offer(
        &mut self,
        state: &State,
        weight: Weight,
        technique: Technique,
        cell: usize,
        elim: u16,
    ) {
        let elim = elim & state.cand[cell];
        if elim == 0 || self.rejects(weight) {
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

/// SE's unary chaining: the cycles (`cycles.rs`) and the forcing chains.
/// Forcing chains: a candidate whose truth leads
/// to its falsehood is removed; one whose falsehood leads to its truth is
/// placed (its cell loses the other digits). One digit (X links only,
/// "forcing x-chain", 6.6) or any (X and Y links, "forcing chain", 7.0),
/// plus the length rise. Takes the easiest conclusions (by difficulty,
/// then complexity, then pass), every one of them.
///
/// With X links only (the X-cycles and forcing X-chains), what a start
/// of digit `d` finds depends on `d`'s candidates alone, and a search
/// allowed fewer links finds no more. Along a path candidates only go,
/// so a digit whose candidates are those it had when this last found
/// nothing finds nothing again: `x_digits` holds the digits whose
/// candidates changed since (all at first), and only their X starts are
/// searched. It is set to none when this finds nothing, to all when it
/// finds something. Likewise the Y-cycles (links inside cells only) run
/// through bivalue cells alone: a chain's true nodes are all in them, and
/// the rest can only shrink what a cycle removes. So when the bivalue
/// cells and their candidates are those this last found nothing on
/// (`memory.y_bivalue`), the Y pass is passed over. Of the digits
/// changed, only those whose own links can conclude anything at all
/// ([`digits_with_single_digit_conclusions`]) are searched with X links
/// only. The conclusions are the same as searching every start.
#[inline(never)]
pub(super) fn unary_chaining(
    state: &State,
    index: &Index,
    found: &mut Found,
    budget: &mut Budget,
    space: &mut UnarySpace,
    ceiling: u16,
    memory: &mut UnaryMemory,
) -> Result<Option<(Technique, u16)>, Exhausted> {
    search_unary(state, index, found, budget, space, ceiling, memory, true)
}

/// [`unary_chaining`], searching with X links only the digits that can
/// conclude something (when `spare`) or every digit changed.
#[allow(clippy::too_many_arguments)]
pub(super) fn search_unary(
    state: &State,
    index: &Index,
    found: &mut Found,
    budget: &mut Budget,
    space: &mut UnarySpace,
    ceiling: u16,
    memory: &mut UnaryMemory,
    spare: bool,
) -> Result<Option<(Technique, u16)>, Exhausted> {
    let x_digits = &mut memory.x_digits;
    let x_live = if spare {
        digits_with_single_digit_conclusions(state, index, *x_digits, &mut memory.placements)
    } else {
        *x_digits
    };
    let bivalue = bivalue_cells(&state.cand);
    let skip_y = memory.y_bivalue == Some(bivalue);
    let mut best = Best::new(ceiling);
    let UnarySpace {
        reach,
        y_cycles,
        graph,
        search,
        tree,
    } = space;
    graph.set(state, index);
    let graph = &*graph;
    // The cycles and forcing chains on one graph share its components.
    let mut graphs = Lazy::new(reach, x_live);
    super::cycles::cycles(
        state,
        index,
        graph,
        search,
        tree,
        &mut best,
        budget,
        &mut graphs,
        y_cycles,
        x_live,
        skip_y,
    )?;
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
        if best.excludes(base) {
            // Every chain of this pass is harder than what is found.
            continue;
        }
        // Only a search from a start that reaches its negation is run.
        let reach = graphs.get(&state.cand, links.y, budget)?;
        for cell in 0..81 {
            if state.cand[cell].count_ones() < 2 {
                continue;
            }
            let digits = if links.y { 0x1FF } else { x_live };
            for d in bits(state.cand[cell] & digits) {
                // From the candidate true: done with the cycles. From it
                // false: a chain back to it true places it.
                let start = node(cell, d, false);
                if !reach.reaches_conjugate(start) {
                    continue;
                }
                // A chain of `back + 1` nodes: half as far as that
                // ([`Search::to_negation`]).
                let most = best.most_nodes(base).saturating_sub(1);
                if most == 0 {
                    continue;
                }
                search.run(
                    state,
                    graph,
                    links,
                    start,
                    most.div_ceil(2) as usize,
                    budget,
                )?;
                let back = search.to_negation();
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
            *x_digits = 0x1FF;
            memory.y_bivalue = None;
            Some((best.technique, w.tenths))
        }
        _ => {
            *x_digits = 0;
            memory.y_bivalue = Some(bivalue);
            None
        }
    })
}

/// The candidates of the bivalue cells of `cand`, none for another cell.
pub(super) fn bivalue_cells(cand: &[u16; 81]) -> [u16; 81] {
    std::array::from_fn(|c| {
        if cand[c].count_ones() == 2 {
            cand[c]
        } else {
            0
        }
    })
}

/// The unary chaining's space, kept from one call to the next (made
/// afresh for each call, its tables cost more to clear than to use): the
/// components of its graphs without and with links inside cells, the
/// graph of links, the searches and the SE-ordered tree of the cycles.
/// Each call makes the components it asks for afresh, so the multiple
/// forcing chains may take those with links inside cells once it is done
/// ([`super::reach::StaticReach::begin_with`]).
pub(super) struct UnarySpace {
    pub(super) reach: [Forced; 2],
    /// The components of the Y-cycles' graph.
    y_cycles: Forced,
    graph: Graph,
    search: Search,
    tree: Tree,
}

impl UnarySpace {
    pub(super) fn new() -> UnarySpace {
        UnarySpace {
            reach: [Forced::new(), Forced::new()],
            y_cycles: Forced::new(),
            graph: Graph::empty(),
            search: Search::new(),
            tree: Tree::new(),
        }
    }
}

/// What a path keeps for [`unary_chaining`]: the digits whose candidates
/// changed since it last found nothing, the bivalue cells (their
/// candidates, none for another cell) it last found nothing on, and the
/// placement answers of its one-digit filter.
pub(super) struct UnaryMemory {
    pub(super) x_digits: u16,
    pub(super) y_bivalue: Option<[u16; 81]>,
    /// Which digits have every candidate on a placement, as last worked
    /// out (for Nishio too).
    pub(super) placements: Placements,
}

impl UnaryMemory {
    /// Nothing known: every start is searched.
    pub(super) fn new() -> UnaryMemory {
        UnaryMemory {
            x_digits: 0x1FF,
            y_bivalue: None,
            placements: Placements::new(),
        }
    }
}

/// The forcing chains a cycle pass's searches also give: X forcing
/// chains (6.6) and XY ones (7.0); none for the Y pass.
pub(super) fn forcing_of(links: Links) -> Option<(u16, u8, Technique)> {
    match (links.x, links.y) {
        (true, false) => Some((66, 2, Technique::ForcingXChain)),
        (true, true) => Some((70, 4, Technique::ForcingChain)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sparing the digits whose own links conclude nothing changes no
    /// step: at every state of the rated paths of generated puzzles
    /// (4.0-6.6) and the hard test puzzles, the unary chaining finds the
    /// same with and without, at the ceiling 6.6 and with none, and so
    /// does Nishio.
    #[test]
    fn sparing_digits_without_single_digit_conclusions_changes_no_step() {
        use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        let puzzles = mid_and_hard_puzzles(11, 40);
        let mut space = UnarySpace::new();
        let mut nishio_space = super::super::dynamic::Scratch::new();
        let (mut checked, mut stepped, mut spared, mut nishio_stepped) = (0, 0, 0, 0);
        for grid in &puzzles {
            for_each_state_on_path(grid, |state, index| {
                let live = digits_with_single_digit_conclusions(
                    state,
                    index,
                    0x1FF,
                    &mut Placements::new(),
                );
                spared += 9 - live.count_ones();
                for ceiling in [66, u16::MAX] {
                    let mut run = |spare| {
                        let mut found = Found::default();
                        let mut budget = Budget { left: u64::MAX };
                        let mut memory = UnaryMemory::new();
                        let step = search_unary(
                            state,
                            index,
                            &mut found,
                            &mut budget,
                            &mut space,
                            ceiling,
                            &mut memory,
                            spare,
                        );
                        (step.ok(), found.place, found.elim)
                    };
                    let (spared_run, whole) = (run(true), run(false));
                    assert_eq!(spared_run, whole, "{grid}");
                    stepped += usize::from(matches!(whole.0, Some(Some(_))));
                }
                let mut nishio = |digits| {
                    let mut found = Found::default();
                    let mut budget = Budget { left: u64::MAX };
                    let step = super::super::dynamic::chaining(
                        state,
                        super::super::dynamic::Producer::Nishio,
                        &mut found,
                        &mut budget,
                        &mut nishio_space,
                        digits,
                        None,
                    );
                    (step.ok(), found.place, found.elim)
                };
                let (spared_run, whole) = (nishio(live), nishio(0x1FF));
                assert_eq!(spared_run, whole, "Nishio on {grid}");
                nishio_stepped += usize::from(matches!(whole.0, Some(Some(_))));
                checked += 1;
            });
        }
        assert!(checked > 2000, "{checked}");
        assert!(stepped > 100, "{stepped}");
        assert!(spared > checked, "{spared} of {checked}");
        assert!(nishio_stepped > 10, "{nishio_stepped}");
    }

    /// A search half as deep finds the same fewest links from a start to
    /// its negation as a whole one, for every chain up to twice its depth
    /// and with each pass's links; a longer one it finds no shorter.
    #[test]
    fn half_as_deep_finds_the_way_to_the_negation() {
        use super::super::tests::{for_each_state_on_path, mid_and_hard_puzzles};
        let puzzles = mid_and_hard_puzzles(19, 12);
        let mut budget = Budget { left: u64::MAX };
        let (mut whole, mut half) = (Search::new(), Search::new());
        let (mut chains, mut cut) = (0, 0);
        for grid in &puzzles {
            for_each_state_on_path(grid, |state, index| {
                let graph = Graph::new(state, index);
                for links in [Links { x: true, y: false }, Links { x: true, y: true }] {
                    for cell in (0..81).filter(|&c| state.cand[c].count_ones() > 1) {
                        for d in bits(state.cand[cell]) {
                            for on in [true, false] {
                                let start = node(cell, d, on);
                                whole
                                    .run(state, &graph, links, start, usize::MAX, &mut budget)
                                    .unwrap();
                                let back = whole.dist(node(cell, d, !on));
                                assert_eq!(whole.to_negation(), back, "{grid}");
                                if back == u16::MAX {
                                    continue;
                                }
                                chains += 1;
                                for depth in 1..=usize::from(back) {
                                    half.run(state, &graph, links, start, depth, &mut budget)
                                        .unwrap();
                                    let found = half.to_negation();
                                    if usize::from(back) <= 2 * depth {
                                        assert_eq!(found, back, "{grid} depth {depth}");
                                    } else {
                                        cut += 1;
                                        assert!(found > 2 * depth as u16, "{grid} depth {depth}");
                                    }
                                }
                            }
                        }
                    }
                }
            });
        }
        assert!(chains > 10_000, "{chains}");
        assert!(cut > 1000, "{cut}");
    }

    #[test]
    fn the_length_rise_follows_ses_ceilings() {
        // Ceilings on complexity - 2: 4, 6, 8, 12, 16, 24, 32, ...
        let rises: Vec<u16> = [4, 6, 7, 8, 9, 10, 11, 14, 15, 18, 19, 26, 27, 34, 35]
            .map(length_tenths)
            .to_vec();
        assert_eq!(rises, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7]);
    }

    #[test]
    fn most_nodes_is_the_longest_chain_within_the_tenths() {
        for base in [65u16, 66, 70] {
            assert_eq!(most_nodes(base, base - 1), None);
            for tenths in base..base + 12 {
                let most = most_nodes(base, tenths).unwrap();
                assert!(base + length_tenths(most) <= tenths, "{base} {tenths}");
                assert!(base + length_tenths(most + 1) > tenths, "{base} {tenths}");
            }
            assert_eq!(most_nodes(base, u16::MAX), Some(u32::MAX));
        }
    }
}
