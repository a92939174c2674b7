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
    CELL_CAUSE, Graph, NO_CAUSE, NODES, Parents, candidate, conjugate, houses, node,
};
use super::state::{HOUSE_CELLS, State, bits, cells_of, holders};
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
    /// Where each digit may go, in `cand` and in `source`.
    holders: [u128; 9],
    source_holders: [u128; 9],
    /// `source_holders` is not yet computed.
    fresh: bool,
    ons: Vec<usize>,
    offs: Vec<usize>,
    made: Vec<(usize, Parents)>,
    /// Space for the nested rules' own chains, made on first use.
    inner: Option<Box<Scratch>>,
}

impl Chain {
    pub(super) fn new() -> Chain {
        Chain {
            graph: Graph::new(),
            cand: [0; 81],
            source: [0; 81],
            holders: [0; 9],
            source_holders: [0; 9],
            fresh: true,
            ons: Vec::with_capacity(NODES),
            offs: Vec::with_capacity(NODES),
            made: Vec::with_capacity(32),
            inner: None,
        }
    }

    fn reset(&mut self, state: &State) {
        self.graph.clear();
        self.ons.clear();
        self.offs.clear();
        self.cand = state.cand;
        // A producer runs many chains on one state: its holders are
        // computed once.
        if self.source != state.cand || self.fresh {
            self.source = state.cand;
            self.fresh = false;
            self.source_holders = holders(&state.cand);
        }
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
        let (mut next_on, mut next_off) = (0usize, 0usize);
        let mut made = std::mem::take(&mut self.made);
        let result = loop {
            if let Some(&p) = self.ons.get(next_on) {
                next_on += 1;
                if !budget.spend() {
                    break Err(Exhausted);
                }
                if let Some(absurd) = self.step(kind, true, p, &mut made) {
                    break Ok(Some(absurd));
                }
            } else if let Some(&p) = self.offs.get(next_off) {
                next_off += 1;
                if !budget.spend() {
                    break Err(Exhausted);
                }
                if let Some(absurd) = self.step(kind, false, p, &mut made) {
                    break Ok(Some(absurd));
                }
            } else if kind.level == 0 || !self.advance(kind, budget)? {
                break Ok(None);
            }
        };
        self.made = made;
        result
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
        let kind = Kind {
            y,
            dynamic: false,
            level: 0,
            nesting: 0,
        };
        self.begin(state, start);
        let target = conjugate(start);
        let (mut next_on, mut next_off) = (0usize, 0usize);
        let mut made = std::mem::take(&mut self.made);
        let result = loop {
            if next_on == self.ons.len() && next_off == self.offs.len() {
                break Ok(false);
            }
            match self.layer(kind, true, &mut next_on, target, &mut made, budget) {
                Ok(false) => {}
                done => break done,
            }
            match self.layer(kind, false, &mut next_off, target, &mut made, budget) {
                Ok(false) => {}
                done => break done,
            }
        };
        self.made = made;
        result
    }

    /// Processes every pending node of one truth (`on`) from `next`; the
    /// nodes they make join the other queue. Whether `target` was made.
    fn layer(
        &mut self,
        kind: Kind,
        on: bool,
        next: &mut usize,
        target: usize,
        made: &mut Vec<(usize, Parents)>,
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
            made.clear();
            if on {
                self.on_to_off(kind, p, made);
            } else {
                self.off_to_on(kind, p, made);
            }
            for &(q, parents) in made.iter() {
                if self.graph.has(q) {
                    continue;
                }
                if on {
                    let parents = self.graph.pooled(&[p as u16], NO_CAUSE);
                    self.graph.add(q, parents);
                    self.offs.push(q);
                } else {
                    self.graph.add(q, parents);
                    self.ons.push(q);
                }
                if q == target {
                    return Ok(true);
                }
            }
        }
    }

    /// Processes the true (`on`) or false node `p`: the nodes it makes
    /// join the other queue, unless one of them contradicts a node found.
    fn step(
        &mut self,
        kind: Kind,
        on: bool,
        p: usize,
        made: &mut Vec<(usize, Parents)>,
    ) -> Option<Absurd> {
        made.clear();
        if on {
            self.on_to_off(kind, p, made);
        } else {
            self.off_to_on(kind, p, made);
            if kind.dynamic {
                let (cell, d) = candidate(p);
                self.cand[cell] &= !(1 << d);
                self.holders[d] &= !(1 << cell);
            }
        }
        for &(q, parents) in made.iter() {
            let absurd = self.graph.has(conjugate(q));
            if !absurd && self.graph.has(q) {
                continue;
            }
            // A true node's consequences have it as their one parent.
            let parents = if on {
                self.graph.pooled(&[p as u16], NO_CAUSE)
            } else {
                parents
            };
            if absurd {
                // The found version of the conjugate, and this node with
                // its parents.
                self.graph.parents[q] = parents;
                let (t, f) = if on {
                    (conjugate(q), q)
                } else {
                    (q, conjugate(q))
                };
                return Some(Absurd { on: t, off: f });
            }
            self.graph.add(q, parents);
            if on {
                self.offs.push(q);
            } else {
                self.ons.push(q);
            }
        }
        None
    }

    /// The nesting level's rules on the working grid: their removals
    /// become pending false nodes. Whether any was new.
    fn advance(&mut self, kind: Kind, budget: &mut Budget) -> Result<bool, Exhausted> {
        let scratch = self.inner.get_or_insert_with(|| Box::new(Scratch::new()));
        let found = nested::advanced(&self.source, &self.cand, kind, budget, scratch)?;
        let mut any = false;
        for adv in found {
            if self.graph.has(adv.off) {
                continue;
            }
            // The rule's parents are removals, so false nodes the chain
            // has processed; any other is dropped.
            let parents: Vec<u16> = adv
                .parents
                .iter()
                .copied()
                .filter(|&q| self.graph.has(usize::from(q)))
                .collect();
            if parents.is_empty() {
                continue;
            }
            let parents = self.graph.pooled(&parents, NO_CAUSE);
            self.graph.add(adv.off, parents);
            if let Some(nest) = adv.nested {
                self.graph.nests.push((adv.off, nest));
            }
            self.offs.push(adv.off);
            any = true;
        }
        Ok(any)
    }

    /// The false nodes a true node makes, in SE's order: the cell's other
    /// digits (with `y`), then the digit's other places in the box, row
    /// and column.
    fn on_to_off(&self, kind: Kind, p: usize, out: &mut Vec<(usize, Parents)>) {
        let (cell, d) = candidate(p);
        if kind.y {
            for e in bits(self.cand[cell] & !(1 << d)) {
                out.push((node(cell, e, false), Parents::default()));
            }
        }
        // Each house's cells in reading order, as SE lists them.
        let mut added = 1u128 << cell;
        for house in houses(cell) {
            let new = HOUSE_CELLS[house] & self.holders[d] & !added;
            added |= new;
            for c in cells_of(new) {
                out.push((node(c, d, false), Parents::default()));
            }
        }
    }

    /// The true nodes a false node makes, with their parents (the node and
    /// the hidden parents) and causes, in SE's order.
    fn off_to_on(&mut self, kind: Kind, p: usize, out: &mut Vec<(usize, Parents)>) {
        let (cell, d) = candidate(p);
        let bit = 1u16 << d;
        let pool = &mut self.graph.pool;
        if kind.y && self.cand[cell].count_ones() == 2 {
            let other = (self.cand[cell] & !bit).trailing_zeros() as usize;
            let start = pool.len() as u32;
            pool.push(p as u16);
            for e in bits(self.source[cell] & !self.cand[cell]) {
                pool.push(node(cell, e, false) as u16);
            }
            let len = (pool.len() as u32 - start) as u16;
            let cause = CELL_CAUSE;
            out.push((node(cell, other, true), Parents { start, len, cause }));
        }
        for house in houses(cell) {
            let others = HOUSE_CELLS[house] & self.holders[d] & !(1u128 << cell);
            if others.count_ones() == 1 {
                let o = others.trailing_zeros() as usize;
                let start = pool.len() as u32;
                pool.push(p as u16);
                let removed = HOUSE_CELLS[house] & self.source_holders[d] & !self.holders[d];
                for c in cells_of(removed) {
                    pool.push(node(c, d, false) as u16);
                }
                let len = (pool.len() as u32 - start) as u16;
                let cause = house as u8;
                out.push((node(o, d, true), Parents { start, len, cause }));
            }
        }
    }
}
