//! What a chain found: its nodes, each with the parents that found it
//! first, the cause of each true node and the nested chains some nodes
//! carry ([`Graph`]); the outcomes a producer keeps of the chains from
//! each candidate ([`Cache`]); and how the complexity and SE's rule
//! parents of a conclusion are read from them.
//!
//! Nodes are numbered `(cell * 9 + digit) * 2 + truth`.

use super::propagate::{Absurd, Chain, Kind};
use super::state::{HOUSE_CELLS, HOUSES_OF, State, bits, cells_of};
use super::{Budget, Exhausted};

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

/// A node's parents: `len` entries of a pool from `start`; and, for a
/// true node, its cause.
#[derive(Clone, Copy)]
pub(super) struct Parents {
    pub(super) start: u32,
    pub(super) len: u16,
    pub(super) cause: u8,
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

/// Words of a set of nodes, bit per node.
pub(super) const NODE_WORDS: usize = NODES.div_ceil(64);

/// A set of nodes, bit per node.
pub(super) type NodeBits = [u64; NODE_WORDS];

/// Words of a chain's set of nodes: a power of two, so that a node's
/// word, masked to it, is in bounds without a check.
const SEEN_WORDS: usize = NODES.div_ceil(64).next_power_of_two();

/// The nodes a chain found, with their parents, causes and nested chains.
pub(super) struct Graph {
    /// Bit per node: found (the words past `NODES` stay clear).
    seen: [u64; SEEN_WORDS],
    pub(super) parents: Vec<Parents>,
    pub(super) pool: Vec<u16>,
    /// Nodes found, in order.
    pub(super) order: Vec<usize>,
    /// The nodes that carry a nested chain, with it.
    pub(super) nests: Vec<(usize, Nested)>,
}

impl Graph {
    pub(super) fn new() -> Graph {
        Graph {
            seen: [0; SEEN_WORDS],
            parents: vec![Parents::default(); NODES],
            pool: Vec::with_capacity(4 * NODES),
            order: Vec::with_capacity(NODES),
            nests: Vec::new(),
        }
    }

    pub(super) fn clear(&mut self) {
        // The whole set costs less to clear than the nodes found, word by
        // word, once a chain has found more than a few.
        self.seen = [0; SEEN_WORDS];
        self.order.clear();
        self.pool.clear();
        self.nests.clear();
    }

    pub(super) fn has(&self, n: usize) -> bool {
        self.seen[n / 64 % SEEN_WORDS] & (1 << (n % 64)) != 0
    }

    /// Whether `n` was found, and whether its conjugate was: one word
    /// holds both.
    pub(super) fn has_and_conjugate(&self, n: usize) -> (bool, bool) {
        let word = self.seen[n / 64 % SEEN_WORDS];
        (word >> (n % 64) & 1 != 0, word >> ((n ^ 1) % 64) & 1 != 0)
    }

    /// The nodes found, as a set (bit per node, `NODES` bits).
    pub(super) fn seen(&self) -> &[u64] {
        &self.seen[..NODE_WORDS]
    }

    pub(super) fn add(&mut self, n: usize, parents: Parents) {
        self.seen[n / 64 % SEEN_WORDS] |= 1 << (n % 64);
        self.parents[n] = parents;
        self.order.push(n);
    }

    pub(super) fn pooled(&mut self, list: &[u16], cause: u8) -> Parents {
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

    /// Visits `n` and its ancestors once each, until `visit` says `false`.
    /// `n` is a node the chain found, or the false half of the
    /// contradiction it ran into.
    fn walk(&self, n: usize, marks: &mut Marks, mut visit: impl FnMut(usize) -> bool) {
        let Marks { bits, todo } = marks;
        bits.iter_mut().for_each(|w| *w = 0);
        todo.clear();
        todo.push(n);
        while let Some(m) = todo.pop() {
            if bits[m / 64] & (1 << (m % 64)) != 0 {
                continue;
            }
            bits[m / 64] |= 1 << (m % 64);
            if !visit(m) {
                return;
            }
            todo.extend(self.parents_of(m).iter().map(|&q| usize::from(q)));
        }
    }

    /// The number of distinct nodes among `n` and its ancestors; the
    /// nested chains among them go to `nests` (once each).
    pub(super) fn count(&self, n: usize, marks: &mut Marks, nests: &mut Vec<Nested>) -> u32 {
        self.count_within(n, u32::MAX, marks, nests)
    }

    /// [`Graph::count`], except that the walk stops once the count passes
    /// `most`: then the result is `most + 1` and `nests` is partial.
    pub(super) fn count_within(
        &self,
        n: usize,
        most: u32,
        marks: &mut Marks,
        nests: &mut Vec<Nested>,
    ) -> u32 {
        let mut count = 0;
        self.walk(n, marks, |m| {
            count += 1;
            if let Some(&(_, nest)) = self.nests.iter().find(|&&(at, _)| at == m)
                && !nests.contains(&nest)
            {
                nests.push(nest);
            }
            count <= most
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
                return true;
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
            true
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

    /// `self` becomes the outcome of `chain`'s last run: the two swap
    /// graphs (no copy), and the chain's next run clears the one it gets.
    pub(super) fn take(&mut self, chain: &mut Chain, absurd: Option<Absurd>) {
        std::mem::swap(&mut self.graph, &mut chain.graph);
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
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            // The stamps would match again: clear them (once in 2^32
            // calls, for a space kept by a long-lived thread).
            self.stamp.fill(0);
            self.now = 1;
        }
    }

    /// The outcome of the chain from the true node `start`, if run.
    pub(super) fn get(&self, start: usize) -> Option<&Outcome> {
        let i = start / 2;
        match &self.outcomes[i] {
            Some(outcome) if self.stamp[i] == self.now => Some(outcome),
            _ => None,
        }
    }

    /// Runs `run` into the outcome of `start` unless it has run.
    pub(super) fn run_with(
        &mut self,
        start: usize,
        run: impl FnOnce(&mut Outcome) -> Result<(), Exhausted>,
    ) -> Result<(), Exhausted> {
        let i = start / 2;
        if self.stamp[i] != self.now || self.outcomes[i].is_none() {
            run(self.outcomes[i].get_or_insert_with(|| Box::new(Outcome::new())))?;
            self.stamp[i] = self.now;
        }
        Ok(())
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
