//! Which of SE's forcing chains (not dynamic) reach their target, before
//! any is followed. On a grid the chain does not change, the nodes a chain
//! from `n` finds are exactly those reachable from `n` in the graph of
//! links; so the graph's strongly connected components, each with the
//! set of nodes it reaches, tell at once for every candidate whether its
//! truth reaches its falsehood or its falsehood its truth. Only those
//! chains are then followed, for their parents.

use super::graph::{NODES, candidate, conjugate, node};
use super::state::{HOUSE_CELLS, HOUSES_OF, bits, cells_of};
use super::{Budget, Exhausted};

const NONE: u32 = u32::MAX;

/// The components of one grid's two graphs of links, without and with
/// links inside cells, each made when first asked for.
pub(super) struct Lazy<'a> {
    space: &'a mut [Reach; 2],
    made: [bool; 2],
}

impl<'a> Lazy<'a> {
    /// Nothing made yet, in `space`.
    pub(super) fn new(space: &'a mut [Reach; 2]) -> Lazy<'a> {
        Lazy {
            space,
            made: [false; 2],
        }
    }

    /// The graph of `cand` with links inside cells (`y`) or not, made on
    /// the first call (one unit of work per node). `cand` is the same
    /// grid on every call.
    pub(super) fn get(
        &mut self,
        cand: &[u16; 81],
        y: bool,
        budget: &mut Budget,
    ) -> Result<&Reach, Exhausted> {
        let i = usize::from(y);
        if !self.made[i] {
            self.made[i] = true;
            let nodes = self.space[i].build(cand, y);
            if !budget.spend_many(nodes as u64) {
                return Err(Exhausted);
            }
        }
        Ok(&self.space[i])
    }
}

/// The graph of links of one grid and its components, in space kept
/// between grids.
pub(super) struct Reach {
    /// Compact id of each node of the grid (`NONE` for the others).
    id: Vec<u32>,
    nodes: Vec<usize>,
    /// Successors of compact node `i`: `edges[start[i]..start[i + 1]]`.
    start: Vec<u32>,
    edges: Vec<u32>,
    index: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<u32>,
    calls: Vec<(u32, u32)>,
    scc_of: Vec<u32>,
    /// Per component, the bit set of the compact nodes it reaches, and
    /// the last component whose reach took it in.
    reach: Vec<u64>,
    merged: Vec<u32>,
    words: usize,
}

impl Reach {
    pub(super) fn new() -> Reach {
        Reach {
            id: vec![NONE; NODES],
            nodes: Vec::new(),
            start: Vec::new(),
            edges: Vec::new(),
            index: Vec::new(),
            low: Vec::new(),
            on_stack: Vec::new(),
            stack: Vec::new(),
            calls: Vec::new(),
            scc_of: Vec::new(),
            reach: Vec::new(),
            merged: Vec::new(),
            words: 0,
        }
    }

    /// Builds the graph of `cand`, with links inside cells (`y`) or not,
    /// and its components. Returns the number of nodes.
    pub(super) fn build(&mut self, cand: &[u16; 81], y: bool) -> usize {
        for &n in &self.nodes {
            self.id[n] = NONE;
        }
        self.nodes.clear();
        let mut holders = [0u128; 9];
        for (cell, &c) in cand.iter().enumerate() {
            for d in bits(c) {
                holders[d] |= 1 << cell;
                for on in [false, true] {
                    self.id[node(cell, d, on)] = self.nodes.len() as u32;
                    self.nodes.push(node(cell, d, on));
                }
            }
        }
        self.start.clear();
        self.edges.clear();
        for i in 0..self.nodes.len() {
            self.start.push(self.edges.len() as u32);
            self.link(cand, &holders, y, self.nodes[i]);
        }
        self.start.push(self.edges.len() as u32);
        self.components();
        self.nodes.len()
    }

    /// Whether the chain from `n` reaches its conjugate.
    pub(super) fn reaches_conjugate(&self, n: usize) -> bool {
        self.reaches(n, conjugate(n))
    }

    /// Whether the chain from `from` reaches `to` (false for a node not
    /// of the grid built).
    pub(super) fn reaches(&self, from: usize, to: usize) -> bool {
        let (i, target) = (self.id[from], self.id[to]);
        if i == NONE || target == NONE {
            return false;
        }
        let row = self.scc_of[i as usize] as usize * self.words;
        let t = target as usize;
        self.reach[row + t / 64] & (1 << (t % 64)) != 0
    }

    /// The links from `n`: from a true node, the cell's other digits
    /// (with `y`) and the digit's other places in its houses; from a false
    /// node, a bivalue cell's other digit (with `y`) and the digit's only
    /// other place in a house.
    fn link(&mut self, cand: &[u16; 81], holders: &[u128; 9], y: bool, n: usize) {
        let (cell, d) = candidate(n);
        let on = n % 2 == 1;
        if y && (on || cand[cell].count_ones() == 2) {
            for e in bits(cand[cell] & !(1 << d)) {
                self.edges.push(self.id[node(cell, e, !on)]);
            }
        }
        for h in HOUSES_OF[cell] {
            let others = HOUSE_CELLS[usize::from(h)] & holders[d] & !(1u128 << cell);
            if on || others.count_ones() == 1 {
                for c in cells_of(others) {
                    self.edges.push(self.id[node(c, d, !on)]);
                }
            }
        }
    }

    /// Tarjan's strongly connected components, depth first without
    /// recursion; each component's reach is made when it is found, after
    /// every component it reaches.
    fn components(&mut self) {
        let n = self.nodes.len();
        self.words = n.div_ceil(64);
        self.index.clear();
        self.index.resize(n, NONE);
        self.low.clear();
        self.low.resize(n, 0);
        self.on_stack.clear();
        self.on_stack.resize(n, false);
        self.scc_of.clear();
        self.scc_of.resize(n, NONE);
        self.reach.clear();
        self.merged.clear();
        let mut next = 0u32;
        for root in 0..n as u32 {
            if self.index[root as usize] != NONE {
                continue;
            }
            self.calls.push((root, self.start[root as usize]));
            self.enter(root, &mut next);
            while let Some(&(v, at)) = self.calls.last() {
                let vi = v as usize;
                if at < self.start[vi + 1] {
                    if let Some(top) = self.calls.last_mut() {
                        top.1 += 1;
                    }
                    let w = self.edges[at as usize];
                    if self.index[w as usize] == NONE {
                        self.calls.push((w, self.start[w as usize]));
                        self.enter(w, &mut next);
                    } else if self.on_stack[w as usize] {
                        self.low[vi] = self.low[vi].min(self.index[w as usize]);
                    }
                    continue;
                }
                self.calls.pop();
                if let Some(&(parent, _)) = self.calls.last() {
                    let p = parent as usize;
                    self.low[p] = self.low[p].min(self.low[vi]);
                }
                if self.low[vi] == self.index[vi] {
                    self.close(v);
                }
            }
        }
    }

    fn enter(&mut self, v: u32, next: &mut u32) {
        let vi = v as usize;
        self.index[vi] = *next;
        self.low[vi] = *next;
        *next += 1;
        self.stack.push(v);
        self.on_stack[vi] = true;
    }

    /// Pops the component rooted at `v` and makes its reach.
    fn close(&mut self, v: u32) {
        let words = self.words;
        let c = self.reach.len() / words;
        self.reach.resize(self.reach.len() + words, 0);
        self.merged.push(NONE);
        let first = self.stack.iter().rposition(|&w| w == v).unwrap_or(0);
        for k in first..self.stack.len() {
            let w = self.stack[k] as usize;
            self.on_stack[w] = false;
            self.scc_of[w] = c as u32;
        }
        for k in first..self.stack.len() {
            let w = self.stack[k] as usize;
            self.reach[c * words + w / 64] |= 1 << (w % 64);
            for e in self.start[w]..self.start[w + 1] {
                let other = self.scc_of[self.edges[e as usize] as usize] as usize;
                if other != c && self.merged[other] != c as u32 {
                    self.merged[other] = c as u32;
                    for j in 0..words {
                        let bits = self.reach[other * words + j];
                        self.reach[c * words + j] |= bits;
                    }
                }
            }
        }
        self.stack.truncate(first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::rate::Budget;
    use crate::solver::rate::propagate::Chain;
    use crate::solver::rate::state::State;
    use crate::solver::tests::unique_puzzle;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        /// The components say exactly which forcing chains, followed one
        /// by one, reach their target: from every candidate, true and
        /// false, with and without links inside cells.
        #[test]
        fn the_components_agree_with_every_chain(grid in unique_puzzle()) {
            let state = State::new(&grid);
            let mut reach = Reach::new();
            let mut chain = Chain::new();
            let mut budget = Budget { left: u64::MAX };
            for y in [false, true] {
                reach.build(&state.cand, y);
                for cell in 0..81 {
                    for d in bits(state.cand[cell]) {
                        for start in [node(cell, d, true), node(cell, d, false)] {
                            let followed = chain.forcing(&state, y, start, &mut budget).unwrap();
                            prop_assert_eq!(reach.reaches_conjugate(start), followed, "{} {}", start, y);
                        }
                    }
                }
            }
        }
    }
}
