//! SE's later chaining producers, each a breadth of chains from every
//! candidate (its `Chaining` with multiple, dynamic or Nishio chains, and
//! its nested levels):
//!
//! - **Nishio** (7.5): chains of one digit, dynamic: a candidate whose
//!   truth (falsehood) leads to a contradiction is false (true);
//! - **multiple forcing chains** (8.0): from every digit of a cell with
//!   three candidates or more, or every place of a digit in a house, the
//!   chains' common conclusions (cell and region forcing chains);
//! - **dynamic forcing chains** (8.5): all of the above with chains that
//!   see the candidates they have removed, plus double forcing chains (a
//!   conclusion of both a candidate's truth and its falsehood);
//! - **nested levels** (9.0 to 10.5): dynamic forcing chains whose
//!   chains, each time they stall, apply further rules to their working
//!   grid (`nested.rs`).
//!
//! The chains themselves are `propagate.rs`'s. The complexity of a
//! conclusion is the number of distinct nodes among its chains'
//! ancestors, plus the complexity of each distinct nested chain among
//! them; its difficulty the producer's base plus SE's length rise.
//!
//! The rater runs on the puzzle's canonical form, so the order of the
//! scan (cells, then digits, in reading order) is the same for every
//! isomorph; among the conclusions of least (difficulty, complexity,
//! kind) it applies the first found, as SE does.

use std::cell::Cell;

use smallvec::SmallVec;

use super::chains::{UnarySpace, length_tenths};
use super::graph::{
    CELL_CAUSE, Cache, Graph, Marks, NO_CAUSE, NODE_WORDS, Nested, NodeBits, Outcome, candidate,
    houses, node,
};
use super::propagate::{Chain, Kind};
use super::reach::{Forced, StaticReach};
use super::state::{Found, HOUSE_CELLS, HOUSES, State, bits, cells_of, holders};
use super::{Budget, Exhausted, Technique};

/// A conclusion's sort key, as SE sorts chaining hints: difficulty in
/// tenths, complexity, and the kind (double 1, cell 5, region 6,
/// contradiction 7).
pub(super) type Key = (u16, u32, u8);

/// SE's kinds of chaining hint, which break ties of difficulty and
/// complexity in this order.
pub(super) const DOUBLE: u8 = 1;
pub(super) const CELL: u8 = 5;
pub(super) const REGION: u8 = 6;
pub(super) const CONTRADICTION: u8 = 7;

/// One chain a conclusion rests on: the chain's graph, the node it
/// concludes, and the cause SE gives its assumption.
pub(super) struct Source<'a> {
    pub(super) graph: &'a Graph,
    pub(super) node: usize,
    pub(super) start: u8,
}

/// Where a producer's conclusions go.
pub(super) trait Sink {
    /// The most complexity a conclusion `target` may have and still be
    /// kept, or `None` if it would not be kept whatever its complexity:
    /// a conclusion past it is not offered.
    fn most(&self, _target: usize) -> Option<u32> {
        Some(u32::MAX)
    }

    /// The conclusion `target` (a node) with its key, from `sources`. A
    /// conclusion that removes nothing is not kept (and static region and
    /// cell chains that could conclude only such nodes are not followed:
    /// see [`scan`]).
    fn offer(&mut self, key: Key, target: usize, sources: &[Source], marks: &mut Marks);

    /// Whether some conclusion of the region forcing chains of digit `d`
    /// in `house` could be kept; if not, they are not followed. Asked of
    /// static chains only.
    fn wants_region(&self, _house: usize, _d: usize) -> bool {
        true
    }

    /// The same for the cell forcing chains of `cell`.
    fn wants_cell(&self, _cell: usize) -> bool {
        true
    }
}

/// The complexity of a conclusion from `sources`: the ancestors of each,
/// and each distinct nested chain among them once; `None` once it passes
/// `most` (the count stops there).
fn complexity(
    sources: &[Source],
    most: u32,
    marks: &mut Marks,
    nests: &mut Vec<Nested>,
) -> Option<u32> {
    nests.clear();
    let mut flat = 0u32;
    for s in sources {
        // `flat <= most` here: a count past `most` has returned.
        flat += s.graph.count_within(s.node, most - flat, marks, nests);
        if flat > most {
            return None;
        }
    }
    let total = flat + nests.iter().map(|n| n.complexity).sum::<u32>();
    (total <= most).then_some(total)
}

/// The first conclusion of least key.
struct First<'s> {
    state: &'s State,
    key: Option<Key>,
    cell: usize,
    elim: u16,
}

/// What a conclusion removes in `state`: a true node its cell's other
/// candidates, a false node its own.
pub(super) fn removal(state: &State, target: usize) -> (usize, u16) {
    let (cell, d) = candidate(target);
    let elim = if target % 2 == 1 {
        state.cand[cell] & !(1 << d)
    } else {
        state.cand[cell] & (1 << d)
    };
    (cell, elim)
}

impl Sink for First<'_> {
    /// A conclusion is kept only when it removes something and its key
    /// is below the least so far: the difficulty never falls as the
    /// complexity grows, so its complexity is at most the least key's.
    fn most(&self, target: usize) -> Option<u32> {
        if removal(self.state, target).1 == 0 {
            return None;
        }
        Some(self.key.map_or(u32::MAX, |(_, complexity, _)| complexity))
    }

    fn offer(&mut self, key: Key, target: usize, _: &[Source], _: &mut Marks) {
        let (cell, elim) = removal(self.state, target);
        if elim == 0 || self.key.is_some_and(|k| key >= k) {
            return;
        }
        (self.key, self.cell, self.elim) = (Some(key), cell, elim);
    }
}

/// One of SE's later chaining producers; see the module docs.
#[derive(Clone, Copy)]
pub(super) enum Producer {
    Nishio,
    Multiple,
    Dynamic,
    /// Dynamic forcing chains at SE's nesting `level` 1 to 4 (at 4, with
    /// nested dynamic chains of level `nesting`).
    Nested {
        level: u8,
        nesting: u8,
    },
}

impl Producer {
    /// The producer's chains and base difficulty in tenths.
    pub(super) fn kind(self) -> (Kind, u16) {
        let kind = |y, dynamic, level, nesting| Kind {
            y,
            dynamic,
            level,
            nesting,
        };
        match self {
            Producer::Nishio => (kind(false, true, 0, 0), 75),
            Producer::Multiple => (kind(true, false, 0, 0), 80),
            Producer::Dynamic => (kind(true, true, 0, 0), 85),
            // SE: 8.5 + 0.5 at level 1, then 9.5 + 0.5 per level past 2.
            Producer::Nested { level, nesting } => (
                kind(true, true, level, nesting),
                match level {
                    0 => 85,
                    1 => 90,
                    l => 95 + 5 * u16::from(l.min(4) - 2),
                },
            ),
        }
    }

    /// The technique of the producer's steps.
    pub(super) fn technique(self) -> Technique {
        match self {
            Producer::Nishio => Technique::NishioForcingChain,
            Producer::Multiple => Technique::MultipleForcingChain,
            Producer::Dynamic | Producer::Nested { level: 0, .. } => Technique::DynamicForcingChain,
            Producer::Nested { level: 1, .. } => Technique::DynamicForcingChainPlus,
            Producer::Nested { level: 2, .. } => Technique::NestedForcingChain,
            Producer::Nested { level: 3, .. } => Technique::NestedMultipleForcingChain,
            Producer::Nested { nesting: 0, .. } => Technique::NestedDynamicForcingChain,
            Producer::Nested { .. } => Technique::NestedDynamicForcingChainPlus,
        }
    }
}

/// Applies the first conclusion of least key of `producer`, if any: its
/// technique and difficulty. Nishio looks only from the candidates of
/// `digits` (see [`scan`]); the others from every candidate. Multiple
/// forcing chains are read from searches by layers where those tell the
/// same (`multiple.rs`), and run on the engine where not.
#[inline(never)]
pub(super) fn chaining(
    state: &State,
    producer: Producer,
    found: &mut Found,
    budget: &mut Budget,
    space: &mut Scratch,
    digits: u16,
    solution: Option<&[u8; 81]>,
) -> Result<Option<(Technique, u16)>, Exhausted> {
    let mut first = First {
        state,
        key: None,
        cell: 0,
        elim: 0,
    };
    if let Producer::Multiple = producer
        && let Some(easiest) = super::multiple::easiest(state, budget, space)?
    {
        if let Some((key, cell, elim)) = easiest {
            (first.key, first.cell, first.elim) = (Some(key), cell, elim);
        }
    } else {
        scan(state, producer, &mut first, budget, space, digits, solution)?;
    }
    Ok(first.key.map(|(tenths, _, _)| {
        found.eliminate(state, first.cell, first.elim);
        (producer.technique(), tenths)
    }))
}

/// The first conclusion of least key of `producer` as the engine's scan
/// finds it: its key, cell and candidates removed.
#[cfg(test)]
pub(super) fn engine_first(
    state: &State,
    producer: Producer,
    space: &mut Scratch,
) -> Option<super::multiple::Conclusion> {
    let mut first = First {
        state,
        key: None,
        cell: 0,
        elim: 0,
    };
    let mut free = Budget { left: u64::MAX };
    scan(state, producer, &mut first, &mut free, space, 0x1FF, None).ok()?;
    first.key.map(|key| (key, first.cell, first.elim))
}

/// The space a producer call works in, kept between calls: its chain,
/// the chains from each candidate assumed true, and the like.
pub(super) struct Scratch {
    pub(super) chain: Chain,
    cache: Cache,
    /// The chains from the solution's candidates assumed false, where
    /// the solution guides the scan (see [`scan`]).
    off_cache: Cache,
    off: Outcome,
    pub(super) marks: Marks,
    pub(super) nests: Vec<Nested>,
    /// For the multiple forcing chains of the ladder: their searches.
    pub(super) layers: super::multiple::Layers,
    /// For nested forcing chains: which reach their target.
    pub(super) reach: Forced,
    /// For the unary chaining: its graphs and searches.
    pub(super) unary: UnarySpace,
    /// For the multiple forcing chains of the ladder: the graph of links.
    pub(super) graph: super::chains::Graph,
    /// For static chains: what each candidate's chain can find.
    pub(super) statics: StaticReach,
}

thread_local! {
    /// Each thread's space for the chaining producers, kept from one
    /// rating to the next. The chains from every candidate fill megabytes;
    /// made afresh for each producer call, that space cost more in the
    /// allocator and in page faults than the chains did.
    static SPACE: Cell<Option<Box<Scratch>>> = const { Cell::new(None) };
}

/// Runs `f` with this thread's chaining space (made on first use). `f`
/// has it to itself: a nested call would get a fresh one.
pub(super) fn with_space<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut space = SPACE.take().unwrap_or_else(|| Box::new(Scratch::new()));
    let result = f(&mut space);
    SPACE.set(Some(space));
    result
}

impl Scratch {
    pub(super) fn new() -> Scratch {
        Scratch {
            chain: Chain::new(),
            cache: Cache::new(),
            off_cache: Cache::new(),
            off: Outcome::new(),
            marks: Marks::new(),
            nests: Vec::new(),
            layers: super::multiple::Layers::new(),
            reach: Forced::new(),
            unary: UnarySpace::new(),
            graph: super::chains::Graph::empty(),
            statics: StaticReach::new(),
        }
    }
}

/// One producer call.
struct Scan<'a, S: Sink> {
    state: &'a State,
    kind: Kind,
    base: u16,
    sink: &'a mut S,
    space: &'a mut Scratch,
    /// The only solution of `state`, when known.
    solution: Option<&'a [u8; 81]>,
    /// With the solution, for dynamic cell and region chains: the nodes
    /// that hold in it (see [`scan`]).
    truths: Option<NodeBits>,
    /// Where each digit may go.
    holders: [u128; 9],
}

/// Offers `target` to `sink` with its key.
fn offer_from(
    base: u16,
    sink: &mut impl Sink,
    marks: &mut Marks,
    nests: &mut Vec<Nested>,
    sort: u8,
    target: usize,
    sources: &[Source],
) {
    let Some(most) = sink.most(target) else {
        return;
    };
    let Some(c) = complexity(sources, most, marks, nests) else {
        return;
    };
    sink.offer((base + length_tenths(c), c, sort), target, sources, marks);
}

/// Offers every conclusion of `producer` in `state` to `sink`, in SE's
/// scan order. Nishio's chains follow one digit, its links and the
/// removals it sees (no links inside cells): what a start finds depends
/// on its digit's candidates alone, so Nishio scans only the starts of
/// `digits` (a path passes the digits changed since Nishio last found
/// nothing; the others would find nothing again). The other producers
/// scan every start. Given the only `solution` of `state`, the chains
/// that can conclude nothing are not followed (see [`binary`]). Static
/// region and cell chains are followed only where the nodes their chains
/// can reach ([`StaticReach`], a superset of what each chain finds) share
/// one that removes something: elsewhere every node they have in common
/// removes nothing, and no sink keeps such a conclusion.
///
/// The solution also guides the cell and region chains of the nested
/// levels (from 9.0), whose chains are long. Each region (a digit's places in a house) and each cell has
/// exactly one candidate of the solution, and the chain from it true is
/// the long one: it meets no contradiction, and runs until nothing is
/// left, while the others' mostly stop soon at one. But what it is asked
/// is only which of a few nodes it finds, and with what ancestors: the
/// nodes every other chain of a region or cell of the candidate found,
/// or that the chain from it false found (double forcing), and that hold
/// in the solution (no other is found from a true assumption). So the
/// other chains run first, and the chain from a candidate of the solution
/// stops once it has found all of those ([`Chain::run_until`]); what is
/// offered is the same, in the same order.
pub(super) fn scan<S: Sink>(
    state: &State,
    producer: Producer,
    sink: &mut S,
    budget: &mut Budget,
    space: &mut Scratch,
    digits: u16,
    solution: Option<&[u8; 81]>,
) -> Result<(), Exhausted> {
    let (kind, base) = producer.kind();
    let multiple = !matches!(producer, Producer::Nishio) && (kind.dynamic || kind.y);
    let nishio = matches!(producer, Producer::Nishio);
    space.cache.begin();
    space.off_cache.begin();
    if !kind.dynamic {
        space.statics.begin(&state.cand);
    }
    // Only at the nested levels, whose chains are long enough for the
    // saving to pay for the bookkeeping (level 0's chains from the
    // solution's candidates mostly run to the end regardless).
    let guided = solution.filter(|_| kind.dynamic && !nishio && kind.level > 0);
    let mut scan = Scan {
        state,
        kind,
        base,
        sink,
        space,
        solution,
        truths: guided.map(truths),
        holders: holders(&state.cand),
    };
    if let Some(solution) = guided {
        // The chains the solution's candidates' chains wait for: from
        // every other candidate true, and from the solution's false.
        let Scratch {
            chain,
            cache,
            off_cache,
            ..
        } = &mut *scan.space;
        for cell in (0..81).filter(|&c| state.cand[c].count_ones() >= 2) {
            for d in bits(state.cand[cell]) {
                if usize::from(solution[cell]) == d + 1 {
                    off_cache.run(chain, state, kind, node(cell, d, false), budget)?;
                } else {
                    cache.run(chain, state, kind, node(cell, d, true), budget)?;
                }
            }
        }
    }
    for cell in 0..81 {
        let n = state.cand[cell].count_ones();
        if n < 2 || (!kind.dynamic && n < 3) {
            continue;
        }
        for d in bits(state.cand[cell]) {
            if nishio && digits & (1 << d) == 0 {
                continue;
            }
            if kind.dynamic {
                // Static chains' own conclusions are the regions' and the
                // cells' (below, which run the chains they need): their
                // chain from a candidate false would serve only
                // contradictions and double forcing, which static chains
                // do not look for (SE follows it all the same, and drops
                // it).
                binary(&mut scan, cell, d, nishio, budget)?;
            }
            if !nishio {
                region_chainings(&mut scan, cell, d, budget)?;
            }
        }
        if !nishio && (n == 2 || multiple) {
            if !kind.dynamic {
                if !scan.sink.wants_cell(cell)
                    || !scan
                        .space
                        .statics
                        .share_removal(bits(state.cand[cell]).map(|d| (cell, d)))
                {
                    continue;
                }
                let Scratch { chain, cache, .. } = &mut *scan.space;
                for d in bits(state.cand[cell]) {
                    cache.run(chain, state, kind, node(cell, d, true), budget)?;
                }
            }
            cell_chaining(&mut scan, cell);
        }
    }
    Ok(())
}

/// The dynamic chains from `d` in `cell` assumed true and false:
/// contradictions, and for cells of three candidates or more, double
/// forcing chains.
///
/// A chain from an assumption that holds in the solution finds only
/// nodes that hold in it, never a contradiction. So with the solution
/// known, a chain that could serve only a contradiction is not followed
/// where its assumption holds: Nishio's from the solution's digit
/// assumed true, and (Nishio's, and a bivalue cell's, which serve no
/// double forcing) from another digit assumed false. What is offered is
/// the same.
fn binary<S: Sink>(
    scan: &mut Scan<S>,
    cell: usize,
    d: usize,
    nishio: bool,
    budget: &mut Budget,
) -> Result<(), Exhausted> {
    let (state, kind, base) = (scan.state, scan.kind, scan.base);
    let (p_on, p_off) = (node(cell, d, true), node(cell, d, false));
    let double = !nishio && state.cand[cell].count_ones() >= 3;
    // Whether `d` is the cell's solution digit, when known.
    let truth = scan.solution.map(|s| usize::from(s[cell]) == d + 1);
    debug_assert!(kind.dynamic, "static chains look for no contradiction");
    let Scratch { chain, off, .. } = &mut *scan.space;
    // Nishio's chain from the candidate true serves only a
    // contradiction; the others' serve region and cell chains too.
    let on_runs = !nishio || truth != Some(true);
    let off_runs = double || truth != Some(false);
    // Guided, the chain from the solution's candidate false has run.
    let off_kept = scan.truths.is_some() && truth == Some(true);
    if off_runs && !off_kept {
        let absurd = chain.run(state, kind, p_off, budget)?;
        off.take(chain, absurd);
    }
    if on_runs {
        ensure_on(scan, cell, d, budget)?;
    }
    let Scratch {
        cache,
        off_cache,
        off,
        marks,
        nests,
        ..
    } = &mut *scan.space;
    let on = if on_runs { cache.get(p_on) } else { None };
    let off = match (off_runs, off_kept) {
        (false, _) => None,
        (true, true) => off_cache.get(p_off),
        (true, false) => Some(&*off),
    };
    let sink = &mut *scan.sink;
    let outcomes = [(on, p_off), (off, p_on)];
    for (outcome, target) in outcomes {
        let Some(outcome) = outcome else {
            continue;
        };
        if let Some(a) = outcome.absurd {
            let g = &outcome.graph;
            let sources = [
                Source {
                    graph: g,
                    node: a.on,
                    start: NO_CAUSE,
                },
                Source {
                    graph: g,
                    node: a.off,
                    start: NO_CAUSE,
                },
            ];
            offer_from(base, sink, marks, nests, CONTRADICTION, target, &sources);
        }
    }
    if let (true, Some(on), Some(off)) = (double, on, off) {
        // Double forcing: true and false lead to the same node.
        for &q in &on.graph.order {
            if q != p_on && off.graph.has(q) {
                let sources = [
                    Source {
                        graph: &on.graph,
                        node: q,
                        start: NO_CAUSE,
                    },
                    Source {
                        graph: &off.graph,
                        node: q,
                        start: NO_CAUSE,
                    },
                ];
                offer_from(base, sink, marks, nests, DOUBLE, q, &sources);
            }
        }
    }
    Ok(())
}

/// Runs the chain from `d` in `cell` true into the cache, unless it has
/// run. Guided by the solution (see [`scan`]), the chain from the
/// solution's candidate runs only until it has found what its regions,
/// its cell and its double forcing ask of it.
fn ensure_on<S: Sink>(
    scan: &mut Scan<S>,
    cell: usize,
    d: usize,
    budget: &mut Budget,
) -> Result<(), Exhausted> {
    let (state, kind) = (scan.state, scan.kind);
    let start = node(cell, d, true);
    let Scratch {
        chain,
        cache,
        off_cache,
        ..
    } = &mut *scan.space;
    if cache.get(start).is_some() {
        return Ok(());
    }
    match (scan.truths, scan.solution) {
        (Some(truths), Some(solution)) if usize::from(solution[cell]) == d + 1 => {
            let asked = {
                let mut asked = [0u64; NODE_WORDS];
                let mut ask = |outcomes: &[&Outcome]| {
                    if outcomes.is_empty() {
                        return;
                    }
                    for (a, c) in asked.iter_mut().zip(common_nodes(outcomes)) {
                        *a |= c;
                    }
                };
                // Double forcing, in a cell of three candidates or more.
                if state.cand[cell].count_ones() >= 3
                    && let Some(off) = off_cache.get(node(cell, d, false))
                {
                    ask(&[off]);
                }
                // The other places of each region, and the cell's other
                // candidates (their chains have run).
                for house in houses(cell) {
                    let places: SmallVec<[&Outcome; 9]> = HOUSES[house]
                        .iter()
                        .map(|&c| usize::from(c))
                        .filter(|&c| c != cell && state.cand[c] & (1 << d) != 0)
                        .filter_map(|c| cache.get(node(c, d, true)))
                        .collect();
                    ask(&places);
                }
                let digits: SmallVec<[&Outcome; 9]> = bits(state.cand[cell] & !(1 << d))
                    .filter_map(|e| cache.get(node(cell, e, true)))
                    .collect();
                ask(&digits);
                for (a, t) in asked.iter_mut().zip(truths) {
                    *a &= t;
                }
                asked
            };
            cache.run_with(start, |outcome| {
                let absurd = chain.run_until(state, kind, start, budget, &asked)?;
                outcome.take(chain, absurd);
                Ok(())
            })
        }
        _ => cache.run(chain, state, kind, start, budget),
    }
}

/// The nodes that hold in `solution`: each cell's digit true, its other
/// digits false.
fn truths(solution: &[u8; 81]) -> NodeBits {
    let mut set = [0u64; NODE_WORDS];
    for (cell, &v) in solution.iter().enumerate() {
        for d in 0..9 {
            let n = node(cell, d, usize::from(v) == d + 1);
            set[n / 64] |= 1 << (n % 64);
        }
    }
    set
}

/// The nodes every one of `outcomes`' chains found, as a set (none for
/// no outcome).
fn common_nodes(outcomes: &[&Outcome]) -> NodeBits {
    let mut common = [0u64; NODE_WORDS];
    if let Some((first, rest)) = outcomes.split_first() {
        common.copy_from_slice(first.graph.seen());
        for o in rest {
            common
                .iter_mut()
                .zip(o.graph.seen())
                .for_each(|(a, b)| *a &= b);
        }
    }
    common
}

/// SE's cell forcing chains: the nodes the chains from every digit of
/// `cell` reach (each run by [`binary`]).
fn cell_chaining<S: Sink>(scan: &mut Scan<S>, cell: usize) {
    let Scratch {
        cache,
        marks,
        nests,
        ..
    } = &mut *scan.space;
    let outcomes: SmallVec<[&Outcome; 9]> = bits(scan.state.cand[cell])
        .filter_map(|d| cache.get(node(cell, d, true)))
        .collect();
    let common = common_nodes(&outcomes);
    let mut sources: SmallVec<[Source; 9]> = SmallVec::new();
    for (w, &word) in common.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            let q = w * 64 + word.trailing_zeros() as usize;
            word &= word - 1;
            sources.clear();
            sources.extend(outcomes.iter().map(|o| Source {
                graph: &o.graph,
                node: q,
                start: CELL_CAUSE,
            }));
            offer_from(scan.base, &mut *scan.sink, marks, nests, CELL, q, &sources);
        }
    }
}

/// SE's region forcing chains from the digit `d` of `cell`: in each house
/// of the cell where `d` has two places (or more, for multiple chains)
/// and `cell` is the first, the nodes every place's chain reaches.
#[inline(never)]
fn region_chainings<S: Sink>(
    scan: &mut Scan<S>,
    cell: usize,
    d: usize,
    budget: &mut Budget,
) -> Result<(), Exhausted> {
    let kind = scan.kind;
    for house in houses(cell) {
        // A house's cells are in increasing order: `cell` is the first
        // place when no place has a lower number.
        let held = HOUSE_CELLS[house] & scan.holders[d];
        if held.count_ones() < 2 || held.trailing_zeros() as usize != cell {
            continue;
        }
        let places: SmallVec<[usize; 9]> = cells_of(held).collect();
        if !kind.dynamic
            && (!scan.sink.wants_region(house, d)
                || !scan
                    .space
                    .statics
                    .share_removal(places.iter().map(|&c| (c, d))))
        {
            continue;
        }
        for &c in &places {
            ensure_on(scan, c, d, budget)?;
        }
        let Scratch {
            cache,
            marks,
            nests,
            ..
        } = &mut *scan.space;
        let outcomes: SmallVec<[&Outcome; 9]> = places
            .iter()
            .filter_map(|&c| cache.get(node(c, d, true)))
            .collect();
        let Some(mine) = outcomes.first() else {
            continue;
        };
        // The nodes every place's chain finds, visited in the order this
        // cell's chain found them.
        let common = common_nodes(&outcomes);
        if common.iter().all(|&w| w == 0) {
            continue;
        }
        let mut sources: SmallVec<[Source; 9]> = SmallVec::new();
        for &q in &mine.graph.order {
            if common[q / 64] & (1 << (q % 64)) != 0 {
                sources.clear();
                sources.extend(outcomes.iter().map(|o| Source {
                    graph: &o.graph,
                    node: q,
                    start: house as u8,
                }));
                offer_from(
                    scan.base,
                    &mut *scan.sink,
                    marks,
                    nests,
                    REGION,
                    q,
                    &sources,
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{for_each_state_on_path, hard_puzzles};
    use super::*;
    use crate::solver::{Grid, Mode, solve};

    /// Every conclusion offered, in order.
    struct All(Vec<(Key, usize)>);

    impl Sink for All {
        fn offer(&mut self, key: Key, target: usize, _: &[Source], _: &mut Marks) {
            self.0.push((key, target));
        }
    }

    /// At every state of the rated paths of hard puzzles and of Golden
    /// Nugget, Nishio, the dynamic forcing chains and their first nested
    /// level offer the same conclusions, in the same order, whether the
    /// solution spares them chains and stops others early, or not.
    #[test]
    fn knowing_the_solution_changes_no_conclusion() {
        let nugget = Grid::parse(
            ".......39.....1..5..3.5.8....8.9...6.7...2...1..4.......9.8..5..2....6..4..7.....",
        )
        .unwrap();
        let producers = [
            Producer::Nishio,
            Producer::Dynamic,
            Producer::Nested {
                level: 1,
                nesting: 0,
            },
        ];
        let (mut checked, mut found) = ([0; 3], [0; 3]);
        let mut space = Scratch::new();
        for grid in hard_puzzles().iter().step_by(2).chain([&nugget]) {
            let form = crate::solver::canonical(grid);
            let solution = *solve(&form, Mode::Unique, None).solution.unwrap().cells();
            for_each_state_on_path(&form, |state, _| {
                for (i, producer) in producers.into_iter().enumerate() {
                    let mut offers = |solution| {
                        let mut all = All(Vec::new());
                        let mut free = Budget { left: u64::MAX };
                        scan(
                            state, producer, &mut all, &mut free, &mut space, 0x1FF, solution,
                        )
                        .unwrap();
                        all.0
                    };
                    let (told, blind) = (offers(Some(&solution)), offers(None));
                    assert_eq!(told, blind, "{form}");
                    checked[i] += 1;
                    found[i] += usize::from(!told.is_empty());
                }
            });
        }
        assert!(checked.iter().all(|&n| n > 300), "{checked:?}");
        assert!(found.iter().all(|&n| n > 50), "{found:?}");
    }
}
