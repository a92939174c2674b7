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
//!
//! Nodes are numbered `(cell * 9 + digit) * 2 + truth`.

use super::dynamic::Scratch;
use super::state::{HOUSE_CELLS, HOUSES_OF, State, bits, cells_of};
use super::{Budget, Exhausted, nested};

pub(super) const NODES: usize = 81 * 9 * 2;

pub(super) fn node(cell: usize, d: usize, on: bool) -> usize {
    (cell * 9 + d) * 2 + usize::from(on)
}

pub(super) fn conjugate(n: usize) -> usize {
    n ^ 1
}

/// The cell and digit of a node.
pub(super) fn candidate(n: usize) -> (usize, usize) {
    (n / 18, n / 2 % 9)
}

/// The houses of a cell in SE's order: box, row, column.
pub(super) fn houses(cell: usize) -> [usize; 3] {
    let [r, c, b] = HOUSES_OF[cell];
    [usize::from(b), usize::from(r), usize::from(c)]
}

/// Why a true node is true: the last candidate of its cell, or the last
/// place of its digit in a house (`0..27`); `NO_CAUSE` for an assumption.
pub(super) const CELL_CAUSE: u8 = 27;
pub(super) const NO_CAUSE: u8 = u8::MAX;

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

/// A node's parents: `len` entries of a pool from `start`; and, for a
/// true node, its cause.
#[derive(Clone, Copy)]
pub(super) struct Parents {
    start: u32,
    len: u16,
    cause: u8,
}

impl Default for Parents {
    fn default() -> Parents {
        Parents {
            start: 0,
            len: 0,
            cause: NO_CAUSE,
        }
    }
}

/// Scratch space for walking a chain's ancestors.
pub(super) struct Marks {
    bits: Vec<u64>,
    todo: Vec<usize>,
}

impl Marks {
    pub(super) fn new() -> Marks {
        Marks {
            bits: vec![0; NODES.div_ceil(64)],
            todo: Vec::with_capacity(64),
        }
    }
}

/// A nested chain a node depends on: a fingerprint that identifies the
/// chain, and its complexity.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Nested {
    pub(super) print: u64,
    pub(super) complexity: u32,
}

/// The nodes a chain found, with their parents, causes and nested chains.
pub(super) struct Graph {
    /// Bit per node: found.
    seen: Vec<u64>,
    parents: Vec<Parents>,
    pool: Vec<u16>,
    /// Nodes found, in order.
    pub(super) order: Vec<usize>,
    /// The nodes that carry a nested chain, with it.
    nests: Vec<(usize, Nested)>,
}

impl Graph {
    fn new() -> Graph {
        Graph {
            seen: vec![0; NODES.div_ceil(64)],
            parents: vec![Parents::default(); NODES],
            pool: Vec::with_capacity(4 * NODES),
            order: Vec::with_capacity(NODES),
            nests: Vec::new(),
        }
    }

    /// `self` becomes a copy of `other`, in the space it has: the
    /// parents of the nodes found, and of `extra` (a contradiction's
    /// halves). Nothing reads the parents of another node.
    fn copy_from(&mut self, other: &Graph, extra: [usize; 2]) {
        self.seen.clone_from(&other.seen);
        for &n in other.order.iter().chain(&extra) {
            self.parents[n] = other.parents[n];
        }
        self.pool.clone_from(&other.pool);
        self.order.clone_from(&other.order);
        self.nests.clone_from(&other.nests);
    }

    fn clear(&mut self) {
        for &n in &self.order {
            self.seen[n / 64] = 0;
        }
        self.order.clear();
        self.pool.clear();
        self.nests.clear();
    }

    pub(super) fn has(&self, n: usize) -> bool {
        self.seen[n / 64] & (1 << (n % 64)) != 0
    }

    pub(super) fn seen(&self) -> &[u64] {
        &self.seen
    }

    fn add(&mut self, n: usize, parents: Parents) {
        self.seen[n / 64] |= 1 << (n % 64);
        self.parents[n] = parents;
        self.order.push(n);
    }

    fn pooled(&mut self, list: &[u16], cause: u8) -> Parents {
        let start = self.pool.len() as u32;
        self.pool.extend_from_slice(list);
        Parents {
            start,
            len: list.len() as u16,
            cause,
        }
    }

    fn parents_of(&self, n: usize) -> &[u16] {
        let p = self.parents[n];
        &self.pool[p.start as usize..p.start as usize + usize::from(p.len)]
    }

    /// Visits `n` and its ancestors once each. `n` is a node the chain
    /// found, or the false half of the contradiction it ran into.
    fn walk(&self, n: usize, marks: &mut Marks, mut visit: impl FnMut(usize)) {
        let Marks { bits, todo } = marks;
        bits.iter_mut().for_each(|w| *w = 0);
        todo.clear();
        todo.push(n);
        while let Some(m) = todo.pop() {
            if bits[m / 64] & (1 << (m % 64)) != 0 {
                continue;
            }
            bits[m / 64] |= 1 << (m % 64);
            visit(m);
            todo.extend(self.parents_of(m).iter().map(|&q| usize::from(q)));
        }
    }

    /// The number of distinct nodes among `n` and its ancestors; the
    /// nested chains among them go to `nests` (once each).
    pub(super) fn count(&self, n: usize, marks: &mut Marks, nests: &mut Vec<Nested>) -> u32 {
        let mut count = 0;
        self.walk(n, marks, |m| {
            count += 1;
            if let Some(&(_, nest)) = self.nests.iter().find(|&&(at, _)| at == m)
                && !nests.contains(&nest)
            {
                nests.push(nest);
            }
        });
        count
    }

    /// SE's rule parents of the conclusion `n` of a chain run on `current`
    /// (a chain's working grid whose grid before the chain was `source`):
    /// the false nodes of the candidates the chain's true nodes needed
    /// gone, that is, for a node true as its cell's last candidate, the
    /// cell's removed candidates, and for a node true as its digit's last
    /// place in a house, the digit's removed places there. `start` is the
    /// cause SE gives the assumption. Also a fingerprint of the chain.
    pub(super) fn rule_parents(
        &self,
        n: usize,
        start: u8,
        source: &[u16; 81],
        current: &[u16; 81],
        marks: &mut Marks,
        out: &mut Vec<u16>,
    ) -> u64 {
        let mut print = 0u64;
        self.walk(n, marks, |m| {
            print = print.wrapping_add(mix(m as u64));
            if m % 2 == 0 {
                return;
            }
            let cause = match self.parents[m].cause {
                NO_CAUSE => start,
                cause => cause,
            };
            let (cell, d) = candidate(m);
            if cause == CELL_CAUSE {
                for e in bits(source[cell] & !current[cell]) {
                    out.push(node(cell, e, false) as u16);
                }
            } else if cause < CELL_CAUSE {
                for c in cells_of(HOUSE_CELLS[usize::from(cause)]) {
                    if (source[c] & !current[c]) & (1 << d) != 0 {
                        out.push(node(c, d, false) as u16);
                    }
                }
            }
        });
        print ^ mix(n as u64 + 1)
    }
}

/// A 64-bit mix (splitmix64's finaliser) for fingerprints.
fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
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

    #[inline(never)]
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
            let mut holders = [0u128; 9];
            for (cell, &cand) in state.cand.iter().enumerate() {
                for d in bits(cand) {
                    holders[d] |= 1 << cell;
                }
            }
            self.source_holders = holders;
        }
        self.holders = self.source_holders;
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
        self.reset(state);
        let none = self.graph.pooled(&[], NO_CAUSE);
        self.graph.add(start, none);
        if start % 2 == 1 {
            self.ons.push(start);
        } else {
            self.offs.push(start);
        }
        let (mut next_on, mut next_off) = (0usize, 0usize);
        let mut made = std::mem::take(&mut self.made);
        let result = loop {
            if let Some(&p) = self.ons.get(next_on) {
                next_on += 1;
                if !budget.spend() {
                    break Err(Exhausted);
                }
                if let Some(absurd) = self.step_on(kind, p, &mut made) {
                    break Ok(Some(absurd));
                }
            } else if let Some(&p) = self.offs.get(next_off) {
                next_off += 1;
                if !budget.spend() {
                    break Err(Exhausted);
                }
                if let Some(absurd) = self.step_off(kind, p, &mut made) {
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
    #[inline(never)]
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
        self.reset(state);
        let none = self.graph.pooled(&[], NO_CAUSE);
        self.graph.add(start, none);
        if start % 2 == 1 {
            self.ons.push(start);
        } else {
            self.offs.push(start);
        }
        let target = conjugate(start);
        let (mut next_on, mut next_off) = (0usize, 0usize);
        let mut made = std::mem::take(&mut self.made);
        let result = 'layers: loop {
            if next_on == self.ons.len() && next_off == self.offs.len() {
                break Ok(false);
            }
            while let Some(&p) = self.ons.get(next_on) {
                next_on += 1;
                if !budget.spend() {
                    break 'layers Err(Exhausted);
                }
                made.clear();
                self.on_to_off(kind, p, &mut made);
                for &(q, _) in &made {
                    if !self.graph.has(q) {
                        let parents = self.graph.pooled(&[p as u16], NO_CAUSE);
                        self.graph.add(q, parents);
                        self.offs.push(q);
                        if q == target {
                            break 'layers Ok(true);
                        }
                    }
                }
            }
            while let Some(&p) = self.offs.get(next_off) {
                next_off += 1;
                if !budget.spend() {
                    break 'layers Err(Exhausted);
                }
                made.clear();
                self.off_to_on(kind, p, &mut made);
                for &(q, parents) in &made {
                    if !self.graph.has(q) {
                        self.graph.add(q, parents);
                        self.ons.push(q);
                        if q == target {
                            break 'layers Ok(true);
                        }
                    }
                }
            }
        };
        self.made = made;
        result
    }

    /// Processes the true node `p`.
    #[inline(never)]
    fn step_on(
        &mut self,
        kind: Kind,
        p: usize,
        made: &mut Vec<(usize, Parents)>,
    ) -> Option<Absurd> {
        made.clear();
        self.on_to_off(kind, p, made);
        for &(q, _) in made.iter() {
            if self.graph.has(conjugate(q)) {
                // The found version of the true node, and this false one
                // with its parent.
                self.graph.parents[q] = self.graph.pooled(&[p as u16], NO_CAUSE);
                return Some(Absurd {
                    on: conjugate(q),
                    off: q,
                });
            }
            if !self.graph.has(q) {
                let parents = self.graph.pooled(&[p as u16], NO_CAUSE);
                self.graph.add(q, parents);
                self.offs.push(q);
            }
        }
        None
    }

    /// Processes the false node `p`.
    #[inline(never)]
    fn step_off(
        &mut self,
        kind: Kind,
        p: usize,
        made: &mut Vec<(usize, Parents)>,
    ) -> Option<Absurd> {
        made.clear();
        self.off_to_on(kind, p, made);
        if kind.dynamic {
            let (cell, d) = candidate(p);
            self.cand[cell] &= !(1 << d);
            self.holders[d] &= !(1 << cell);
        }
        for &(q, parents) in made.iter() {
            if self.graph.has(conjugate(q)) {
                self.graph.parents[q] = parents;
                return Some(Absurd {
                    on: q,
                    off: conjugate(q),
                });
            }
            if !self.graph.has(q) {
                self.graph.add(q, parents);
                self.ons.push(q);
            }
        }
        None
    }

    /// The nesting level's rules on the working grid: their removals
    /// become pending false nodes. Whether any was new.
    #[inline(never)]
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

/// A chain's outcome kept for intersecting, with the contradiction it ran
/// into, if any.
pub(super) struct Outcome {
    pub(super) graph: Graph,
    pub(super) absurd: Option<Absurd>,
}

impl Outcome {
    pub(super) fn new() -> Outcome {
        Outcome {
            graph: Graph::new(),
            absurd: None,
        }
    }

    /// `self` becomes the outcome of `chain`'s last run.
    pub(super) fn take(&mut self, chain: &Chain, absurd: Option<Absurd>) {
        let extra = absurd.map_or([0, 0], |a| [a.on, a.off]);
        self.graph.copy_from(&chain.graph, extra);
        self.absurd = absurd;
    }
}

/// The chains from each candidate assumed true, run once per producer
/// call and kept; the space is kept between calls.
pub(super) struct Cache {
    outcomes: Vec<Option<Box<Outcome>>>,
    stamp: Vec<u32>,
    now: u32,
}

impl Cache {
    pub(super) fn new() -> Cache {
        Cache {
            outcomes: (0..81 * 9).map(|_| None).collect(),
            stamp: vec![0; 81 * 9],
            now: 0,
        }
    }

    /// Forgets every outcome (a new producer call).
    pub(super) fn begin(&mut self) {
        self.now += 1;
    }

    /// The outcome of the chain from the true node `start`, if run.
    pub(super) fn get(&self, start: usize) -> Option<&Outcome> {
        let i = start / 2;
        match &self.outcomes[i] {
            Some(outcome) if self.stamp[i] == self.now => Some(outcome),
            _ => None,
        }
    }

    /// Runs the chain from `start` unless it has run.
    pub(super) fn run(
        &mut self,
        chain: &mut Chain,
        state: &State,
        kind: Kind,
        start: usize,
        budget: &mut Budget,
    ) -> Result<(), Exhausted> {
        let i = start / 2;
        if self.stamp[i] != self.now || self.outcomes[i].is_none() {
            let absurd = chain.run(state, kind, start, budget)?;
            self.outcomes[i]
                .get_or_insert_with(|| Box::new(Outcome::new()))
                .take(chain, absurd);
            self.stamp[i] = self.now;
        }
        Ok(())
    }
}
