//! The chain engine of SE's multiple, dynamic and nested forcing chains:
//! from one assumed node, every node that follows, each with the parents
//! that found it first (SE's `doChaining`).
//!
//! A chain propagates the pending true nodes first, in the order found,
//! then one pending false node, and so on. In a dynamic chain a false
//! node removes its candidate from the chain's working grid, so that
//! later links see the grid as the chain has made it, and a node that
//! follows from removed candidates counts their false nodes as parents
//! too ("hidden parents"). At a nesting level above 0, when nothing is
//! pending, the level's rules run on the working grid (`nested.rs`): each
//! candidate they remove becomes a false node whose parents are the
//! removals the rule needed, and which may carry the complexity of a
//! nested chain.

use super::dynamic::Scratch;
use super::graph::{
    CELL_CAUSE, Graph, NO_CAUSE, NODE_WORDS, NODES, NodeBits, Parents, candidate, conjugate, node,
};
use super::state::{CELL_BIT, HOUSES, State, bits, holders};
use super::{Budget, Exhausted, nested};

/// Which chains a producer follows.
#[derive(Clone, Copy)]
pub(super) struct Kind {
    /// Links inside cells (a cell's other digits go false; a bivalue
    /// cell's other digit goes true). Off for Nishio.
    pub(super) y: bool,
    /// Chains see their own removals.
    pub(super) dynamic: bool,
    /// SE's nesting level: 0 none; 1 the basic rules at each fixpoint;
    /// 2 and 3 add forcing and multiple forcing chains; 4 adds dynamic
    /// forcing chains of level `nesting`.
    pub(super) level: u8,
    pub(super) nesting: u8,
}

/// A contradiction: a node found both true and false.
#[derive(Clone, Copy)]
pub(super) struct Absurd {
    pub(super) on: usize,
    pub(super) off: usize,
}

/// One chain's nodes and working grid.
pub(super) struct Chain {
    pub(super) graph: Graph,
    pub(super) cand: [u16; 81],
    pub(super) source: [u16; 81],
    /// Where each digit may go in each house (bit `i` for the house's
    /// `i`-th cell), in `cand` and in `source`.
    places: Places,
    source_places: Places,
    /// The cells holding each digit, in `cand` and in `source`.
    holders: [u128; 9],
    source_holders: [u128; 9],
    /// `source_places` is not yet computed.
    fresh: bool,
    ons: Vec<usize>,
    offs: Vec<usize>,
    /// The nodes the node being processed makes (kept, not made afresh
    /// and zeroed for each node).
    made: Made,
    /// Space for the nested rules' own chains, made on first use.
    inner: Option<Box<Scratch>>,
    /// The nested rules' removals at the last stall.
    advances: nested::Advances,
    /// For [`Chain::run_until`]: the nodes it waits for, and how many of
    /// them are not found yet.
    targets: NodeBits,
    left: u32,
}

impl Chain {
    pub(super) fn new() -> Chain {
        Chain {
            graph: Graph::new(),
            cand: [0; 81],
            source: [0; 81],
            places: [[0; 9]; 27],
            source_places: [[0; 9]; 27],
            holders: [0; 9],
            source_holders: [0; 9],
            fresh: true,
            ons: Vec::with_capacity(NODES),
            offs: Vec::with_capacity(NODES),
            made: Made::new(),
            inner: None,
            advances: nested::Advances::default(),
            targets: [0; NODE_WORDS],
            left: 0,
        }
    }

    fn reset(&mut self, state: &State) {
        self.graph.clear();
        self.ons.clear();
        self.offs.clear();
        self.cand = state.cand;
        // A producer runs many chains on one state: its places are
        // computed once.
        if self.source != state.cand || self.fresh {
            self.source = state.cand;
            self.fresh = false;
            self.source_places = places(&state.cand);
            self.source_holders = holders(&state.cand);
        }
        self.places = self.source_places;
        self.holders = self.source_holders;
    }

    /// A new chain on `state` from the assumption `start`.
    fn begin(&mut self, state: &State, start: usize) {
        self.reset(state);
        let none = self.graph.pooled(&[], NO_CAUSE);
        self.graph.add(start, none);
        if start % 2 == 1 {
            self.ons.push(start);
        } else {
            self.offs.push(start);
        }
    }

    /// Propagates from `start`; stops at the first contradiction. One
    /// unit of work per node processed.
    pub(super) fn run(
        &mut self,
        state: &State,
        kind: Kind,
        start: usize,
        budget: &mut Budget,
    ) -> Result<Option<Absurd>, Exhausted> {
        self.begin(state, start);
        self.propagate::<false>(kind, budget)
    }

    /// [`Chain::run`] from a `start` that holds in the grid's solution
    /// (so the chain meets no contradiction), stopped once every node of
    /// `targets` is found: the nodes found, each with its parents, are
    /// the whole run's first ones, in its order.
    pub(super) fn run_until(
        &mut self,
        state: &State,
        kind: Kind,
        start: usize,
        budget: &mut Budget,
        targets: &NodeBits,
    ) -> Result<Option<Absurd>, Exhausted> {
        self.begin(state, start);
        self.targets = *targets;
        self.count_left();
        if self.left == 0 {
            return Ok(None);
        }
        self.propagate::<true>(kind, budget)
    }

    /// How many of `targets` are not found yet, into `left`.
    fn count_left(&mut self) {
        self.left = self
            .targets
            .iter()
            .zip(self.graph.seen())
            .map(|(t, s)| (t & !s).count_ones())
            .sum();
    }

    /// The pending nodes in turn, until none is left (or, `UNTIL`, none
    /// of `targets`).
    fn propagate<const UNTIL: bool>(
        &mut self,
        kind: Kind,
        budget: &mut Budget,
    ) -> Result<Option<Absurd>, Exhausted> {
        let (mut next_on, mut next_off) = (0usize, 0usize);
        loop {
            if UNTIL && self.left == 0 {
                return Ok(None);
            }
            if let Some(&p) = self.ons.get(next_on) {
                next_on += 1;
                if !budget.spend() {
                    return Err(Exhausted);
                }
                if let Some(absurd) = self.step_on::<UNTIL>(kind.y, p) {
                    return Ok(Some(absurd));
                }
            } else if let Some(&p) = self.offs.get(next_off) {
                next_off += 1;
                if !budget.spend() {
                    return Err(Exhausted);
                }
                if let Some(absurd) = self.step_off::<UNTIL>(kind, p) {
                    return Ok(Some(absurd));
                }
            } else if kind.level == 0 || !self.advance(kind, budget)? {
                return Ok(None);
            } else if UNTIL {
                self.count_left();
            }
        }
    }

    /// SE's forcing chain (not dynamic) from `start`, in layers: every
    /// pending true node, then every pending false node, and so on,
    /// through contradictions, until the chain reaches the negation of
    /// `start` (then `true`) or stops.
    pub(super) fn forcing(
        &mut self,
        state: &State,
        y: bool,
        start: usize,
        budget: &mut Budget,
    ) -> Result<bool, Exhausted> {
        self.begin(state, start);
        let target = conjugate(start);
        let (mut next_on, mut next_off) = (0usize, 0usize);
        loop {
            if next_on == self.ons.len() && next_off == self.offs.len() {
                return Ok(false);
            }
            for on in [true, false] {
                if self.layer(
                    y,
                    on,
                    if on { &mut next_on } else { &mut next_off },
                    target,
                    budget,
                )? {
                    return Ok(true);
                }
            }
        }
    }

    /// Processes every pending node of one truth (`on`) from `next`; the
    /// nodes they make join the other queue. Whether `target` was made.
    fn layer(
        &mut self,
        y: bool,
        on: bool,
        next: &mut usize,
        target: usize,
        budget: &mut Budget,
    ) -> Result<bool, Exhausted> {
        loop {
            let queue = if on { &self.ons } else { &self.offs };
            let Some(&p) = queue.get(*next) else {
                return Ok(false);
            };
            *next += 1;
            if !budget.spend() {
                return Err(Exhausted);
            }
            // Static chains remove nothing: a node's parent is the node
            // that made it, alone.
            if on {
                self.made.false_nodes(&self.cand, &self.places, y, p);
            } else {
                self.made.true_nodes(&self.cand, &self.places, y, p);
            }
            let mut shared = None;
            let made = &self.made;
            for (&q, &cause) in made.nodes().iter().zip(made.causes()) {
                let q = usize::from(q);
                if self.graph.has(q) {
                    continue;
                }
                let parents = if on {
                    *shared.get_or_insert_with(|| self.graph.pooled(&[p as u16], NO_CAUSE))
                } else {
                    self.graph.pooled(&[p as u16], cause)
                };
                self.graph.add(q, parents);
                if on {
                    self.offs.push(q);
                } else {
                    self.ons.push(q);
                }
                if q == target {
                    return Ok(true);
                }
            }
        }
    }

    /// Processes the true node `p`: the false nodes it makes join their
    /// queue, unless one of them contradicts a node found.
    fn step_on<const UNTIL: bool>(&mut self, y: bool, p: usize) -> Option<Absurd> {
        self.made.false_nodes(&self.cand, &self.places, y, p);
        let made = &self.made;
        // Every node it makes has it as its one parent: pooled once.
        let mut shared = None;
        for &q in made.nodes() {
            let q = usize::from(q);
            let (found, absurd) = self.graph.has_and_conjugate(q);
            if !absurd && found {
                continue;
            }
            let parents = *shared.get_or_insert_with(|| self.graph.pooled(&[p as u16], NO_CAUSE));
            if absurd {
                // The found true node, and this one with its parents.
                self.graph.parents[q] = parents;
                return Some(Absurd {
                    on: conjugate(q),
                    off: q,
                });
            }
            self.graph.add(q, parents);
            self.offs.push(q);
            if UNTIL && self.targets[q / 64] >> (q % 64) & 1 != 0 {
                self.left -= 1;
            }
        }
        None
    }

    /// Processes the false node `p`: the true nodes it makes join their
    /// queue, unless one of them contradicts a node found; then, in a
    /// dynamic chain, `p`'s candidate leaves the working grid. A true
    /// node's parents are `p` and the candidates the chain removed that
    /// its cause needed gone (its cell's, or its digit's in the house),
    /// read before `p` leaves.
    fn step_off<const UNTIL: bool>(&mut self, kind: Kind, p: usize) -> Option<Absurd> {
        self.made.true_nodes(&self.cand, &self.places, kind.y, p);
        let made = &self.made;
        let (cell, d) = candidate(p);
        let mut absurd = None;
        for (&q, &cause) in made.nodes().iter().zip(made.causes()) {
            let q = usize::from(q);
            let (found, contradicts) = self.graph.has_and_conjugate(q);
            if !contradicts && found {
                continue;
            }
            let pool = &mut self.graph.pool;
            let start = pool.len() as u32;
            pool.push(p as u16);
            if cause == CELL_CAUSE {
                for e in bits(self.source[cell] & !self.cand[cell]) {
                    pool.push(node(cell, e, false) as u16);
                }
            } else {
                let house = usize::from(cause);
                let removed = self.source_places[house][d] & !self.places[house][d];
                for i in bits(removed) {
                    pool.push(node(usize::from(HOUSES[house][i]), d, false) as u16);
                }
            }
            let len = (pool.len() as u32 - start) as u16;
            let parents = Parents { start, len, cause };
            if contradicts {
                // This node with its parents, and the found false node.
                self.graph.parents[q] = parents;
                absurd = Some(Absurd {
                    on: q,
                    off: conjugate(q),
                });
                break;
            }
            self.graph.add(q, parents);
            self.ons.push(q);
            if UNTIL && self.targets[q / 64] >> (q % 64) & 1 != 0 {
                self.left -= 1;
            }
        }
        if kind.dynamic {
            self.cand[cell] &= !(1 << d);
            self.holders[d] &= !CELL_BIT[cell];
            for (house, slot) in SLOTS[cell] {
                self.places[usize::from(house)][d] &= !(1 << slot);
            }
        }
        absurd
    }

    /// The nesting level's rules on the working grid: their removals
    /// become pending false nodes. Whether any was new.
    fn advance(&mut self, kind: Kind, budget: &mut Budget) -> Result<bool, Exhausted> {
        let scratch = self.inner.get_or_insert_with(|| Box::new(Scratch::new()));
        debug_assert!(self.holders == holders(&self.cand));
        debug_assert!(self.places == places(&self.cand));
        let grids = nested::Grids {
            source: &self.source,
            current: &self.cand,
            source_holders: &self.source_holders,
            holders: &self.holders,
            places: &self.places,
        };
        nested::advanced(grids, kind, budget, scratch, &mut self.advances)?;
        let mut any = false;
        for adv in &self.advances.list {
            if self.graph.has(adv.off) {
                continue;
            }
            // The rule's parents are removals, so false nodes the chain
            // has processed; any other is dropped. Written straight into
            // the graph's pool.
            let start = self.graph.pool.len() as u32;
            for &q in self.advances.parents(adv) {
                if self.graph.has(usize::from(q)) {
                    self.graph.pool.push(q);
                }
            }
            let len = (self.graph.pool.len() as u32 - start) as u16;
            if len == 0 {
                continue;
            }
            let parents = Parents {
                start,
                len,
                cause: NO_CAUSE,
            };
            self.graph.add(adv.off, parents);
            if let Some(nest) = adv.nested {
                self.graph.nests.push((adv.off, nest));
            }
            self.offs.push(adv.off);
            any = true;
        }
        Ok(any)
    }
}

/// The nodes one node makes, in SE's order, each with its cause (for a
/// true node): at most a cell's eight other digits and its twenty peers.
struct Made {
    nodes: [u16; 28],
    causes: [u8; 28],
    len: usize,
}

impl Made {
    fn new() -> Made {
        Made {
            nodes: [0; 28],
            causes: [NO_CAUSE; 28],
            len: 0,
        }
    }

    fn nodes(&self) -> &[u16] {
        &self.nodes[..self.len]
    }

    fn causes(&self) -> &[u8] {
        &self.causes[..self.len]
    }

    fn push(&mut self, n: usize, cause: u8) {
        self.nodes[self.len] = n as u16;
        self.causes[self.len] = cause;
        self.len += 1;
    }

    /// A false node: no cause (`causes` is left as it was).
    fn push_false(&mut self, n: usize) {
        self.nodes[self.len] = n as u16;
        self.len += 1;
    }

    /// The false nodes the true node `p` makes on the grid `cand`
    /// (`places`: where each digit may go in each house): (with `y`) the
    /// cell's other digits, then the digit's other places in the box,
    /// row and column, each house's cells in reading order.
    #[inline(always)]
    fn false_nodes(&mut self, cand: &[u16; 81], places: &Places, y: bool, p: usize) {
        self.len = 0;
        let (cell, d) = candidate(p);
        if y {
            for e in bits(cand[cell] & !(1 << d)) {
                self.push_false(node(cell, e, false));
            }
        }
        // The row and column cells outside the box: the box covers three
        // slots of each, from the cell's box column (row) on.
        let [(b, at), (r, col), (c, row)] = SLOTS[cell];
        for (house, skip) in [
            (b, 1u16 << at),
            (r, 0b111 << (col / 3 * 3)),
            (c, 0b111 << (row / 3 * 3)),
        ] {
            let house = usize::from(house);
            for i in bits(places[house][d] & !skip) {
                self.push_false(node(usize::from(HOUSES[house][i]), d, false));
            }
        }
    }

    /// The true nodes the false node `p` makes on the grid `cand`, with
    /// their causes: (with `y`, in a bivalue cell) the cell's other digit
    /// ([`CELL_CAUSE`]), then the digit's last place in the box, row and
    /// column (the house).
    #[inline(always)]
    fn true_nodes(&mut self, cand: &[u16; 81], places: &Places, y: bool, p: usize) {
        self.len = 0;
        let (cell, d) = candidate(p);
        if y && cand[cell].count_ones() == 2 {
            let other = (cand[cell] & !(1 << d)).trailing_zeros() as usize;
            self.push(node(cell, other, true), CELL_CAUSE);
        }
        for (house, slot) in SLOTS[cell] {
            let house = usize::from(house);
            let others = places[house][d] & !(1 << slot);
            if others.is_power_of_two() {
                let o = usize::from(HOUSES[house][others.trailing_zeros() as usize]);
                self.push(node(o, d, true), house as u8);
            }
        }
    }
}

/// `places[house][digit]`: bit `i` for the house's `i`-th cell
/// ([`HOUSES`]).
pub(super) type Places = [[u16; 9]; 27];

/// Where each digit may go in each house of `cand`.
pub(super) fn places(cand: &[u16; 81]) -> Places {
    let mut places = [[0u16; 9]; 27];
    for (cell, slots) in SLOTS.iter().enumerate() {
        for (house, slot) in *slots {
            for d in bits(cand[cell]) {
                places[usize::from(house)][d] |= 1 << slot;
            }
        }
    }
    places
}

/// For each cell, in SE's order of houses (box, row, column), the house
/// and the cell's slot in it (its index in [`HOUSES`]).
static SLOTS: [[(u8, u8); 3]; 81] = {
    let mut t = [[(0u8, 0u8); 3]; 81];
    let mut cell = 0;
    while cell < 81 {
        let (r, c) = (cell / 9, cell % 9);
        let b = r / 3 * 3 + c / 3;
        t[cell] = [
            ((18 + b) as u8, (r % 3 * 3 + c % 3) as u8),
            (r as u8, c as u8),
            ((9 + c) as u8, r as u8),
        ];
        cell += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::super::graph::houses;
    use super::*;

    #[test]
    fn slots_name_each_cells_place_in_its_houses() {
        for (cell, slots) in SLOTS.iter().enumerate() {
            assert_eq!(houses(cell), slots.map(|(h, _)| usize::from(h)));
            for (house, slot) in *slots {
                assert_eq!(
                    usize::from(HOUSES[usize::from(house)][usize::from(slot)]),
                    cell
                );
            }
        }
    }
}
