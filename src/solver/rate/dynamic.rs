//! SE's later chaining producers, each a breadth of chains from every
//! candidate (its `Chaining` with multiple, dynamic or Nishio chains):
//!
//! - **Nishio** (7.5): chains of one digit, dynamic: a candidate whose
//!   truth (falsehood) leads to a contradiction is false (true);
//! - **multiple forcing chains** (8.0): from every digit of a cell with
//!   three candidates or more, or every place of a digit in a house, the
//!   chains' common conclusions (cell and region forcing chains);
//! - **dynamic forcing chains** (8.5): all of the above with chains that
//!   see the candidates they have removed, plus double forcing chains (a
//!   conclusion of both a candidate's truth and its falsehood).
//!
//! A chain propagates as SE's does: pending true nodes first, in the
//! order found, then one false node, and so on; a node's parent is the
//! node that found it first. In a dynamic chain a false node removes its
//! candidate from the chain's working grid, so later links see the grid
//! as the chain has made it, and a node that follows from removed
//! candidates counts them as parents ("hidden parents"). The complexity
//! of a conclusion is the number of distinct nodes among its chains'
//! ancestors; its difficulty the producer's base plus SE's length rise.
//!
//! The rater runs on the puzzle's canonical form, so the order of the
//! scan (cells, then digits, in reading order) is the same for every
//! isomorph; among the conclusions of least (difficulty, complexity,
//! kind) it applies the first found, as SE does.

use super::chains::length_tenths;
use super::state::{Found, HOUSE_CELLS, HOUSES, HOUSES_OF, State, bits, cells_of};
use super::{Budget, Exhausted, Technique};

const NODES: usize = 81 * 9 * 2;

fn node(cell: usize, d: usize, on: bool) -> usize {
    (cell * 9 + d) * 2 + usize::from(on)
}

fn conjugate(n: usize) -> usize {
    n ^ 1
}

/// The houses of a cell in SE's order: box, row, column.
fn houses(cell: usize) -> [usize; 3] {
    let [r, c, b] = HOUSES_OF[cell];
    [usize::from(b), usize::from(r), usize::from(c)]
}

/// Which chains a producer follows.
#[derive(Clone, Copy)]
pub(super) struct Kind {
    /// Links inside cells (a cell's other digits go false; a bivalue
    /// cell's other digit goes true). Off for Nishio.
    y: bool,
    /// Chains see their own removals.
    dynamic: bool,
}

/// A node's parents: `len` entries of a pool from `start`.
#[derive(Clone, Copy, Default)]
struct Parents {
    start: u32,
    len: u32,
}

/// One chain's nodes, parents and working grid.
struct Chain {
    cand: [u16; 81],
    source: [u16; 81],
    /// Where each digit may go, in `cand` and in `source`.
    holders: [u128; 9],
    source_holders: [u128; 9],
    /// Bit per node: found.
    seen: Vec<u64>,
    parents: Vec<Parents>,
    pool: Vec<u16>,
    /// Nodes found, in order.
    order: Vec<usize>,
    ons: Vec<usize>,
    offs: Vec<usize>,
    made: Vec<(usize, Parents)>,
}

/// A contradiction: a node found both true and false.
#[derive(Clone, Copy)]
struct Absurd {
    on: usize,
    off: usize,
}

impl Chain {
    fn new() -> Chain {
        Chain {
            cand: [0; 81],
            source: [0; 81],
            holders: [0; 9],
            source_holders: [0; 9],
            seen: vec![0; NODES.div_ceil(64)],
            parents: vec![Parents::default(); NODES],
            pool: Vec::with_capacity(4 * NODES),
            order: Vec::with_capacity(NODES),
            ons: Vec::with_capacity(NODES),
            offs: Vec::with_capacity(NODES),
            made: Vec::with_capacity(32),
        }
    }

    fn has(&self, n: usize) -> bool {
        self.seen[n / 64] & (1 << (n % 64)) != 0
    }

    fn add(&mut self, n: usize, parents: Parents) {
        self.seen[n / 64] |= 1 << (n % 64);
        self.parents[n] = parents;
        self.order.push(n);
    }

    /// Parents `list` put in the pool.
    fn pooled(&mut self, list: &[u16]) -> Parents {
        let start = self.pool.len() as u32;
        self.pool.extend_from_slice(list);
        Parents {
            start,
            len: list.len() as u32,
        }
    }

    fn parents_of(&self, n: usize) -> &[u16] {
        let p = self.parents[n];
        &self.pool[p.start as usize..(p.start + p.len) as usize]
    }

    fn reset(&mut self, state: &State) {
        for &n in &self.order {
            self.seen[n / 64] = 0;
        }
        self.order.clear();
        self.pool.clear();
        self.ons.clear();
        self.offs.clear();
        self.cand = state.cand;
        self.source = state.cand;
        let mut holders = [0u128; 9];
        for (cell, &cand) in state.cand.iter().enumerate() {
            for d in bits(cand) {
                holders[d] |= 1 << cell;
            }
        }
        self.holders = holders;
        self.source_holders = holders;
    }

    /// Propagates from `start` (SE's `doChaining`); stops at the first
    /// contradiction. One unit of work per node processed.
    fn run(
        &mut self,
        state: &State,
        kind: Kind,
        start: usize,
        budget: &mut Budget,
    ) -> Result<Option<Absurd>, Exhausted> {
        self.reset(state);
        let none = self.pooled(&[]);
        self.add(start, none);
        let (mut next_on, mut next_off) = (0usize, 0usize);
        if start % 2 == 1 {
            self.ons.push(start);
        } else {
            self.offs.push(start);
        }
        let mut made = std::mem::take(&mut self.made);
        let result = loop {
            if let Some(&p) = self.ons.get(next_on) {
                next_on += 1;
                if !budget.spend() {
                    break Err(Exhausted);
                }
                made.clear();
                self.on_to_off(kind, p, &mut made);
                let mut absurd = None;
                for &(q, _) in &made {
                    if self.has(conjugate(q)) {
                        // The found version of the true node, and this
                        // false one with its parent.
                        self.parents[q] = self.pooled(&[p as u16]);
                        absurd = Some(Absurd {
                            on: conjugate(q),
                            off: q,
                        });
                        break;
                    }
                    if !self.has(q) {
                        let parents = self.pooled(&[p as u16]);
                        self.add(q, parents);
                        self.offs.push(q);
                    }
                }
                if absurd.is_some() {
                    break Ok(absurd);
                }
                continue;
            }
            if let Some(&p) = self.offs.get(next_off) {
                next_off += 1;
                if !budget.spend() {
                    break Err(Exhausted);
                }
                made.clear();
                self.off_to_on(kind, p, &mut made);
                if kind.dynamic {
                    let (cell, d) = (p / 18, p / 2 % 9);
                    self.cand[cell] &= !(1 << d);
                    self.holders[d] &= !(1 << cell);
                }
                let mut absurd = None;
                for &(q, parents) in &made {
                    if self.has(conjugate(q)) {
                        self.parents[q] = parents;
                        absurd = Some(Absurd {
                            on: q,
                            off: conjugate(q),
                        });
                        break;
                    }
                    if !self.has(q) {
                        self.add(q, parents);
                        self.ons.push(q);
                    }
                }
                if absurd.is_some() {
                    break Ok(absurd);
                }
                continue;
            }
            break Ok(None);
        };
        self.made = made;
        result
    }

    /// The false nodes a true node makes, in SE's order: the cell's other
    /// digits (with `y`), then the digit's other places in the box, row
    /// and column.
    fn on_to_off(&self, kind: Kind, p: usize, out: &mut Vec<(usize, Parents)>) {
        let (cell, d) = (p / 18, p / 2 % 9);
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
    /// the hidden parents), in SE's order.
    fn off_to_on(&mut self, kind: Kind, p: usize, out: &mut Vec<(usize, Parents)>) {
        let (cell, d) = (p / 18, p / 2 % 9);
        let bit = 1u16 << d;
        if kind.y && self.cand[cell].count_ones() == 2 {
            let other = (self.cand[cell] & !bit).trailing_zeros() as usize;
            let start = self.pool.len() as u32;
            self.pool.push(p as u16);
            for e in bits(self.source[cell] & !self.cand[cell]) {
                self.pool.push(node(cell, e, false) as u16);
            }
            let len = self.pool.len() as u32 - start;
            out.push((node(cell, other, true), Parents { start, len }));
        }
        for house in houses(cell) {
            let others = HOUSE_CELLS[house] & self.holders[d] & !(1u128 << cell);
            if others.count_ones() == 1 {
                let o = others.trailing_zeros() as usize;
                let start = self.pool.len() as u32;
                self.pool.push(p as u16);
                let removed = HOUSE_CELLS[house] & self.source_holders[d] & !self.holders[d];
                for c in cells_of(removed) {
                    self.pool.push(node(c, d, false) as u16);
                }
                let len = self.pool.len() as u32 - start;
                out.push((node(o, d, true), Parents { start, len }));
            }
        }
    }

    /// The number of distinct nodes among `n` and its ancestors.
    fn ancestors(&self, n: usize, mark: &mut [u64]) -> u32 {
        mark.iter_mut().for_each(|w| *w = 0);
        let mut todo = vec![n];
        let mut count = 0;
        while let Some(m) = todo.pop() {
            if mark[m / 64] & (1 << (m % 64)) != 0 {
                continue;
            }
            mark[m / 64] |= 1 << (m % 64);
            count += 1;
            todo.extend(self.parents_of(m).iter().map(|&q| usize::from(q)));
        }
        count
    }
}

/// A chain's outcome kept for intersecting: the nodes found, in order,
/// and their parents, for counting ancestors of the few nodes that
/// matter.
struct Outcome {
    seen: Vec<u64>,
    order: Vec<usize>,
    parents: Vec<Parents>,
    pool: Vec<u16>,
    /// The complexity of the contradiction the chain ran into, if any.
    absurd: Option<u32>,
}

impl Outcome {
    fn of(chain: &Chain) -> Outcome {
        Outcome {
            seen: chain.seen.clone(),
            order: chain.order.clone(),
            parents: chain.parents.clone(),
            pool: chain.pool.clone(),
            absurd: None,
        }
    }

    /// The chain from `start`, run once per producer call and kept.
    fn cached<'a>(
        cache: &'a mut [Option<Outcome>],
        chain: &mut Chain,
        state: &State,
        kind: Kind,
        start: usize,
        mark: &mut [u64],
        budget: &mut Budget,
    ) -> Result<&'a Outcome, Exhausted> {
        let slot = &mut cache[start / 2];
        if slot.is_none() {
            let absurd = chain.run(state, kind, start, budget)?;
            let mut outcome = Outcome::of(chain);
            outcome.absurd =
                absurd.map(|a| chain.ancestors(a.on, mark) + chain.ancestors(a.off, mark));
            *slot = Some(outcome);
        }
        match slot {
            Some(outcome) => Ok(outcome),
            None => unreachable!("filled above"),
        }
    }

    fn has(&self, n: usize) -> bool {
        self.seen[n / 64] & (1 << (n % 64)) != 0
    }

    /// The number of distinct nodes among `n` and its ancestors (0 if the
    /// chain did not find `n`).
    fn count(&self, n: usize, mark: &mut [u64]) -> u32 {
        if !self.has(n) {
            return 0;
        }
        mark.iter_mut().for_each(|w| *w = 0);
        let mut todo = vec![n];
        let mut count = 0;
        while let Some(m) = todo.pop() {
            if mark[m / 64] & (1 << (m % 64)) != 0 {
                continue;
            }
            mark[m / 64] |= 1 << (m % 64);
            count += 1;
            let p = self.parents[m];
            todo.extend(
                self.pool[p.start as usize..(p.start + p.len) as usize]
                    .iter()
                    .map(|&q| usize::from(q)),
            );
        }
        count
    }
}

/// The first conclusion of least key.
struct First {
    key: Option<(u16, u32, u8)>,
    technique: Technique,
    cell: usize,
    elim: u16,
}

impl First {
    fn offer(&mut self, state: &State, key: (u16, u32, u8), technique: Technique, target: usize) {
        let (cell, d) = (target / 18, target / 2 % 9);
        let elim = if target % 2 == 1 {
            state.cand[cell] & !(1 << d)
        } else {
            state.cand[cell] & (1 << d)
        };
        if elim == 0 || self.key.is_some_and(|k| key >= k) {
            return;
        }
        *self = First {
            key: Some(key),
            technique,
            cell,
            elim,
        };
    }
}

/// One of SE's later chaining producers; see the module docs.
#[derive(Clone, Copy)]
pub(super) enum Producer {
    Nishio,
    Multiple,
    Dynamic,
}

#[inline(never)]
pub(super) fn chaining(
    state: &State,
    producer: Producer,
    found: &mut Found,
    budget: &mut Budget,
) -> Result<Option<(Technique, u16)>, Exhausted> {
    let (kind, base, technique, multiple) = match producer {
        Producer::Nishio => (
            Kind {
                y: false,
                dynamic: true,
            },
            75,
            Technique::NishioForcingChain,
            false,
        ),
        Producer::Multiple => (
            Kind {
                y: true,
                dynamic: false,
            },
            80,
            Technique::MultipleForcingChain,
            true,
        ),
        Producer::Dynamic => (
            Kind {
                y: true,
                dynamic: true,
            },
            85,
            Technique::DynamicForcingChain,
            true,
        ),
    };
    let (nishio, dynamic) = (matches!(producer, Producer::Nishio), kind.dynamic);
    let mut chain = Chain::new();
    let mut mark = vec![0u64; NODES.div_ceil(64)];
    let mut first = First {
        key: None,
        technique,
        cell: 0,
        elim: 0,
    };
    let key = |complexity: u32, sort: u8| (base + length_tenths(complexity), complexity, sort);
    // The chains from each candidate assumed true, by candidate.
    let mut cache: Vec<Option<Outcome>> = (0..81 * 9).map(|_| None).collect();
    for cell in 0..81 {
        let n = state.cand[cell].count_ones();
        if n < 2 || (!dynamic && n < 3) {
            continue;
        }
        let mut cell_on: Option<Vec<u64>> = None;
        let mut per_value: Vec<usize> = Vec::new();
        for d in bits(state.cand[cell]) {
            let (p_on, p_off) = (node(cell, d, true), node(cell, d, false));
            // From the candidate true.
            let outcome =
                Outcome::cached(&mut cache, &mut chain, state, kind, p_on, &mut mark, budget)?;
            if let (Some(c), true) = (outcome.absurd, dynamic) {
                first.offer(state, key(c, 7), technique, p_off);
            }
            // From the candidate false.
            let absurd = chain.run(state, kind, p_off, budget)?;
            if let (Some(a), true) = (absurd, dynamic) {
                let c = chain.ancestors(a.on, &mut mark) + chain.ancestors(a.off, &mut mark);
                first.offer(state, key(c, 7), technique, p_on);
            }
            if dynamic && !nishio && n >= 3 {
                // Double forcing: true and false lead to the same node.
                let off_outcome = Outcome::of(&chain);
                let Some(on_outcome) = &cache[p_on / 2] else {
                    unreachable!("run above");
                };
                for &q in &on_outcome.order {
                    if q != p_on && off_outcome.has(q) {
                        let c = on_outcome.count(q, &mut mark) + off_outcome.count(q, &mut mark);
                        first.offer(state, key(c, 1), technique, q);
                    }
                }
            }
            if !nishio {
                region_chainings(
                    state,
                    kind,
                    cell,
                    d,
                    &mut cache,
                    &mut chain,
                    &mut mark,
                    budget,
                    &mut |c, q| first.offer(state, key(c, 6), technique, q),
                )?;
            }
            let Some(on_outcome) = &cache[p_on / 2] else {
                unreachable!("run above");
            };
            match &mut cell_on {
                None => cell_on = Some(on_outcome.seen.clone()),
                Some(set) => set
                    .iter_mut()
                    .zip(&on_outcome.seen)
                    .for_each(|(a, b)| *a &= b),
            }
            per_value.push(p_on / 2);
        }
        if let (false, true, Some(common)) = (nishio, n == 2 || multiple, cell_on) {
            for (w, &word) in common.iter().enumerate() {
                let mut word = word;
                while word != 0 {
                    let q = w * 64 + word.trailing_zeros() as usize;
                    word &= word - 1;
                    let c: u32 = per_value
                        .iter()
                        .filter_map(|&i| cache[i].as_ref())
                        .map(|o| o.count(q, &mut mark))
                        .sum();
                    first.offer(state, key(c, 5), technique, q);
                }
            }
        }
    }
    Ok(match first.key {
        Some((tenths, _, _)) => {
            found.eliminate(state, first.cell, first.elim);
            Some((first.technique, tenths))
        }
        None => None,
    })
}

/// SE's region forcing chains from the digit `d` of `cell`: in each house
/// of the cell where `d` has two places (or more, for multiple chains)
/// and `cell` is the first, the nodes every place's chain reaches.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn region_chainings(
    state: &State,
    kind: Kind,
    cell: usize,
    d: usize,
    cache: &mut [Option<Outcome>],
    chain: &mut Chain,
    mark: &mut [u64],
    budget: &mut Budget,
    offer: &mut impl FnMut(u32, usize),
) -> Result<(), Exhausted> {
    for house in houses(cell) {
        let places: Vec<usize> = HOUSES[house]
            .iter()
            .map(|&c| usize::from(c))
            .filter(|&c| state.cand[c] & (1 << d) != 0)
            .collect();
        if places.len() < 2 || places[0] != cell {
            continue;
        }
        for &c in &places {
            Outcome::cached(cache, chain, state, kind, node(c, d, true), mark, budget)?;
        }
        let outcomes: Vec<&Outcome> = places
            .iter()
            .filter_map(|&c| cache[c * 9 + d].as_ref())
            .collect();
        let Some((mine, others)) = outcomes.split_first() else {
            continue;
        };
        for &q in &mine.order {
            if others.iter().all(|o| o.has(q)) {
                let total: u32 = outcomes.iter().map(|o| o.count(q, mark)).sum();
                offer(total, q);
            }
        }
    }
    Ok(())
}
